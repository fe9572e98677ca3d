"""A fleet's worth of recorded, stored Jobs with samples, as gather leaves them in a root: for
the lake's sync, report and forget tests and bench/lake_report.py."""

from datetime import datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from benchfleet.collector import cli
from contract.options import DEFAULT_DATABASE
from contract.records import JobIdentity, JobRecord, StoredVariant, write_record
from contract.samples import encode
from store.database import open_store
from tests.collector.stored import JOB, failed, succeeded
from tests.lakeserver import Lake

WORKFLOW = JOB.workflow
CLUSTERS = ("us-east", "eu-west")


def job(cluster: str, number: int) -> JobIdentity:
    return JOB.model_copy(
        update={"cluster": cluster, "job": f"cpu-smoke-cpu-{cluster}-{number:04d}"}
    )


def variant(index: int, number: int, samples: int) -> StoredVariant:
    """A variant's run: every fourth failed, the rest with `samples` durations."""
    if index % 4 == 3:
        return failed(index)
    run = succeeded(index, p50_ms=1.0 + index / 10 + number / 100)
    assert run.result is not None
    durations = [1_000_000 + 13 * ((i * 7919 + index) % 1000) for i in range(samples)]
    result = run.result.model_copy(update={"samples": encode(durations)})
    return run.model_copy(update={"result": result, "result_source": "log"})


def fleet(jobs_per_cluster: int, variants: int, samples: int) -> list[JobRecord]:
    """Records of `jobs_per_cluster` Jobs in each of CLUSTERS, `variants` variants each."""
    records = []
    for cluster in CLUSTERS:
        for number in range(jobs_per_cluster):
            identity = job(cluster, number)
            runs = tuple(variant(i, number, samples) for i in range(variants))
            outcome = "failed" if any(v.state == "failed" for v in runs) else "complete"
            records.append(
                JobRecord(**identity.model_dump(), outcome=outcome, variants=runs, owner="team-a")
            )
    return records


def gathered(root: Path, records: list[JobRecord], now: datetime) -> Path:
    """`root` as a collector that gathered `records` at `now` leaves it: the database holds
    every run with its samples, results/ the records (samples left out, as gather writes)."""
    with open_store(root / DEFAULT_DATABASE) as store:
        for number, record in enumerate(records):
            identity = JobIdentity.model_validate(
                record.model_dump(include=set(JobIdentity.model_fields))
            )
            store.add(identity, record.variants, now + timedelta(seconds=number))
            write_record(root, record)
    return root


def reported_alike(first: Path, third: Path, lake: Lake, workflow: str) -> None:
    """`third`, a root with no database, reports `workflow` from the lake byte for byte as
    `first` reports it from its own store, in text and JSON; and still has no database."""
    for output_format in ("text", "json"):
        arguments = ["report", "--workflow", workflow, "--format", output_format]
        here = CliRunner().invoke(cli, ["--root", str(first), *arguments], env=lake.env())
        there = CliRunner().invoke(
            cli, ["--root", str(third), *arguments, "--lake", str(lake.url)], env=lake.env()
        )
        assert here.exit_code == 0, here.output
        assert there.exit_code == 0, there.output
        assert there.stdout == here.stdout
    assert not (third / DEFAULT_DATABASE).exists()
