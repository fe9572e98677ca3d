"""Pods that run a group of variants (scheduling.variants_per_pod): every result the pod
handed over is filed under the variant it names, and a variant it never reported fails with
the pod's end as its cause. Jobs and pods are shaped as Kubernetes 1.33 returns them
(standin/objects.py), the Job's config.json grouped as synth writes it."""

from pathlib import Path

from collector.clean import decide
from collector.harvest import WRONG_VARIANT, ended_attempts, harvest, harvest_earlier
from collector.indexes import index_states, summary_counts
from collector.workload import ExpectedJob
from contract.config import groups_text
from contract.layout import GROUPS_ANNOTATION, VARIANTS_ANNOTATION, record_path
from contract.records import JobRecord, StoredVariant, read_record, write_record
from contract.result import (
    TERMINATION_LOG_LIMIT,
    BenchResult,
    OkResult,
    result_line,
    without_samples,
)
from contract.samples import encode
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store
from tests.collector.gathering import (
    GROUPS,
    Collect,
    Obj,
    finish_all,
    grouped_job,
    older_revision,
)
from tests.collector.stored import succeeded

SAMPLES = encode([840_000 + (i * 7919) % 90_000 for i in range(1180)])


def _harvested(
    job: Obj, expected: ExpectedJob, pod: Obj, log: str | None = None
) -> list[StoredVariant]:
    (state, _) = index_states(job, [pod])
    return harvest(state, expected.slots(0), None, lambda name: log).stored


def test_every_result_of_a_group_is_stored_under_its_own_variant() -> None:
    job, expected = grouped_job()
    results = [objects.ok_result(job, i, p50_ms=1.0 + i) for i in GROUPS[0]]
    stored = _harvested(job, expected, objects.group_pod(job, 0, results))
    assert [(v.index, v.state, v.result_source) for v in stored] == [
        (0, "succeeded", "termination-message"),
        (1, "succeeded", "termination-message"),
        (2, "succeeded", "termination-message"),
    ]
    assert [v.result.variant for v in stored if v.result] == [v.variant for v in stored]


def test_a_compacted_summary_is_completed_from_the_log_lines() -> None:
    job, expected = grouped_job()
    results: list[BenchResult] = [
        objects.ok_result(job, i).model_copy(update={"samples": SAMPLES}) for i in GROUPS[0]
    ]
    pod = objects.group_pod(job, 0, results)
    message = pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
    assert len(message.encode()) <= TERMINATION_LOG_LIMIT
    log = objects.starting_log(job, 0) + "".join(result_line(r) for r in results)
    stored = _harvested(job, expected, pod, log)
    assert [(v.state, v.result_source) for v in stored] == [("succeeded", "log")] * 3
    assert all(isinstance(v.result, OkResult) and v.result.samples for v in stored)


def test_a_group_killed_after_its_first_variant_keeps_it_and_fails_the_rest() -> None:
    job, expected = grouped_job()
    first = objects.ok_result(job, 0)
    # The last of its three attempts (backoffLimitPerIndex 2): the index has failed for good.
    pod = objects.group_pod(job, 0, [first], exit_code=137, reason="OOMKilled", failures=2)
    stored = _harvested(job, expected, pod, objects.starting_log(job, 0) + result_line(first))
    assert [(v.index, v.state, v.reason) for v in stored] == [
        (0, "succeeded", None),
        (1, "failed", "OOMKilled"),
        (2, "failed", "OOMKilled"),
    ]
    assert stored[0].result == without_samples(first), "the message has it: no log read"
    second = stored[1]
    assert second.variant is not None and second.result is None
    assert f"the pod ended before variant {second.variant.id} (index 1: " in second.explanation
    assert "(1 of its group had): retries exhausted after 3 attempts: OOMKilled: the " in (
        second.explanation
    )


def test_a_result_for_a_variant_outside_the_group_is_wrong_variant() -> None:
    job, expected = grouped_job()
    foreign = objects.ok_result(job, 4)
    results = [objects.ok_result(job, 0), foreign, objects.ok_result(job, 2)]
    stored = _harvested(job, expected, objects.group_pod(job, 0, results))
    assert [(v.index, v.state, v.reason) for v in stored] == [
        (0, "succeeded", None),
        (1, "failed", WRONG_VARIANT),
        (2, "succeeded", None),
    ]
    config = objects.run_config(job)
    assert f"the result is for variant {config.variants[4].id} (index 4: " in stored[1].explanation
    assert f"config.json runs variant {config.variants[1].id} (index 1: " in stored[1].explanation
    kept = stored[1].result
    assert kept is not None and kept.variant == foreign.variant, "what arrived is kept"


def test_a_failing_variant_is_its_own_failure_in_a_failed_pod() -> None:
    job, expected = grouped_job()
    error = objects.error_result(job, "unsupported_variant", "no linear layer to quantize")
    error = error.model_copy(update={"variant": objects.ok_result(job, 1).variant})
    results = [objects.ok_result(job, 0), error, objects.ok_result(job, 2)]
    pod = objects.group_pod(job, 0, results, exit_code=6, reason="Error")
    stored = _harvested(job, expected, pod)
    assert [(v.state, v.reason) for v in stored] == [
        ("succeeded", None),
        ("failed", "unsupported_variant"),
        ("succeeded", None),
    ]
    assert "runner error unsupported_variant: no linear layer" in stored[1].explanation


def test_progress_counts_variants_not_pods() -> None:
    job, expected = grouped_job()
    pods = [objects.group_pod(job, 0, [objects.ok_result(job, i) for i in GROUPS[0]])]
    pods.append(objects.running_pod(job, 1))
    states = index_states(job, pods)
    counts = summary_counts(states, {0: "succeeded", 1: "failed"}, expected.positions)
    assert (counts.succeeded, counts.failed, counts.running, counts.total) == (2, 1, 3, 6)
    assert expected.variant_count == 6 and expected.completions == 2


def test_what_ended_attempts_measured_is_harvested_from_the_first_that_did() -> None:
    """Attempt 1 measured variants 0 and 1, then the kernel killed it at 2; its retry (the
    last allowed) measured 0 again and died. Both are ended attempts of a failed index: each
    variant is taken from the first attempt that measured it, and the retry's end decides
    only variant 2."""
    job, expected = grouped_job()
    measured = [objects.ok_result(job, i, p50_ms=1.0 + i) for i in (0, 1)]
    first = objects.group_pod(job, 0, measured, exit_code=137, reason="OOMKilled", failures=1)
    again = objects.ok_result(job, 0, p50_ms=9.0)
    retry = objects.group_pod(job, 0, [again], exit_code=1, reason="Error", failures=2)
    (state, _) = index_states(job, [first, retry])
    assert state.phase == "failed"
    attempts = ended_attempts(state)
    assert [pod.name for pod in attempts] == [first["metadata"]["name"]]
    stored = harvest_earlier(state, attempts, expected.slots(0), lambda name: None)
    assert [(v.index, v.state, v.pod) for v in stored] == [
        (0, "succeeded", first["metadata"]["name"]),
        (1, "succeeded", first["metadata"]["name"]),
    ]
    assert stored[1].result == without_samples(measured[1])
    assert stored[1].explanation.startswith(
        f"succeeded in an earlier attempt, pod {first['metadata']['name']}, which then ended: "
    )
    assert "OOMKilled" in stored[1].explanation
    final = harvest(state, expected.slots(0), None, lambda name: None).stored
    assert [(v.index, v.state) for v in final] == [(0, "succeeded"), (1, "failed"), (2, "failed")]


def test_while_a_retry_is_due_the_failed_attempt_is_an_ended_one() -> None:
    """Between a pod's failure and its replacement the failed pod is the index's latest
    attempt: what it measured is harvested now, not when the index ends."""
    job, expected = grouped_job()
    first = objects.group_pod(
        job, 0, [objects.ok_result(job, 0)], exit_code=137, reason="OOMKilled"
    )
    (state, _) = index_states(job, [first])
    assert state.phase not in ("succeeded", "failed"), "a retry is due"
    attempts = ended_attempts(state)
    assert [pod.name for pod in attempts] == [first["metadata"]["name"]]
    stored = harvest_earlier(state, attempts, expected.slots(0), lambda name: None)
    assert [(v.index, v.state) for v in stored] == [(0, "succeeded")]


def test_a_disrupted_attempt_still_terminating_has_not_ended() -> None:
    """Preempted, its runner still handing over what it finished (SIGTERM): its results
    arrive with its end, and only then is it harvested."""
    job, _ = grouped_job()
    running = objects.running_pod(job, 0)
    running["status"]["conditions"].insert(
        0,
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
    )
    (state, _) = index_states(job, [running])
    assert state.pod is not None and state.pod.phase == "preempted"
    assert ended_attempts(state) == ()


def test_clean_keeps_a_grouped_job_until_every_variant_is_stored(tmp_path: Path) -> None:
    """Two pods of three variants: two stored variants are as many as its completion
    indexes, but not its variants (synth's annotation says six)."""
    job, expected = grouped_job()
    finished = objects.complete(job)
    assert finished["metadata"]["annotations"][VARIANTS_ANNOTATION] == "6"
    identity = expected.identity
    with open_store(tmp_path / "results.sqlite") as store:
        store.add(identity, [succeeded(0), succeeded(1)])
        (decision,) = decide(tmp_path, store, identity.cluster, [finished], set())
        assert decision.action == "keep"
        assert "but its results are not stored" in decision.why
        store.add(identity, [succeeded(i) for i in range(2, 6)])
        (decision,) = decide(tmp_path, store, identity.cluster, [finished], set())
        assert decision.action == "delete"


def _older_grouped(annotated: bool = True) -> Obj:
    """A finished Job of an older revision whose pods ran GROUPS, as the cluster holds it
    (dist/ has moved on to one variant per pod), with synth's groups annotation or without."""
    job, _ = grouped_job()
    old = older_revision(job)
    if annotated:
        old["metadata"]["annotations"][GROUPS_ANNOTATION] = groups_text(GROUPS)
    return old


def _add_grouped_pods(api: FakeApiServer, job: Obj) -> None:
    for index, group in enumerate(GROUPS):
        api.add("pods", objects.group_pod(job, index, [objects.ok_result(job, i) for i in group]))
    api.add("jobs", objects.complete(job))


def test_a_grouped_job_left_from_an_older_revision_keeps_every_result(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: read with today's dist/ (one variant per pod), two pods of three variants
    gave two results; the record said "complete, 2 ok", and clean would have deleted it."""
    finish_all(api, job)
    old = _older_grouped()
    _add_grouped_pods(api, old)
    run = collector("gather", "--timeout", "1m")
    assert run.exit_code == 0, run.output
    record = read_record(record_path(repo, "cpu-smoke", "us-east", old["metadata"]["name"]))
    assert [(v.index, v.state) for v in record.variants] == [(i, "succeeded") for i in range(6)]
    assert [v.result.variant.index for v in record.variants if v.result and v.result.variant] == [
        *range(6)
    ]
    assert f"{old['metadata']['name']}: complete, 6 ok, 0 failed" in run.stdout


def test_a_grouped_job_that_does_not_say_its_groups_is_left_alone(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """A Job of a synth before the groups annotation: which pod ran which variant is not
    known from the cluster, so nothing is filed, and clean keeps the Job."""
    finish_all(api, job)
    old = _older_grouped(annotated=False)
    _add_grouped_pods(api, old)
    run = collector("gather", "--timeout", "1m")
    assert run.exit_code == 0, run.output
    name = old["metadata"]["name"]
    assert not record_path(repo, "cpu-smoke", "us-east", name).exists()
    assert f"Job {name} is not in dist/ any more and runs 6 variants in 2 pods" in run.stderr
    cleaned = collector("clean", "--dry-run")
    assert f"Job {name}: would keep: not in dist/ and finished, but its results are not " in (
        cleaned.output
    )
    assert "says not which each pod ran, so gather cannot file them" in cleaned.output


def test_clean_does_not_take_a_short_record_for_every_variant(tmp_path: Path) -> None:
    """A record that an older gather wrote for two of a grouped Job's six variants."""
    job, expected = grouped_job()
    finished = objects.complete(job)
    identity = expected.identity
    short = JobRecord(
        **identity.model_dump(), outcome="complete", variants=(succeeded(0), succeeded(3))
    )
    write_record(tmp_path, short)
    with open_store(tmp_path / "results.sqlite") as store:
        (decision,) = decide(tmp_path, store, identity.cluster, [finished], set())
        assert decision.action == "keep"
        store.add(identity, [succeeded(i) for i in (1, 2, 4, 5)])
        (decision,) = decide(tmp_path, store, identity.cluster, [finished], set())
        assert decision.action == "delete", "the record and the database hold all six"
