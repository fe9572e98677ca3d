"""Where a pod's runner process spends its time around the measurement, and what ending it
with os._exit saves.

    python -m bench.runner_startup

Each round runs the runner as a pod does (one process, config.json and the index in its env,
a termination log) on tiny-mlp with a short measurement, twice: `python -m runner`, which ends
with os._exit once the result is out, and a baseline that calls the same main() and leaves
through sys.exit, so the interpreter tears torch down as it did before. The two alternate,
the candidate first in even rounds, after one pair that warms the page cache and is not
counted. Each run's wall time is split by when lines of its stdout and stderr (one pipe)
arrive, and by the result's own `timings`:
- start: process start to the runner's first log line (interpreter, imports, config.json);
- load: `load_s` (sha256, archive check, the first `torch.export.load`, `module()`);
- measurement: prepare, the cold first iteration, warmup and the timed loop;
- result: the rest until the BENCH_RESULT line (statistics, environment, termination log);
- exit: the BENCH_RESULT line to the end of the process.
Absolute times drift by up to 30 % on this shared machine, so each part is compared pair by
pair: the median of the per-pair ratios with their range, which for 5 pairs is the sign
test's 94 % interval of that median (`contract.order_stats.median_interval`). Then one more run,
under `python -X importtime`, says which packages the imports of the start and those during
the run (the first `torch.export.load` pulls in torch's export deserializer) spend their time
in; importtime slows imports, so those seconds are relative. Last, ROUNDS processes each load
the model twice, as `load_s` times it: what of the first load is a one-time cost.

`--smoke` runs one round of each (and no warming pair), for the test-suite (tests/bench/).
"""

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from bench.timing import Pairing, pairing, table
from contract.config import InputConfig, ModelConfig, PhaseConfig, RunConfig, VariantConfig
from contract.result import RESULT_PREFIX, OkResult, parse_result_line

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
ROUNDS: Final = 5
MODEL: Final = "tiny-mlp"
SHORT: Final = PhaseConfig(min_iterations=10, min_time_s=0.1, max_iterations=100_000, max_time_s=5)
CANDIDATE: Final = ("-m", "runner")
BASELINE: Final = ("-c", "import sys; from runner.__main__ import main; sys.exit(main())")
STARTED: Final = " INFO variant 0 ("
"""The runner's first log line, written once config.json is read and before loading."""
PARTS: Final = ("wall", "start", "load", "measurement", "result", "exit")
IMPORT_LINE: Final = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|(\s+)(\S+)")
PACKAGES: Final = ("torch", "sympy", "networkx", "numpy", "pydantic", "contract", "runner")
TWO_LOADS: Final = """
import sys, time
from pathlib import Path
from runner.loading import load_program
for _ in range(2):
    began = time.perf_counter()
    load_program(Path(sys.argv[1]), sys.argv[2]).module()
    print(time.perf_counter() - began)
"""


def write_config(folder: Path) -> Path:
    """A one-variant config.json for tiny-mlp, as synth would write it."""
    model = EXAMPLES / f"{MODEL}.pt2"
    config = RunConfig(
        workflow="bench",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=PhaseConfig(min_iterations=3, min_time_s=0.0, max_iterations=3, max_time_s=5),
        measure=SHORT,
        models={
            MODEL: ModelConfig(
                source="file",
                location=model.name,
                sha256=hashlib.sha256(model.read_bytes()).hexdigest(),
            )
        },
        variants=(
            VariantConfig(
                index=0,
                id="v000000000000",
                model=MODEL,
                precision="fp32",
                quantization="none",
                batch_size=2,
                inputs=(InputConfig(shape=(64,), dtype="float32"),),
            ),
        ),
    )
    path = folder / "config.json"
    path.write_text(config.model_dump_json(), encoding="utf-8")
    return path


def pod_env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CONFIG_PATH": str(write_config(folder)),
        "MODEL_PATH": str(EXAMPLES),
        "JOB_COMPLETION_INDEX": "0",
        "TERMINATION_LOG": str(folder / "termination-log"),
    }


def run_once(python_args: tuple[str, ...], env: Mapping[str, str]) -> dict[str, float]:
    """Run the runner once and split its wall time into PARTS (seconds)."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *python_args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    started = result_at = None
    output = []
    for line in process.stdout:
        arrived = time.perf_counter()
        output.append(line)
        if started is None and STARTED in line:
            started = arrived
        if line.startswith(RESULT_PREFIX):
            result_at = arrived
    code = process.wait()
    ended = time.perf_counter()
    result = parse_result_line("".join(output))
    if code != 0 or started is None or result_at is None or not isinstance(result, OkResult):
        raise RuntimeError(f"the runner failed (exit {code}):\n{''.join(output)[-3000:]}")
    assert result.timings is not None
    timings = result.timings
    measurement = (
        timings.prepare_s
        + timings.first_iteration_ms / 1e3
        + timings.warmup.seconds
        + timings.measure.seconds
    )
    return {
        "wall": ended - began,
        "start": started - began,
        "load": timings.load_s,
        "measurement": measurement,
        "result": result_at - started - timings.load_s - measurement,
        "exit": ended - result_at,
    }


def compare(env: Mapping[str, str], rounds: int, *, warm: bool = True) -> list[Pairing]:
    """`rounds` pairs of runs, alternating which side goes first, compared part by part."""
    if warm:
        run_once(CANDIDATE, env), run_once(BASELINE, env)  # warm the page cache, not counted
    pairs: list[tuple[dict[str, float], dict[str, float]]] = []
    for round_ in range(rounds):
        if round_ % 2 == 0:
            pairs.append((run_once(CANDIDATE, env), run_once(BASELINE, env)))
        else:
            baseline = run_once(BASELINE, env)
            pairs.append((run_once(CANDIDATE, env), baseline))
    return [pairing(part, [(c[part], b[part]) for c, b in pairs]) for part in PARTS]


def _package(module: str) -> str:
    top = module.partition(".")[0]
    if top == "pydantic_core":
        return "pydantic"
    return top if top in PACKAGES else "other"


def import_seconds(env: Mapping[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds spent executing each package's modules, at start and during the run."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *CANDIDATE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    at_start: dict[str, float] = defaultdict(float)
    during_run: dict[str, float] = defaultdict(float)
    current = at_start
    for line in done.stderr.splitlines():
        if STARTED in line:
            current = during_run
        elif match := IMPORT_LINE.match(line):
            current[_package(match.group(3))] += int(match.group(1)) / 1e6
    return at_start, during_run


def import_table(at_start: Mapping[str, float], during_run: Mapping[str, float]) -> str:
    lines = [
        "imports of one run (python -X importtime: own time of each package's modules)",
        f"{'package':<12} {'at start s':>11} {'during run s':>13}",
    ]
    for package in (*PACKAGES, "other"):
        lines.append(
            f"{package:<12} {at_start.get(package, 0.0):>11.3f} "
            f"{during_run.get(package, 0.0):>13.3f}"
        )
    lines.append(f"{'all':<12} {sum(at_start.values()):>11.3f} {sum(during_run.values()):>13.3f}")
    return "\n".join(lines)


def load_twice(rounds: int) -> tuple[float, float]:
    """Median seconds of the first and the second load of the model in one process, over
    `rounds` processes."""
    model = EXAMPLES / f"{MODEL}.pt2"
    sha256 = hashlib.sha256(model.read_bytes()).hexdigest()
    loads: list[tuple[float, float]] = []
    for _ in range(rounds):
        done = subprocess.run(
            [sys.executable, "-c", TWO_LOADS, str(model), sha256],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        first, second = (float(seconds) for seconds in done.stdout.split())
        loads.append((first, second))
    return statistics.median(f for f, _ in loads), statistics.median(s for _, s in loads)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.runner_startup", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="one round of each, no warming")
    smoke = parser.parse_args().smoke
    rounds = 1 if smoke else ROUNDS
    with tempfile.TemporaryDirectory() as folder:
        env = pod_env(Path(folder))
        rows = compare(env, rounds, warm=not smoke)
        imports = import_seconds(env)
    first, second = load_twice(rounds)
    print(
        table(
            f"python -m runner (os._exit) vs main() + sys.exit, {MODEL}, {rounds} pairs",
            "sys.exit",
            rows,
        )
    )
    exit_row = rows[PARTS.index("exit")]
    print(f"exit saves {exit_row.baseline_s - exit_row.candidate_s:.3f} s a pod (medians)")
    print()
    print(import_table(*imports))
    print()
    print(
        f"load_program + module() of {MODEL}, twice in one process ({rounds} processes, "
        f"medians): first {first:.3f} s, second {second:.3f} s"
    )


if __name__ == "__main__":
    main()
