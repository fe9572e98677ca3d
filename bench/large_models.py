"""Models of real size, delivered as a team delivers them: the runner's time to its first
measurement against `torch.export.load` from local disk, and its peak memory against the file.

    python -m bench.large_models [--rounds 3] [--smoke]

The models (models/large.py, exported by `benchfleet export`): ResNet-50 by `oci`, pushed to
Debian's docker-registry on loopback and pulled into a fresh image store each round as a node
pulls it (localrun/images.py), and BERT-base by `url`, downloaded by the runner from an https
server on loopback behind a CA of its own (tests/model_server.py). Each round, the sides
alternating which goes first:
- baseline: a fresh process imports torch, loads the .pt2 from local disk with
  `torch.export.load`, takes `module()` and calls it twice at batch 1 (cold, then the call
  that would be measured): its wall time from start to the second call's end, and its VmHWM;
- runner: `python -m runner` as a pod runs it (config.json, no warm-up asked for, one
  measured iteration, fp32 at batch 1), the file from its source: wall time from start to its
  result line, plus the pull for `oci` (done before a pod starts); its result's peak RSS;
- transfer: the delivery alone at loopback speed, a plain https download of the file to disk
  (urllib, the same CA) for `url`, the pull and unpack for `oci`.
The goal is runner <= 1.5 x baseline + transfer: the ratio shown is (runner - transfer) /
baseline, pair by pair (median and range). Memory: the runner's peak RSS above its peak for
tiny-mlp (what torch and the runner take whatever the model), per byte of the .pt2, the goal
being at most 2.5, and the baseline's peak beside it.

`--smoke` measures tiny-cnn and tiny-transformer (committed) for one round, for the
test-suite (tests/bench/).
"""

import argparse
import hashlib
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.timing import pairing
from contract.config import ModelConfig, PhaseConfig
from contract.result import RESULT_PREFIX, OkResult, parse_result_line
from exporter.check import fp32_config
from exporter.inputs import ExampleInput, parse_input
from localrun.images import ImageMount, ImageStore
from localrun.loopback_registry import loopback_registry
from localrun.push_model import push_model
from models.large import BERT, EXPORTS, RESNET, export
from tests.model_server import ModelServer, issue_server_certificate, make_authority, serving

ROOT: Final = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
BASELINE_MODEL: Final = "tiny-mlp"
GOAL_TIME: Final = 1.5
GOAL_RSS_PER_BYTE: Final = 2.5
NO_WARMUP: Final = PhaseConfig(min_iterations=0, min_time_s=0.0, max_iterations=1, max_time_s=60)
ONE_CALL: Final = PhaseConfig(min_iterations=1, min_time_s=0.0, max_iterations=1, max_time_s=60)
CA_FILE: Final = "company-ca.pem"
LOAD_AND_CALL: Final = """
import os, sys, time, torch
shapes = [(tuple(int(s) for s in spec.split(':')[0].split(',')), spec.split(':')[1])
          for spec in sys.argv[2:]]
inputs = [torch.randn(1, *shape) if dtype == 'float32'
          else torch.randint(0, 2, (1, *shape), dtype=getattr(torch, dtype))
          for shape, dtype in shapes]
began = time.perf_counter()
module = torch.export.load(sys.argv[1]).module()
loaded = time.perf_counter() - began
with torch.inference_mode():
    module(*inputs)
    began = time.perf_counter()
    module(*inputs)
    call = time.perf_counter() - began
peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))
print(loaded, call, int(peak.split()[1]) * 1024, flush=True)
os._exit(0)
"""
"""torch's own way to a first measured call: load from disk, module(), a cold call, one more."""


@dataclass(frozen=True)
class Subject:
    """A model to deliver: its .pt2, its inputs, and how it comes (`url` or `oci`)."""

    name: str
    path: Path
    inputs: tuple[ExampleInput, ...]
    source: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_bytes: int
    load_s: float
    """The load alone: torch.export.load and module(); the runner's `load_s` (its sha256,
    archive check and, for `url`, the download too)."""
    call_s: float
    """One warm call: the baseline's second, the runner's measured iteration."""


@dataclass(frozen=True)
class Delivery:
    """Where the bench serves the models from."""

    server: ModelServer
    ca_dir: Path
    registry: str
    scratch: Path


def _input_values(name: str) -> tuple[ExampleInput, ...]:
    _, arguments = EXPORTS[name]
    return tuple(
        parse_input(value) for flag, value in itertools.pairwise(arguments) if flag == "--input"
    )


def subjects(smoke: bool, folder: Path) -> list[Subject]:
    if smoke:
        return [
            Subject("tiny-cnn", EXAMPLES / "tiny-cnn.pt2", (ExampleInput((3, 64, 64)),), "oci"),
            Subject(
                "tiny-transformer",
                EXAMPLES / "tiny-transformer.pt2",
                (ExampleInput((32, 16)),),
                "url",
            ),
        ]
    built = {name: export(name, folder) for name in (RESNET, BERT)}
    return [
        Subject(RESNET, built[RESNET].path, _input_values(RESNET), "oci"),
        Subject(BERT, built[BERT].path, _input_values(BERT), "url"),
    ]


def baseline(subject: Subject) -> Run:
    """torch.export.load from local disk and two calls, in a fresh process."""
    shapes = [f"{','.join(map(str, i.shape))}:{i.dtype}" for i in subject.inputs]
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LOAD_AND_CALL, str(subject.path), *shapes],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - began
    loaded, call, peak = done.stdout.split()[-3:]
    return Run(seconds, int(peak), float(loaded), float(call))


def runner(subject: Subject, model: ModelConfig, env: dict[str, str], folder: Path) -> Run:
    """`python -m runner` as a pod runs it: seconds from its start to its result line."""
    config = folder / "config.json"
    written = fp32_config(
        subject.name, model, subject.inputs, 1, warmup=NO_WARMUP, measure=ONE_CALL
    )
    config.write_text(written.model_dump_json(), encoding="utf-8")
    pod_env = {
        **os.environ,
        **env,
        "CONFIG_PATH": str(config),
        "JOB_COMPLETION_INDEX": "0",
        "TERMINATION_LOG": str(folder / "termination-log"),
        "TMPDIR": str(folder),
    }
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "runner"],
        cwd=ROOT,
        env=pod_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    seconds, lines = None, []
    for line in process.stdout:
        lines.append(line)
        if seconds is None and line.startswith(RESULT_PREFIX):
            seconds = time.perf_counter() - began
    process.wait()
    result = parse_result_line("".join(lines))
    if (
        seconds is None
        or not isinstance(result, OkResult)
        or result.memory is None
        or result.timings is None
    ):
        raise RuntimeError(f"the runner failed on {subject.name}: {''.join(lines)[-2000:]}")
    timings = result.timings
    return Run(seconds, result.memory.peak_rss_bytes, timings.load_s, result.latency.p50_ms / 1e3)


def delivered_run(subject: Subject, delivery: Delivery, folder: Path) -> tuple[Run, float]:
    """The runner with `subject` from its source, and the transfer's seconds alone."""
    folder.mkdir()
    if subject.source == "url":
        url = delivery.server.add(subject.path.name, subject.path.read_bytes())
        began = time.perf_counter()
        _download(url, delivery.ca_dir / CA_FILE, folder / "downloaded.pt2")
        transfer = time.perf_counter() - began
        model = ModelConfig(
            source="url", location=url, sha256=subject.sha256, ca_bundle=CA_FILE,
            size_bytes=subject.path.stat().st_size,
        )  # fmt: skip
        run = runner(subject, model, {"CA_PATH": str(delivery.ca_dir)}, folder)
        return run, transfer
    pushed = push_model(
        subject.path, f"{delivery.registry}/bench", delivery.scratch, credentials=""
    )
    began = time.perf_counter()
    mounted = ImageStore(folder / "images", credentials="").mount(
        ImageMount(pushed.pinned, "IfNotPresent", f"/oci-models/{subject.name}")
    )
    transfer = time.perf_counter() - began
    (folder / "oci").mkdir()
    (folder / "oci" / subject.name).symlink_to(mounted)
    model = ModelConfig(source="oci", location=f"{subject.name}/model.pt2", sha256=subject.sha256)
    run = runner(subject, model, {"OCI_MODEL_PATH": str(folder / "oci")}, folder)
    return Run(run.seconds + transfer, run.peak_rss_bytes, run.load_s, run.call_s), transfer


def _download(url: str, ca: Path, target: Path) -> None:
    import ssl  # noqa: PLC0415

    context = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(url, context=context) as response, target.open("wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)


def tiny_runner_peak(folder: Path) -> int:
    """The runner's peak RSS for tiny-mlp: torch's and the runner's own share."""
    subject = Subject(BASELINE_MODEL, EXAMPLES / "tiny-mlp.pt2", (ExampleInput((64,)),), "file")
    model = ModelConfig(source="file", location="tiny-mlp.pt2", sha256=subject.sha256)
    folder.mkdir()
    return runner(subject, model, {"MODEL_PATH": str(EXAMPLES)}, folder).peak_rss_bytes


def _remove(folder: Path) -> None:
    """Delete `folder`, whose unpacked image volumes are read-only as a node leaves them."""
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder)


@contextmanager
def delivering(scratch: Path) -> Iterator[Delivery]:
    """An https server behind a CA of its own and a registry, on loopback."""
    authority = make_authority(scratch / "ca", "company-ca")
    ca_dir = scratch / "ca-bundles"
    ca_dir.mkdir()
    (ca_dir / CA_FILE).write_bytes(authority.certificate.read_bytes())
    certificate = issue_server_certificate(authority, scratch / "ca")
    (scratch / "push").mkdir()
    with ExitStack() as stack:
        server = stack.enter_context(serving(*certificate))
        registry = stack.enter_context(loopback_registry(scratch / "registry"))
        yield Delivery(server, ca_dir, registry, scratch / "push")


def measure(
    subject: Subject, rounds: int, delivery: Delivery, scratch: Path
) -> tuple[list[str], int]:
    """`rounds` pairs of runner and baseline, alternating which goes first: the report lines
    and the runner's highest peak RSS."""
    pairs, loads, transfers, runs, baselines = [], [], [], [], []
    for round_ in range(rounds):
        folder = scratch / f"{subject.name}-{round_}"
        if round_ % 2:
            base = baseline(subject)
            run, transfer = delivered_run(subject, delivery, folder)
        else:
            run, transfer = delivered_run(subject, delivery, folder)
            base = baseline(subject)
        _remove(folder)  # a round leaves up to a gigabyte of downloads and unpacked volumes
        pairs.append((run.seconds - transfer, base.seconds))
        url = subject.source == "url"  # the runner's load_s holds its download
        loads.append((run.load_s - transfer * url, base.load_s))
        transfers.append(transfer)
        runs.append(run)
        baselines.append(base)
    time_ratio = pairing(subject.name, pairs)
    load_ratio = pairing(subject.name, loads)
    size = subject.path.stat().st_size
    calls = (
        statistics.median(r.call_s for r in runs),
        statistics.median(b.call_s for b in baselines),
    )
    return [
        f"{subject.name} ({subject.source}, {size / 2**20:,.0f} MiB): time to first measurement "
        f"runner {statistics.median(r.seconds for r in runs):.2f} s, torch.export.load "
        f"{time_ratio.baseline_s:.2f} s, transfer {statistics.median(transfers):.2f} s; "
        f"(runner - transfer) / load {time_ratio.ratio:.2f} [{time_ratio.ratio_low:.2f}-"
        f"{time_ratio.ratio_high:.2f}] (goal <= {GOAL_TIME})",
        f"{subject.name}: load alone, runner (less the download) {load_ratio.candidate_s:.2f} s, "
        f"torch.export.load and module() {load_ratio.baseline_s:.2f} s, ratio "
        f"{load_ratio.ratio:.2f} [{load_ratio.ratio_low:.2f}-{load_ratio.ratio_high:.2f}]; a "
        f"warm call {calls[0]:.2f} s in the runner, {calls[1]:.2f} s alone (the runner makes "
        "three calls to its first measurement: the cold first iteration, also the accuracy "
        "pass's reference, the one warm-up call, also the kernel count, and the measured one; "
        "the baseline two)",
        f"{subject.name}: peak RSS runner {max(r.peak_rss_bytes for r in runs) / 2**20:,.0f} "
        f"MiB, torch.export.load {max(b.peak_rss_bytes for b in baselines) / 2**20:,.0f} MiB",
    ], max(r.peak_rss_bytes for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.large_models", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny models, one round")
    args = parser.parse_args()
    rounds = 1 if args.smoke else args.rounds
    print(f"models of real size: time to first measurement and peak RSS, {rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="bench-large-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "models").mkdir()
        measured = subjects(args.smoke, scratch / "models")
        tiny_peak = tiny_runner_peak(scratch / "tiny")
        with delivering(scratch) as delivery:
            for subject in measured:
                lines, peak = measure(subject, rounds, delivery, scratch)
                share = (peak - tiny_peak) / subject.path.stat().st_size
                for line in lines:
                    print(line, flush=True)
                print(
                    f"{subject.name}: runner peak RSS above {BASELINE_MODEL}'s "
                    f"({tiny_peak / 2**20:,.0f} MiB) per byte of the .pt2 {share:.2f} "
                    f"(goal <= {GOAL_RSS_PER_BYTE})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
