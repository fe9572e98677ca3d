"""A real runner's result, the template of the results the gather benches' pods hand over.

The runner runs once here, as a pod runs it (`python -m runner`, config.json, an index, a
termination log), on cpu-smoke's first variant (tiny-mlp, 1 s of measurement) as synth wrote
it into dist/; every pod of a bench then hands over that measurement under its own
variant's identity (localcluster/results.py `as_variant`). A made-up result has none of
what a real one carries (every iteration's duration, contention readings, the
environment), and the collector's cost of reading those hid behind it: results that carry
their samples were read from each pod's log, one request per variant, while the benches
still counted a few requests in all.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from contract.dist import read_workload
from contract.layout import workload_file
from contract.result import OkResult, parse_result_line

ROOT: Final = Path(__file__).resolve().parent.parent
CLUSTER: Final = "us-east"
WORKFLOW: Final = "cpu-smoke"


def measured(min_time_s: float | None = None) -> OkResult:
    """The result of one real run of cpu-smoke's variant 0 (measuring for `min_time_s`
    rather than its spec's 1 s, where given)."""
    workload = read_workload(ROOT / workload_file(CLUSTER, WORKFLOW))
    (job, *_) = workload.jobs
    config = json.loads(workload.configmaps[job["metadata"]["name"]]["data"]["config.json"])
    if min_time_s is not None:
        measure = config["measure"]
        measure["min_time_s"] = min_time_s
        measure["max_time_s"] = max(measure["max_time_s"], min_time_s)
    with tempfile.TemporaryDirectory(prefix="bench-real-result-") as scratch:
        folder = Path(scratch)
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        done = subprocess.run(
            [
                *(sys.executable, "-m", "runner", "--config", str(folder / "config.json")),
                *("--models", str(ROOT / "models" / "examples"), "--index", "0"),
                *("--termination-log", str(folder / "termination-log")),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    result = parse_result_line(done.stdout)
    if not isinstance(result, OkResult) or result.samples is None:
        raise RuntimeError(
            f"the runner measured nothing: {done.stdout[-500:]}{done.stderr[-2000:]}"
        )
    return result
