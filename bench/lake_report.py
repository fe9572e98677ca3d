"""`collector sync` of a root's Jobs to the lake, and `collector report --lake` from a root
with no database beside the root's own report.

    python -m bench.lake_report [--jobs 50] [--variants 8] [--samples 10000] [--rounds 3]
                                [--smoke]

Needs a lake server: `make lake` and export its lines (AWS_ENDPOINT_URL, the AWS keys,
BENCHFLEET_LAKE); each run uses a fresh prefix under that lake. A root is filled as gather
fills it (tests/lake/fleet.py: `--jobs` Jobs in each of two clusters, `--variants` variants
each, one in four failed, the rest with `--samples` samples), synced once, then reported
in JSON round by round, the root's own report and the lake's in turn (pair by pair, for a
ratio on one machine at one time). Every command runs in a fresh interpreter, as a user
runs it: wall time and peak RSS (the child's own, os.wait4).

Measured 2026-12-06 on the 2-core machine shared with other agents, SeaweedFS 4.53
(`weed mini`) on loopback, 100 Jobs x 8 variants (800 variants, 600 with 10,000 samples:
6 million samples), 3 rounds: see docs/lake.md, "Numbers".
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contract.lake import LAKE_ENV, LakeUrl, parse_lake_url
from contract.objectstore import ObjectStore
from contract.result import OkResult
from tests.collector.stored import NOW
from tests.lake.fleet import WORKFLOW, fleet, gathered

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
COLLECTOR: Final = [sys.executable, "-c", "from benchfleet.collector import cli; cli()"]


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float
    output: bytes


def run(arguments: list[str], env: dict[str, str]) -> Run:
    """One collector command in a fresh interpreter: its wall time and its own peak RSS."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        child = subprocess.Popen([*COLLECTOR, *arguments], env=env, stdout=output)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        output.seek(0)
        text = output.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(arguments)} failed (exit {status})")
    return Run(seconds, usage.ru_maxrss / 1024, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50, help="Jobs per cluster (two clusters)")
    parser.add_argument("--variants", type=int, default=8)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="2 Jobs a cluster, one round")
    options = parser.parse_args()
    if options.smoke:
        options.jobs, options.variants, options.samples, options.rounds = 2, 4, 100, 1
    if not os.environ.get(LAKE_ENV):
        raise SystemExit(f"no lake: `make lake` and export its lines (${LAKE_ENV} is unset)")
    base = parse_lake_url(os.environ[LAKE_ENV])
    lake = LakeUrl(bucket=base.bucket, prefix=base.key(f"bench-{uuid.uuid4().hex[:8]}"))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), LAKE_ENV: str(lake)}
    records = fleet(options.jobs, options.variants, options.samples)
    variants = sum(len(record.variants) for record in records)
    samples = sum(
        v.result.samples.count
        for record in records
        for v in record.variants
        if isinstance(v.result, OkResult) and v.result.samples is not None
    )
    with tempfile.TemporaryDirectory() as folder:
        root = gathered(Path(folder) / "root", records, NOW)
        bare = Path(folder) / "bare"
        bare.mkdir()
        synced = run(["--root", str(root), "sync"], env)
        again = run(["--root", str(root), "sync"], env)
        stored = ObjectStore.for_lake(lake).list(lake.key(""))
        print(
            f"{len(records)} Jobs, {variants} variants, {samples:,} samples; lake {lake}: "
            f"{len(stored)} files, {sum(s.bytes for s in stored) / 2**20:.1f} MiB"
        )
        print(
            f"sync: {synced.seconds:.2f} s, peak {synced.peak_mib:.0f} MiB; again (nothing "
            f"to send): {again.seconds:.2f} s"
        )
        report = ["report", "--workflow", WORKFLOW, "--format", "json"]
        print("round  root s  lake s  lake/root  root MiB  lake MiB  identical")
        for number in range(options.rounds):
            here = run(["--root", str(root), *report], env)
            there = run(["--root", str(bare), *report, "--lake"], env)
            print(
                f"{number:5}  {here.seconds:6.2f}  {there.seconds:6.2f}  "
                f"{there.seconds / here.seconds:9.2f}  {here.peak_mib:8.0f}  "
                f"{there.peak_mib:8.0f}  {here.output == there.output}"
            )
        ObjectStore.for_lake(lake).delete(s.key for s in stored)


if __name__ == "__main__":
    main()
