"""`collector report` of 10,000 variants (100 targets x 100 variants) in every format.

    python -m bench.report_scale [--targets 100] [--variants 100] [--rounds 1]
                                 [--against REV] [--formats text,json,...] [--smoke]

(`--smoke`: 4 targets x 8 variants, one round, for the test-suite's tests/bench/.)

A store is filled as gather fills it: one Job per target of one workflow in one cluster,
each variant a real runner's result (bench/real_results.py: cpu-smoke's tiny-mlp, with its
samples, environment and accuracy) under the variant's identity, its latency scaled to a
made-up speed of its target and settings, its allocation recorded and priced by a copy of
the checkout's specs/clusters.yaml. The variants of a target are 5 models x 4
precision-quantizations x 5 batch sizes; the targets are the fleet's priced device types
in turn, on-demand and spot. One variant in 17 keeps the real run's flags (noisy,
contended), and int8-dynamic of one model misses its accuracy gate.

Each format is written by `collector report --format F --output FILE` in a fresh
interpreter, as a user runs it: wall time, peak RSS (the child's own, os.wait4) and the
bytes written. With `--against REV`, the same command of the code at git revision REV is
run too, pair by pair (this code, then REV's, per format and round), for the ratio of both
sides on one machine at one time; `--timeout` bounds each run (REV's HTML took over 5
minutes), a run cut off counted at the bound.

Measured 2026-12-06 on the 2-core machine shared with other agents (load average 5 to 9),
10,000 variants, one round; before: 82818ce, after: this bench's commit and the report's
changes with it (docs/report.md, "Scale"):

    format       before s  after s   before peak MiB  after peak MiB  before MB  after MB
    text             23.6     23.4               588             589       18.2      18.2
    markdown         18.2     25.2               574             574       15.4      15.4
    csv              18.6     16.2               462             462        8.0       8.1
    json            109.1     35.8             3,547             646      396.3      57.9
    html           >300.0     27.4                 -             766          -      31.0

Text and Markdown are written by the same code on both sides (CSV but for its new last
column): their differences are the load. The first run, on a quieter machine (load 2 to
5), before: text 9.1 s, JSON 110.8 s and 3,541 MiB, HTML cut off at 480 s.
"""

import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.real_results import measured
from contract.accuracy import Accuracy
from contract.allocation import Allocation, Capacity
from contract.layout import FLEET_FILE
from contract.records import JobIdentity, StoredVariant
from contract.result import MedianInterval, OkResult
from contract.samples import encode
from contract.variant import VariantRef
from store.database import open_store

ROOT: Final = Path(__file__).resolve().parent.parent
WORKFLOW: Final = "report-scale"
CLUSTER: Final = "us-east"
FINISHED: Final = "2026-12-03T06:00:00Z"
FORMATS: Final = ("text", "markdown", "csv", "json", "html")
MODELS: Final = ("tiny-cnn", "tiny-mlp", "tiny-transformer", "resnet50", "bert-base")
KINDS: Final = (("fp32", "none"), ("fp16", "none"), ("bf16", "none"), ("fp32", "int8-dynamic"))
BATCHES: Final = (1, 2, 4, 8, 16)
DEVICES: Final = ("nvidia-a100", "nvidia-v100", "nvidia-t4", "cpu")
"""The device types specs/clusters.yaml prices in us-east."""
FAILING: Final = ("bert-base", "int8-dynamic")
"""The model and quantization whose variants miss their accuracy gate."""


@dataclass(frozen=True)
class Shape:
    """How many targets, and how many variants each (at most 100: the sweep's cells)."""

    targets: int
    variants: int


def _cells(count: int) -> list[tuple[str, str, str, int]]:
    cells = [(m, p, q, b) for m in MODELS for p, q in KINDS for b in BATCHES]
    if count > len(cells):
        raise SystemExit(f"at most {len(cells)} variants a target")
    return cells[:count]


def _scaled(template: OkResult, factor: float) -> dict[str, object]:
    """The template's latency, samples and interval, every duration times `factor`."""
    latency = template.latency
    fields = {
        name: value * factor if name.endswith("_ms") else value
        for name, value in latency.model_dump().items()
        if name != "p50_interval"
    }
    interval = latency.p50_interval
    if interval is not None:
        fields["p50_interval"] = MedianInterval(
            low_ms=interval.low_ms * factor,
            high_ms=interval.high_ms * factor,
            log_se=interval.log_se,
        )
    update: dict[str, object] = {"latency": latency.model_copy(update=fields)}
    if template.samples is not None:
        update["samples"] = encode([round(ns * factor) for ns in template.samples.durations_ns()])
    return update


def _variant(
    template: OkResult, target: str, index: int, cell: tuple[str, str, str, int], speed: float
) -> StoredVariant:
    model, precision, quantization, batch = cell
    ref = VariantRef(
        index=index,
        id=f"v{index:04d}{model[:4]}{precision}{quantization[:4]}{batch}",
        model=model,
        precision=precision,
        quantization=quantization,
        batch_size=batch,
    )
    factor = (
        speed
        * (1 + MODELS.index(model))
        * (1, 0.55, 0.6, 0.7)[KINDS.index((precision, quantization))]
        * (0.6 + 0.4 * batch)
    )
    update = _scaled(template, factor) | {"target": target, "workflow": WORKFLOW, "variant": ref}
    validity = template.validity
    if index % 17 and validity is not None:
        update["validity"] = validity.model_copy(
            update={"noisy": False, "contended": False, "reasons": []}
        )
    if (model, quantization) == FAILING and template.accuracy is not None:
        update["accuracy"] = template.accuracy.model_copy(
            update={"cosine": 0.95, "max_rel_error": 0.3}
        )
    elif template.accuracy is None:
        update["accuracy"] = Accuracy(seed=0, cosine=1.0, max_rel_error=0.0, top1_agreement=1.0)
    result = template.model_copy(update=update)
    return StoredVariant(
        index=index,
        state="succeeded",
        explanation="ok",
        pod=f"{target}-{index}",
        attempts=1,
        finished_at=FINISHED,
        result_source="termination-message",
        result=result,
        variant=ref,
        allocation=_allocation(target, factor),
    ).judged(None)


def _allocation(target: str, factor: float) -> Allocation:
    device = DEVICES[int(target.rsplit("-", 1)[1]) % len(DEVICES)]
    capacity: Capacity = "spot" if int(target.rsplit("-", 1)[1]) % 2 else "on-demand"
    seconds = 30 + 20 * factor
    return Allocation(
        seconds=seconds,
        pod_seconds=seconds,
        share=1.0,
        devices=4.0 if device == "cpu" else 1.0,
        unit="cpu" if device == "cpu" else "gpu",
        device_type=device,
        capacity=capacity,
        attempts=1,
    )


def fill(root: Path, shape: Shape, template: OkResult) -> Path:
    """A repository at `root` with the fleet's prices and a database of `shape`'s runs."""
    (root / FLEET_FILE).parent.mkdir(parents=True)
    shutil.copy(ROOT / FLEET_FILE, root / FLEET_FILE)
    database = root / ".benchfleet" / "results.sqlite"
    cells = _cells(shape.variants)
    shuffle = random.Random(7)
    with open_store(database) as store:
        for number in range(shape.targets):
            target = f"{DEVICES[number % len(DEVICES)]}-{number:03d}"
            speed = 0.5 + shuffle.random() * 3
            job = JobIdentity(
                workflow=WORKFLOW,
                cluster=CLUSTER,
                namespace="benchfleet",
                job=f"{WORKFLOW}-{target}-0123456789",
                target=target,
                spec_file=f"specs/workflows/{WORKFLOW}.yaml",
                spec_sha256="a" * 64,
                image="registry.example.com/benchfleet/runner@sha256:" + "b" * 64,
            )
            variants = [
                _variant(template, target, index, cell, speed * (0.95 + 0.1 * shuffle.random()))
                for index, cell in enumerate(cells)
            ]
            store.add(job, variants)
    return database


@dataclass(frozen=True)
class Run:
    """One report written."""

    seconds: float
    peak_rss_mib: float
    written_bytes: int
    finished: bool


def report(code: Path, root: Path, database: Path, output_format: str, timeout_s: float) -> Run:
    """`collector report` in `output_format` by the code at `code`, in a fresh interpreter."""
    output = root / f"report-{output_format}"
    output.unlink(missing_ok=True)
    command = [
        *(sys.executable, "-c", "from benchfleet.collector import cli; cli()"),
        *("--root", str(root)),
        *("--db", str(database), "report", "--workflow", WORKFLOW),
        *("--format", output_format, "--output", str(output)),
    ]
    env = {**os.environ, "PYTHONPATH": str(code)}
    began = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    finished = True
    deadline = began + timeout_s
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            process.kill()
            pid, status, usage = os.wait4(process.pid, 0)
            finished = False
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode() if process.stderr else ""
    if finished and process.returncode:
        raise RuntimeError(f"{output_format} report failed: {errors[-2000:]}")
    return Run(
        seconds=seconds,
        # ru_maxrss is in KiB on Linux.
        peak_rss_mib=usage.ru_maxrss / 1024,
        written_bytes=output.stat().st_size if finished else 0,
        finished=finished,
    )


def _checkout(revision: str, into: Path) -> Path:
    """The repository's files at `revision`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _cell(runs: Sequence[Run], field: str) -> str:
    values = sorted(getattr(run, field) for run in runs)
    median = values[len(values) // 2]
    cut = "" if all(run.finished for run in runs) else ">"
    if field == "written_bytes":
        return f"{median / 1e6:.1f}" if not cut else "-"
    return f"{cut}{median:.1f}"


def _rows(results: dict[tuple[str, str], list[Run]], sides: Sequence[str]) -> Iterator[str]:
    names = ("s", "peak MiB", "MB")
    fields = ("seconds", "peak_rss_mib", "written_bytes")
    header = ["format"] + [f"{side} {name}" for name in names for side in sides]
    yield "  ".join(f"{word:>14}" for word in header)
    for output_format in dict.fromkeys(key[0] for key in results):
        cells = [_cell(results[output_format, side], field) for field in fields for side in sides]
        yield "  ".join(f"{word:>14}" for word in [output_format, *cells])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--variants", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--against", metavar="REV", help="also run the code at this revision")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per report")
    parser.add_argument("--smoke", action="store_true")
    arguments = parser.parse_args()
    shape = Shape(arguments.targets, arguments.variants)
    rounds = arguments.rounds
    if arguments.smoke:
        shape, rounds = Shape(4, 8), 1
    formats = arguments.formats.split(",")
    template = measured(0.05 if arguments.smoke else 0.2)
    with tempfile.TemporaryDirectory(prefix="bench-report-scale-") as scratch:
        folder = Path(scratch)
        began = time.perf_counter()
        database = fill(folder / "repo", shape, template)
        print(
            f"{shape.targets * shape.variants} variants ({shape.targets} targets x "
            f"{shape.variants}) stored in {time.perf_counter() - began:.1f} s, "
            f"{database.stat().st_size / 2**20:.0f} MiB",
            flush=True,
        )
        sides = {"now": ROOT}
        if arguments.against:
            sides[arguments.against] = _checkout(arguments.against, folder / "against")
        results: dict[tuple[str, str], list[Run]] = {}
        for _ in range(rounds):
            for output_format in formats:
                for side, code in sides.items():
                    run = report(code, folder / "repo", database, output_format, arguments.timeout)
                    results.setdefault((output_format, side), []).append(run)
                    print(
                        f"  {output_format:>8} {side:>10}: {run.seconds:.1f} s, "
                        f"{run.peak_rss_mib:.0f} MiB peak, {run.written_bytes / 1e6:.1f} MB"
                        + ("" if run.finished else f" (cut off at {arguments.timeout:.0f} s)"),
                        flush=True,
                    )
    print(f"\n{rounds} round(s), medians; '>': cut off at --timeout")
    for line in _rows(results, list(sides)):
        print(line)


if __name__ == "__main__":
    main()
