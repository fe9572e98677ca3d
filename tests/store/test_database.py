"""The results database and the record in git: nothing stored twice, nothing half-written."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.accuracy import Accuracy, AccuracyGate
from contract.allocation import Allocation
from contract.instant import instant
from contract.lake import StoredObject
from contract.layout import record_path, recorded_jobs
from contract.records import JobRecord, PodStart, StoredVariant, read_record, write_record
from contract.result import OkResult, Rounds
from contract.samples import encode
from contract.variant import LATER_SETTINGS, Runtime
from store.database import _MIGRATIONS, Store, StoreError, open_store
from tests.collector.stored import JOB, NOW, failed, succeeded

ADDED_IN = {
    3: ("repeat",),
    5: ("accuracy_gate", "accuracy_failed"),
    6: ("allocation",),
    7: ("scheduled_run", "scheduled_at"),
    8: ("compile",),
    9: ("pod_start",),
    10: ("clock_note",),
    15: ("result_object",),
}
"""The columns of variant_runs each schema version added."""
RENAMED_IN = {14: ("compile", "runtime")}
"""The columns of variant_runs each schema version renamed: from, to."""
SCHEMA_VERSION = 16
LAKE_OBJECT = StoredObject(
    key="team/raw/cpu-smoke/us-east/job/v1/pod-0.json", sha256="ab" * 32, bytes=6099
)
POD_START = PodStart(
    created_at="2026-01-01T00:00:00Z",
    scheduled_at="2026-01-01T00:00:02Z",
    started_at="2026-01-01T00:00:09Z",
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "db" / "results.sqlite") as opened:
        yield opened


def test_a_variant_run_is_stored_once_however_often_gather_runs(store: Store) -> None:
    first = store.add(JOB, [succeeded(0), failed(1)], NOW)
    again = store.add(JOB, [succeeded(0), failed(1), succeeded(2)], NOW)
    assert (first.new, first.already_stored) == (2, 0)
    assert (again.new, again.already_stored) == (1, 2)
    assert store.stored_indexes(JOB.cluster, JOB.namespace, JOB.job) == {0, 1, 2}


def test_stored_runs_read_back_with_their_full_result(store: Store) -> None:
    variants = [succeeded(0, p50_ms=2.25), failed(1)]
    store.add(JOB, variants, NOW)
    runs = store.runs("cpu-smoke")
    assert [run.variant for run in runs] == variants
    assert {run.job for run in runs} == {JOB}
    assert runs[0].collected_at == "2026-12-03T06:00:00+00:00"


def test_the_same_job_name_in_two_clusters_is_two_runs(store: Store) -> None:
    store.add(JOB, [succeeded(0)], NOW)
    other = JOB.model_copy(update={"cluster": "eu-west"})
    assert store.add(other, [succeeded(0)], NOW).new == 1
    assert len(store.runs("cpu-smoke")) == 2


def test_a_database_from_a_newer_collector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=r"results.sqlite has schema version 99"):
        Store(path)


def test_a_file_that_is_no_database_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.write_text("not sqlite at all, but long enough to have a header" * 4)
    with pytest.raises(StoreError, match=r"cannot open the results database .*results.sqlite"):
        Store(path)


def record(*variants: StoredVariant) -> JobRecord:
    return JobRecord(**JOB.model_dump(), outcome="complete", variants=variants)


def test_a_record_lands_where_synth_looks_for_it(tmp_path: Path) -> None:
    path, written = write_record(tmp_path, record(succeeded(0)))
    assert written
    assert path == record_path(tmp_path, "cpu-smoke", "us-east", JOB.job)
    assert path == tmp_path / "results" / "cpu-smoke" / "us-east" / f"{JOB.job}.json"
    assert recorded_jobs(tmp_path, "cpu-smoke", "us-east") == [JOB.job]
    assert recorded_jobs(tmp_path, "cpu-smoke", "eu-west") == []
    assert read_record(path) == record(succeeded(0))


def test_rewriting_the_same_record_leaves_the_file_alone(tmp_path: Path) -> None:
    path, _ = write_record(tmp_path, record(succeeded(0)))
    before = path.stat().st_mtime_ns
    assert write_record(tmp_path, record(succeeded(0))) == (path, False)
    assert path.stat().st_mtime_ns == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_record_of_a_job_without_synths_annotations_reads_back(tmp_path: Path) -> None:
    """Fields that are None are not written; reading must not then find them missing."""
    bare = JOB.model_copy(
        update={"target": None, "spec_file": None, "spec_sha256": None, "image": None}
    )
    written = JobRecord(**bare.model_dump(), outcome="complete", variants=(succeeded(0),))
    path, _ = write_record(tmp_path, written)
    assert "spec_sha256" not in path.read_text(encoding="utf-8")
    assert read_record(path) == written


def test_a_version_1_database_loses_only_its_unread_columns(tmp_path: Path) -> None:
    """Version 1 copied four result fields into columns nothing read; opening it drops them
    and keeps every stored variant."""
    path = tmp_path / "results.sqlite"
    with open_store(path) as store:
        store.add(JOB, [succeeded(0)])
    with sqlite3.connect(path) as db:
        for column, kind in (("device_name", "TEXT"), ("model_sha256", "TEXT"),
                             ("status", "TEXT"), ("p50_ms", "REAL")):  # fmt: skip
            db.execute(f"ALTER TABLE variant_runs ADD COLUMN {column} {kind}")
        back_to(db, 1)
    with open_store(path) as store:
        assert [run.variant.index for run in store.runs("cpu-smoke")] == [0]
    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(variant_runs)")}
        assert not columns & {"device_name", "model_sha256", "status", "p50_ms"}
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def added_since(version: int) -> list[str]:
    """The columns of variant_runs added after `version`."""
    return [column for step, columns in ADDED_IN.items() if step > version for column in columns]


def older_database(tmp_path: Path, version: int) -> Path:
    """A store holding one run, taken back to `version` by dropping the columns added since."""
    path = tmp_path / "results.sqlite"
    with open_store(path) as store:
        store.add(JOB, [succeeded(0)])
    with sqlite3.connect(path) as db:
        back_to(db, version)
    return path


def back_to(db: sqlite3.Connection, version: int) -> None:
    """Undo the column changes of the versions after `version`."""
    for step, (old, new) in RENAMED_IN.items():
        if step > version:
            db.execute(f"ALTER TABLE variant_runs RENAME COLUMN {new} TO {old}")
    for column in added_since(version):
        db.execute(f"ALTER TABLE variant_runs DROP COLUMN {column}")
    db.execute(f"PRAGMA user_version = {version}")


def test_a_version_2_database_gains_the_repeat_and_keeps_its_runs(tmp_path: Path) -> None:
    path = older_database(tmp_path, 2)
    repeated = JOB.model_copy(update={"job": "cpu-smoke-cpu-ffffffffff", "repeat": 1})
    with open_store(path) as store:
        store.add(repeated, [succeeded(0)])
        assert [run.job.repeat for run in store.runs("cpu-smoke")] == [None, 1]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_4_database_gains_the_accuracy_verdict_its_runs_not_judged(
    tmp_path: Path,
) -> None:
    path = older_database(tmp_path, 4)
    judged = succeeded(1).judged(AccuracyGate(min_cosine=0.99))
    with open_store(path) as store:
        store.add(JOB, [judged])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.accuracy_gate, earlier.variant.accuracy_failed) == (None, None)
    assert later.variant == judged
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


ALLOCATION = Allocation(
    seconds=38.5,
    pod_seconds=115.5,
    share=1 / 3,
    devices=2,
    unit="gpu",
    device_type="nvidia-a100",
    capacity="spot",
    attempts=2,
    estimate=("1 of 3 attempts' pods were gone before gather saw them",),
)


def test_a_version_5_database_gains_the_allocation_its_runs_not_recorded(tmp_path: Path) -> None:
    path = older_database(tmp_path, 5)
    allocated = succeeded(1).model_copy(update={"allocation": ALLOCATION})
    with open_store(path) as store:
        store.add(JOB, [allocated])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.allocation, later.variant) == (None, allocated)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_6_database_gains_the_scheduled_run_its_runs_unscheduled(
    tmp_path: Path,
) -> None:
    path = older_database(tmp_path, 6)
    scheduled = JOB.model_copy(
        update={"job": "cpu-smoke-cpu-eeeeeeeeee", "scheduled_run": 3,
                "scheduled_at": instant("2026-12-07T00:00:00Z")}
    )  # fmt: skip
    with open_store(path) as store:
        store.add(scheduled, [succeeded(0)])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.job.scheduled_run, earlier.job.scheduled_at) == (None, None)
    assert later.job == scheduled
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_7_database_gains_compile_its_runs_eager(tmp_path: Path) -> None:
    path = older_database(tmp_path, 7)
    compiled = compiled_variant(succeeded(1))
    with open_store(path) as store:
        store.add(JOB, [compiled])
        earlier, later = store.runs("cpu-smoke")
    assert earlier.variant.variant is not None
    assert earlier.variant.variant.runtime is Runtime.EAGER
    assert later.variant == compiled
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_10_databases_compiled_runs_read_back_as_runtime_inductor(
    tmp_path: Path,
) -> None:
    """Its rows say `compile` (a column and, in the stored result, the variant's key); after
    the rename both read as the runtime they ran."""
    path = tmp_path / "results.sqlite"
    compiled = compiled_variant(succeeded(0))
    with open_store(path) as store:
        store.add(JOB, [compiled])
    with sqlite3.connect(path) as db:
        back_to(db, 10)
        assert db.execute("SELECT compile FROM variant_runs").fetchall() == [("inductor",)]
        # As a collector before schema 14 stored it.
        db.execute(
            "UPDATE variant_runs SET result_json = "
            'replace(result_json, \'"runtime":"inductor"\', \'"compile":"inductor"\')'
        )
        stored = db.execute("SELECT result_json FROM variant_runs").fetchone()[0]
        assert '"compile":"inductor"' in stored and '"runtime"' not in stored
    with open_store(path) as store:
        (run,) = store.runs("cpu-smoke")
    assert run.variant.variant is not None and run.variant.result is not None
    assert run.variant.variant.runtime is Runtime.INDUCTOR
    assert run.variant.result.variant == run.variant.variant
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT runtime FROM variant_runs").fetchall() == [("inductor",)]


def test_a_version_9_database_gains_the_clock_note_nothing_said_of_its_runs(
    tmp_path: Path,
) -> None:
    path = older_database(tmp_path, 9)
    noted = succeeded(1).model_copy(update={"clock_note": "its node's clock ran 3 d 0 h ahead"})
    with open_store(path) as store:
        store.add(JOB, [noted])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.clock_note, later.variant) == (None, noted)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_14_database_gains_the_lake_object_none_for_its_runs(tmp_path: Path) -> None:
    path = older_database(tmp_path, 14)
    from_lake = succeeded(1).model_copy(
        update={"result_source": "lake", "result_object": LAKE_OBJECT}
    )
    with open_store(path) as store:
        store.add(JOB, [from_lake])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.result_object, later.variant) == (None, from_lake)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_16_database_without_the_lake_object_gains_it(tmp_path: Path) -> None:
    """Version 16 was released before version 15's column landed: its databases lack it."""
    path = older_database(tmp_path, 14)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 16")
    from_lake = succeeded(1).model_copy(
        update={"result_source": "lake", "result_object": LAKE_OBJECT}
    )
    with open_store(path) as store:
        store.add(JOB, [from_lake])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.result_object, later.variant) == (None, from_lake)
    with open_store(path) as store:
        assert len(store.runs("cpu-smoke")) == 2, "opened again, nothing is added twice"


def test_the_lake_object_reads_back_from_store_and_record(store: Store, tmp_path: Path) -> None:
    from_lake = succeeded(0).model_copy(
        update={"result_source": "lake", "result_object": LAKE_OBJECT}
    )
    store.add(JOB, [from_lake], NOW)
    [run] = store.runs("cpu-smoke")
    assert run.variant == from_lake
    path, _ = write_record(tmp_path, record(from_lake))
    assert read_record(path).variants == (from_lake,)


def test_a_version_8_database_gains_each_pods_start_unknown_for_its_runs(tmp_path: Path) -> None:
    path = older_database(tmp_path, 8)
    started = succeeded(1).model_copy(update={"pod_start": POD_START})
    with open_store(path) as store:
        store.add(JOB, [started])
        earlier, later = store.runs("cpu-smoke")
    assert (earlier.variant.pod_start, later.variant) == (None, started)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_pods_start_reads_back_from_store_and_record(store: Store, tmp_path: Path) -> None:
    started = succeeded(0).model_copy(update={"pod_start": POD_START})
    store.add(JOB, [started], NOW)
    [run] = store.runs("cpu-smoke")
    assert run.variant == started
    path, _ = write_record(tmp_path, record(started))
    assert read_record(path).variants == (started,)


def compiled_variant(run: StoredVariant) -> StoredVariant:
    """`run` as its variant compiled with inductor."""
    assert run.variant is not None and run.result is not None
    ref = run.variant.model_copy(update={"runtime": Runtime.INDUCTOR})
    return run.model_copy(
        update={"variant": ref, "result": run.result.model_copy(update={"variant": ref})}
    )


def test_an_eager_and_a_compiled_run_are_told_apart_in_store_and_record(
    store: Store, tmp_path: Path
) -> None:
    eager, compiled = succeeded(0), compiled_variant(succeeded(1))
    store.add(JOB, [eager, compiled], NOW)
    assert [run.variant for run in store.runs("cpu-smoke")] == [eager, compiled]
    path, _ = write_record(tmp_path, record(eager, compiled))
    assert read_record(path).variants == (eager, compiled)


def test_an_allocation_reads_back_from_store_and_record_and_comes_to_runs_stored_before_it(
    store: Store, tmp_path: Path
) -> None:
    """A group's variant measured by an attempt that a retry followed is stored at once; its
    allocation comes once its index has ended."""
    store.add(JOB, [succeeded(0), succeeded(1)], NOW)
    store.allocate(JOB, {1: ALLOCATION})
    first, second = store.runs("cpu-smoke")
    assert (first.variant.allocation, second.variant.allocation) == (None, ALLOCATION)
    assert second.variant.allocation is not None
    assert second.variant.allocation.device_seconds == 77.0
    path, _ = write_record(tmp_path, record(second.variant))
    assert read_record(path).variants == (second.variant,)


@pytest.mark.parametrize(
    ("cosine", "failed"), [(0.999, False), (0.98, True), (None, None)], ids=str
)
def test_a_runs_gate_and_verdict_read_back_from_store_and_record(
    store: Store, tmp_path: Path, cosine: float | None, failed: bool | None
) -> None:
    measured = succeeded(0)
    assert isinstance(measured.result, OkResult)
    accuracy = Accuracy(seed=0, cosine=cosine) if cosine is not None else None
    result = measured.result.model_copy(update={"accuracy": accuracy})
    judged = measured.model_copy(update={"result": result}).judged(AccuracyGate(min_cosine=0.99))
    assert judged.accuracy_failed is failed
    store.add(JOB, [judged], NOW)
    [run] = store.runs("cpu-smoke")
    assert run.variant == judged
    path, _ = write_record(tmp_path, record(judged))
    assert read_record(path).variants == (judged,)


def test_samples_stay_in_the_store_and_out_of_the_git_record(store: Store, tmp_path: Path) -> None:
    measured = succeeded(0)
    assert isinstance(measured.result, OkResult)
    result = measured.result.model_copy(update={"samples": encode([1_500_000] * 50)})
    with_samples = measured.model_copy(update={"result": result})
    store.add(JOB, [with_samples], NOW)
    [run] = store.runs("cpu-smoke")
    assert isinstance(run.variant.result, OkResult) and run.variant.result.samples is not None
    assert run.variant.result.samples.durations_ns() == [1_500_000] * 50
    path, _ = write_record(tmp_path, record(with_samples))
    assert "samples" not in path.read_text(encoding="utf-8")
    assert read_record(path).variants == (measured,)


def test_round_medians_stay_in_the_git_record(tmp_path: Path) -> None:
    """A report from results/ alone pairs variants by their rounds: the record keeps them."""
    measured = succeeded(0)
    assert isinstance(measured.result, OkResult)
    rounds = Rounds(id="0123456789ab", medians_ns=[1_500_000.5, 1_490_000.0])
    paired = measured.model_copy(
        update={"result": measured.result.model_copy(update={"rounds": rounds})}
    )
    path, _ = write_record(tmp_path, record(paired))
    assert read_record(path).variants == (paired,)


def test_the_migrations_add_each_column_as_a_new_database_has_it(tmp_path: Path) -> None:
    """The table's columns are generated (a variant's settings from contract/variant.py), its
    migrations written out: each column a migration adds is a new database's, of its type, and
    each setting added later has its migration."""
    with (
        open_store(tmp_path / "results.sqlite"),
        sqlite3.connect(tmp_path / "results.sqlite") as db,
    ):
        fresh = {row[1]: row[2] for row in db.execute("PRAGMA table_info(variant_runs)")}
    added: dict[str, str] = {}
    for statements in _MIGRATIONS.values():
        for words in (statement.split() for statement in statements):
            if words[3:5] == ["ADD", "COLUMN"]:
                added[words[5]] = words[6]
            elif words[3:5] == ["RENAME", "COLUMN"]:
                added[words[7]] = added.pop(words[5])
    assert {column: fresh.get(column) for column in added} == added
    renamed = {new: old for old, new in RENAMED_IN.values()}
    assert {renamed.get(column, column) for column in added} == {
        column for columns in ADDED_IN.values() for column in columns
    }
    assert set(LATER_SETTINGS) <= set(added)


def test_a_row_stored_with_a_finish_time_that_is_no_time_reads_as_unknown(tmp_path: Path) -> None:
    """Issue #31: a `finishedAt` that was no time was stored as it was, before times were
    checked where they enter; every report of the workflow then raised ValueError."""
    path = tmp_path / "results.sqlite"
    with open_store(path) as store:
        store.add(JOB, [succeeded(0)], NOW)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE variant_runs SET finished_at = 'soon'")
    with open_store(path) as store:
        (run,) = store.runs("cpu-smoke")
    assert (run.variant.finished_at, run.result_at) == (None, None)
    with sqlite3.connect(path) as db:
        stored = db.execute("SELECT finished_at FROM variant_runs").fetchone()
    assert stored == ("soon",), "reading changes nothing"


def _stored_with(path: Path, edit: str) -> list[StoredVariant]:
    """What the store reads of succeeded(0) after `edit` (SQL on its result_json, as a
    collector before numbers were checked could have stored it), and that reading changed
    nothing in the row."""
    with open_store(path) as store:
        store.add(JOB, [succeeded(0)], NOW)
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE variant_runs SET result_json = {edit}")
        (before,) = db.execute("SELECT result_json FROM variant_runs").fetchone()
    with open_store(path) as store:
        read = [run.variant for run in store.runs("cpu-smoke")]
        assert [variant.state for variant in read] == [
            variant.state for variant in store.variants(JOB.cluster, JOB.namespace, JOB.job)
        ]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT result_json FROM variant_runs").fetchone() == (before,)
    return read


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        # pydantic wrote an infinite p50 as null, stored as succeeded (issue #31).
        ("json_set(result_json, '$.latency.p50_ms', json('null'))", "latency.p50_ms = null"),
        ("json_set(result_json, '$.latency.p50_ms', -0.5)", "latency.p50_ms = -0.5"),
        # Python's json.dumps writes NaN as it is, which json.loads reads back.
        ("replace(result_json, '\"p50_ms\":1.5', '\"p50_ms\":NaN')", "latency.p50_ms = nan"),
    ],
)
def test_a_row_whose_latency_is_no_measurement_reads_as_a_failure_saying_why(
    tmp_path: Path, edit: str, words: str
) -> None:
    (variant,) = _stored_with(tmp_path / "results.sqlite", edit)
    assert (variant.state, variant.reason, variant.result) == ("failed", "unusable_result", None)
    assert words in variant.explanation
    assert variant.variant == succeeded(0).variant, "still named by its variant"


def test_a_rows_bad_optional_figure_is_left_out_and_said(tmp_path: Path) -> None:
    edit = "json_set(result_json, '$.throughput_samples_per_s', -2.0)"
    (variant,) = _stored_with(tmp_path / "results.sqlite", edit)
    assert variant.state == "succeeded"
    assert isinstance(variant.result, OkResult)
    assert variant.result.throughput_samples_per_s is None
    assert variant.explanation == (
        "ok; left out of its result as unusable: throughput_samples_per_s = -2.0: should be "
        "greater than 0"
    )


def test_a_row_no_version_stores_reads_as_a_failure_not_an_error(tmp_path: Path) -> None:
    (variant,) = _stored_with(tmp_path / "results.sqlite", '\'{"status": "ok"\'')
    assert (variant.state, variant.reason) == ("failed", "unusable_result")
    assert variant.explanation.startswith("its stored row cannot be read: ")


def test_a_record_an_earlier_gather_wrote_with_a_negative_latency_still_reads(
    tmp_path: Path,
) -> None:
    record = JobRecord(**JOB.model_dump(), outcome="complete", variants=(succeeded(0),))
    path, _ = write_record(tmp_path, record)
    path.write_text(path.read_text().replace('"p50_ms": 1.5', '"p50_ms": -1.5'))
    (variant,) = read_record(path).variants
    assert (variant.state, variant.reason, variant.result) == ("failed", "unusable_result", None)
    assert "latency.p50_ms = -1.5: should be greater than 0" in variant.explanation
