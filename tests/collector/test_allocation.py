"""What the cluster allocated to each variant, read from its pods as Kubernetes 1.33 returns
them (standin/objects.py): scheduled to the runner's end, every attempt counted, times the
GPUs or CPUs the pod held, split among a group's variants by their own times; and what of
it is estimated, said."""

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from collector.allocation import (
    AttemptLog,
    allocations,
    attempt_time,
    job_times,
    own_seconds,
    pod_time,
)
from collector.harvest import harvest
from collector.indexes import index_states
from contract.allocation import Allocation
from contract.records import read_record
from contract.result import BenchResult, OkResult, PhaseTiming
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store
from tests.collector.gathering import (
    GROUPS,
    NAMESPACE,
    Collect,
    Obj,
    gather_once,
    grouped_job,
    record_of,
    requests,
    stopped_mid_group,
)

# standin/objects.py: a pod is bound 1 s after its creation, its runner starts 20 s after.
SUCCEEDED_S = 20 + 95 - 1
NOW = objects.START + timedelta(days=1)
"""The collector's clock: a day after the stand-in's Jobs were created."""
"""A succeeded pod's time on its node: its runner ran 95 s."""
ONE_CPU_POD = Allocation(
    seconds=SUCCEEDED_S,
    pod_seconds=SUCCEEDED_S,
    share=1,
    devices=4,
    unit="cpu",
    device_type="cpu",
    capacity="on-demand",
    attempts=1,
)
"""What a succeeded pod of one variant, requesting 4 CPUs on demand, held."""


def _seconds(pod: Obj) -> float:
    """The pod's time on its node, as the API says it (what the tests check against)."""
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    parse = datetime.fromisoformat
    return (parse(finished) - parse(scheduled["lastTransitionTime"])).total_seconds()


def _allocated(job: Obj, pods: list[Obj], seen: list[Obj] | None = None) -> Allocation:
    """The allocation of index 0 of `job`, its attempts `seen` by gather (all of `pods` by
    default; the Job's status counts them all)."""
    log = AttemptLog()
    log.note(pods if seen is None else seen)
    (state, *_) = index_states(job, pods)
    time = pod_time(log.attempts(0), state.attempts, 0, job_times(job), NOW)
    return allocations(time, {0: None}, "cpu", "on-demand")[0]


def test_a_pod_of_one_variant_holds_its_cpus_from_scheduled_to_the_runners_end(job: Obj) -> None:
    pod = objects.succeeded_pod(job, 0)
    allocation = _allocated(job, [pod])
    assert _seconds(pod) == SUCCEEDED_S
    assert allocation == ONE_CPU_POD
    assert allocation.device_seconds == 4 * SUCCEEDED_S


def test_a_gpu_pod_counts_its_gpus_not_its_cpus() -> None:
    job = objects.job("nightly-spot", target="t4-spot")
    found = attempt_time(objects.succeeded_pod(job, 0))
    assert (found.devices, found.unit) == (1, "gpu")


def test_every_attempt_of_an_index_is_counted(job: Obj) -> None:
    failed = objects.failed_pod(job, 0)
    retry = objects.succeeded_pod(job, 0, failures=1)
    allocation = _allocated(job, [failed, retry])
    assert (allocation.seconds, allocation.attempts) == (_seconds(failed) + SUCCEEDED_S, 2)
    assert allocation.estimate == ()


def test_a_preempted_pod_gather_saw_counts_after_it_is_deleted(job: Obj) -> None:
    """A preempted pod is deleted once the Job controller has counted it: what gather saw
    of it is all that is left."""
    preempted = objects.preempted_pod(job, 0)
    retry = objects.succeeded_pod(job, 0, ignored=1)
    log = AttemptLog()
    log.note([preempted])
    log.note([retry])
    (state, *_) = index_states(job, [retry])
    time = pod_time(log.attempts(0), state.attempts, 0, job_times(job), NOW)
    assert (time.seconds, time.attempts, time.estimate) == (
        _seconds(preempted) + SUCCEEDED_S,
        2,
        (),
    )


def test_an_attempt_gone_before_gather_saw_it_makes_a_lower_bound_and_says_so(job: Obj) -> None:
    retry = objects.succeeded_pod(job, 0, ignored=1)
    allocation = _allocated(job, [retry])
    assert (allocation.seconds, allocation.attempts) == (SUCCEEDED_S, 1)
    assert allocation.estimate == (
        "1 of 2 attempts' pods were gone before gather saw them (a preempted or evicted pod is "
        "deleted): not counted, so this is a lower bound",
    )


def test_a_pod_deleted_before_gather_saw_it_end_counts_to_its_deletion_deadline(
    job: Obj,
) -> None:
    running = objects.deadline_killed_pod(job, 0, terminated=False)
    found = attempt_time(running)
    assert found.finished is None and found.deleting is not None and found.scheduled is not None
    time = pod_time([found], 1, 0, job_times(job), NOW)
    assert time.seconds == (found.deleting - found.scheduled).total_seconds()
    assert time.estimate == (
        f"pod {found.pod} was not seen to end: counted to its deletion deadline "
        "(deletionTimestamp)",
    )


def test_a_pod_never_scheduled_held_nothing(job: Obj) -> None:
    allocation = _allocated(job, [objects.unschedulable_pod(job, 0)])
    assert (allocation.seconds, allocation.attempts, allocation.estimate) == (0, 0, ())


def _with_own_time(result: BenchResult, measure_s: float) -> BenchResult:
    assert isinstance(result, OkResult) and result.timings is not None
    timings = result.timings.model_copy(
        update={"measure": PhaseTiming(iterations=100, seconds=measure_s, stopped_by="minimums")}
    )
    return result.model_copy(update={"timings": timings})


def test_a_groups_pod_time_is_split_by_the_variants_own_times() -> None:
    job, expected = grouped_job()
    # Own times (load to the end of the accuracy pass): 0.2525 s plus the measurement.
    measured = zip(GROUPS[0], (1, 2, 5), strict=True)
    results = [_with_own_time(objects.ok_result(job, i), s) for i, s in measured]
    pod = objects.group_pod(job, 0, results)
    (state, _) = index_states(job, [pod])
    harvested = harvest(state, expected.slots(0), None, lambda name: None).stored
    own = {variant.index: own_seconds(variant.result) for variant in harvested}
    assert None not in own.values()
    log = AttemptLog()
    log.note([pod])
    shares = allocations(pod_time(log.attempts(0), 1, 0, job_times(job), NOW), own, "cpu", None)
    assert sum(share.seconds or 0 for share in shares.values()) == pytest.approx(_seconds(pod))
    known = {p: s for p, s in own.items() if s is not None}
    assert [shares[p].share for p in GROUPS[0]] == pytest.approx(
        [known[p] / sum(known.values()) for p in GROUPS[0]]
    )
    assert shares[2].share > shares[1].share > shares[0].share
    assert all(share.estimate == () for share in shares.values())


@pytest.mark.parametrize(
    ("own", "shares", "said"),
    [
        ({0: 2.0, 1: None, 2: 4.0}, [2 / 9, 3 / 9, 4 / 9], "its share is the group's mean"),
        ({0: None, 1: None}, [1 / 2, 1 / 2], "the pod's variants share alike"),
    ],
)
def test_a_variant_without_its_own_time_gets_an_estimated_share(
    own: dict[int, float | None], shares: list[float], said: str
) -> None:
    job = objects.job()
    time = pod_time([attempt_time(objects.succeeded_pod(job, 0))], 1, 0, job_times(job), NOW)
    found = allocations(time, own, "cpu", None)
    assert [found[p].share for p in own] == pytest.approx(shares)
    unknown = [p for p, s in own.items() if s is None]
    assert all(found[p].estimate[-1].endswith(said) for p in unknown)
    assert all(found[p].estimate == () for p in own if p not in unknown)


def _when_listed(api: FakeApiServer, then: Callable[[], None]) -> None:
    """Run `then` in a thread once gather has listed the pods and watches them: a list
    request is recorded before its answer is built, so a change made when it is seen may or
    may not be in that answer; one made once the watch is asked for reaches gather as an
    event, whatever the load."""

    def wait() -> None:
        while not any(r.is_watch and r.path.endswith("/pods") for r in api.requests):
            time.sleep(0.05)
        then()

    threading.Thread(target=wait, daemon=True).start()


def test_gather_counts_a_preempted_pod_it_saw_before_it_was_deleted(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    for index in (0, 1, 3, 4, 5):
        api.add("pods", objects.succeeded_pod(job, index))
    preempted = objects.preempted_pod(job, 2)
    api.add("pods", preempted)
    api.add("jobs", objects.job_status(job, active=1, completed=[0, 1, 3, 4, 5]))
    retry = objects.succeeded_pod(job, 2, ignored=1)

    def preempted_then_retried() -> None:
        # Released, the deletion could reach gather with the first list, before it saw the
        # pod: held, gather sees the pod, then the Job's end, then a fresh list without it.
        api.hold("pods")
        api.delete("pods", NAMESPACE, preempted["metadata"]["name"])
        api.add("pods", retry)
        api.update("jobs", objects.complete(job))

    _when_listed(api, preempted_then_retried)
    run = collector("gather", "--timeout", "30s")
    assert run.exit_code == 0, run.output
    record = read_record(record_of(repo, job))
    allocated = {variant.index: variant.allocation for variant in record.variants}
    assert allocated[0] == ONE_CPU_POD
    assert allocated[2] is not None
    assert allocated[2].seconds == _seconds(preempted) + SUCCEEDED_S
    assert (allocated[2].attempts, allocated[2].estimate) == (2, ())
    with open_store(repo / ".benchfleet" / "results.sqlite") as store:
        stored = store.variants("us-east", NAMESPACE, job["metadata"]["name"])
    assert [variant.allocation for variant in stored] == list(allocated.values())


def test_a_completed_index_whose_retry_the_pod_watch_has_not_shown_is_read_from_a_fresh_list(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The Job's completion reaches gather before its retry pod does (two watches, unordered):
    the pod watch shows the preempted pod deleted and holds the retry back. Index 2 is read
    from one fresh list of the Job's pods, never stored as a success without its pod."""
    for index in (0, 1, 3, 4, 5):
        api.add("pods", objects.succeeded_pod(job, index))
    preempted = objects.preempted_pod(job, 2)
    api.add("pods", preempted)
    api.add("jobs", objects.job_status(job, active=1, completed=[0, 1, 3, 4, 5]))
    retry = objects.succeeded_pod(job, 2, ignored=1)

    def retried_behind_the_pod_watch() -> None:
        api.delete("pods", NAMESPACE, preempted["metadata"]["name"])
        api.hold("pods")
        api.add("pods", retry)
        api.update("jobs", objects.complete(job))

    _when_listed(api, retried_behind_the_pod_watch)
    run = collector("gather", "--timeout", "30s")
    assert run.exit_code == 0, run.output
    (variant,) = [v for v in read_record(record_of(repo, job)).variants if v.index == 2]
    assert (variant.state, variant.explanation) == ("succeeded", "succeeded")
    assert variant.pod == retry["metadata"]["name"]
    assert requests(api)["GET pods"] == 2, "the first list, and one to confirm index 2"


def test_a_completed_index_whose_pod_a_fresh_list_lacks_too_is_stored_without_it(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The pod watch never shows index 2's pod: only when the fresh list lacks it too is it
    gone, said so, and not asked for again."""
    for index in (0, 1, 3, 4, 5):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.job_status(job, active=1, completed=[0, 1, 3, 4, 5]))
    retry = objects.succeeded_pod(job, 2)

    def succeeded_and_deleted() -> None:
        api.hold("pods")
        api.add("pods", retry)
        api.update("jobs", objects.complete(job))
        api.delete("pods", NAMESPACE, retry["metadata"]["name"])

    _when_listed(api, succeeded_and_deleted)
    run = collector("gather", "--timeout", "30s")
    assert run.exit_code == 1 and "1 variant failed" in run.output, run.output
    (variant,) = [v for v in read_record(record_of(repo, job)).variants if v.index == 2]
    assert variant.state == "failed"
    assert variant.explanation.endswith("no pod is left to read it from")
    assert requests(api)["GET pods"] == 2, "the first list, and one to confirm index 2"


def test_a_gather_after_the_preemption_says_its_number_is_a_lower_bound(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index, ignored=int(index == 2)))
    api.add("jobs", objects.complete(job))
    assert collector("gather", "--no-wait").exit_code == 0
    (variant,) = [v for v in read_record(record_of(repo, job)).variants if v.index == 2]
    assert variant.allocation is not None and variant.allocation.seconds == SUCCEEDED_S
    assert (
        "1 of 2 attempts' pods were gone before gather saw them" in variant.allocation.estimate[0]
    )


def test_a_retried_groups_variants_stored_early_get_their_share_once_it_ends(
    api: FakeApiServer, tmp_path: Path
) -> None:
    """Two variants of a group measured by an attempt that was then OOMKilled are stored at
    once, before their index has ended; its retry measures the third. All three share both
    attempts' time."""
    job, expected = grouped_job()
    _, first = stopped_mid_group(api, job)
    with open_store(tmp_path / "results.sqlite") as store:
        gather_once(api, store, tmp_path, expected)
        identity = expected.identity
        early = store.variants(identity.cluster, identity.namespace, identity.job)
        assert [(v.index, v.allocation) for v in early if v.index < 3] == [(0, None), (1, None)]
        retry = objects.group_pod(job, 0, [objects.ok_result(job, 2)], failures=1)
        api.add("pods", retry)
        api.update("jobs", objects.complete(job))
        gather_once(api, store, tmp_path, expected)
        stored = store.variants(identity.cluster, identity.namespace, identity.job)
    both = _seconds(first) + _seconds(retry)
    shares = [v.allocation for v in stored if v.index in GROUPS[0]]
    assert all(share is not None and share.pod_seconds == both for share in shares)
    assert sum(share.seconds or 0 for share in shares if share) == pytest.approx(both)
    assert all(share and share.attempts == 2 and share.estimate == () for share in shares)


def test_a_pod_time_without_a_zone_is_utc_not_a_failure_of_the_gather(job: Obj) -> None:
    """Issue #31: one pod time without a zone stopped the whole gather (TypeError comparing a
    naive time with aware ones). The API's times are UTC."""
    pod = objects.succeeded_pod(job, 0)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    terminated["finishedAt"] = terminated["finishedAt"].removesuffix("Z")
    assert _allocated(job, [pod]) == ONE_CPU_POD


def _terminated(pod: Obj) -> Obj:
    terminated: Obj = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    return terminated


def _bound(pod: Obj) -> Obj:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def _unknown(job: Obj, pod: Obj) -> Allocation:
    allocation = _allocated(job, [pod])
    assert (allocation.seconds, allocation.pod_seconds, allocation.device_seconds) == (
        None,
        None,
        None,
    )
    assert allocation.estimate[-1] == "so its time is unknown"
    return allocation


def test_a_finish_before_binding_makes_the_time_unknown_not_0(job: Obj) -> None:
    """Issue #31: a node whose clock ran behind the control plane's counted 0."""
    pod = objects.succeeded_pod(job, 0)
    _terminated(pod)["finishedAt"] = objects.stamp(-3600)
    allocation = _unknown(job, pod)
    assert allocation.estimate[0] == (
        f"pod {pod['metadata']['name']} says it ended (2025-06-01T01:00:00Z) 1 h 0 min before it "
        "was bound (2025-06-01T02:00:06Z): its node's clock and the control plane's disagree"
    )
    assert allocation.devices == 4 and allocation.unit == "cpu"


def test_a_pod_that_ran_with_no_time_of_binding_is_unknown_not_0(job: Obj) -> None:
    """Issue #31: a pod without its PodScheduled condition counted 0, as if never bound."""
    pod = objects.succeeded_pod(job, 0)
    pod["status"]["conditions"].remove(_bound(pod))
    allocation = _unknown(job, pod)
    assert (
        "ran its runner (at 2025-06-01T02:00:25Z) but says not when it was bound"
        in (allocation.estimate[0])
    )


def test_a_pod_bound_in_1970_is_unknown_not_57_years(job: Obj) -> None:
    """Issue #31: a binding in 1970 counted 57 years of 4 CPUs (about USD 79,800)."""
    pod = objects.succeeded_pod(job, 0)
    _bound(pod)["lastTransitionTime"] = "1970-01-01T00:00:00Z"
    allocation = _unknown(job, pod)
    assert allocation.estimate[0].startswith(
        f"pod {pod['metadata']['name']} says it was bound (1970-01-01T00:00:00Z) 20240 d 2 h "
        "before the pod was created (2025-06-01T02:00:05Z)"
    )


def test_a_pod_bound_before_its_job_was_created_is_unknown(job: Obj) -> None:
    """Its own creation time can be as wrong as its binding (a hand-made or restored pod)."""
    pod = objects.succeeded_pod(job, 0)
    _bound(pod)["lastTransitionTime"] = "1970-01-01T00:00:00Z"
    pod["metadata"]["creationTimestamp"] = "1970-01-01T00:00:00Z"
    assert "before its Job was created" in _unknown(job, pod).estimate[0]


def test_a_finish_ahead_of_the_collectors_clock_is_unknown_with_the_skew(job: Obj) -> None:
    """Issue #31: a node three days ahead counted three days more than its pod held."""
    pod = objects.succeeded_pod(job, 0)
    _terminated(pod)["finishedAt"] = (NOW + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    allocation = _unknown(job, pod)
    assert (
        "ended at 2025-06-05T02:00:00Z, 3 d 0 h ahead of the collector's clock"
        in (allocation.estimate[0])
    )


def test_clocks_within_the_tolerance_are_counted(job: Obj) -> None:
    """The API's times are whole seconds: a finish a second before binding is 0 s, read."""
    pod = objects.succeeded_pod(job, 0)
    _terminated(pod)["finishedAt"] = objects.stamp(5)  # bound at 6
    allocation = _allocated(job, [pod])
    assert (allocation.seconds, allocation.estimate) == (0, ())


def test_an_index_whose_pod_gather_never_saw_is_unknown_on_its_jobs_devices() -> None:
    """Issue #31: a completed index with no pod seen counted 0 device-seconds, labelled cpu
    on a GPU Job."""
    job = objects.job("nightly-spot", target="t4-spot")
    done = objects.complete(job)
    (state, *_) = index_states(done, [])
    time = pod_time([], state.attempts, 0, job_times(done), NOW)
    assert (time.seconds, time.devices, time.unit) == (None, 1, "gpu")
    assert time.estimate == (
        "no pod of index 0 was seen (gone before gather looked): its time is unknown",
    )
