"""What a workflow's runs say: each variant's latency with a confidence interval, the
comparisons the design note asks for (GPUs side by side, the best configuration of a sweep,
a ranking of models) and the change from an earlier run ("today vs last week").

`build_report` is pure: stored rows in, a frozen `Report` out, no database or cluster.
`report.analysis` adds what it decides and costs, `report.layout` lays it out in tables, and
`report.text`, `report.markdown`, `report.csv`, `report.json` and `report.html` write it.
"""

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import total_ordering
from operator import attrgetter
from typing import Final, Literal, NamedTuple, Self

from contract.accuracy import Accuracy, DrawnInput, default_gate, judge
from contract.allocation import Allocation
from contract.clocks import ahead_by
from contract.fingerprint import Fingerprint, stack_differences
from contract.instant import instant
from contract.order_stats import paired_ratio
from contract.params import ParamValue
from contract.pricing import Pricing
from contract.records import Reuses
from contract.result import (
    Energy,
    LatencyStats,
    OkResult,
    Paired,
    Rounds,
    Scenario,
    StageLatency,
    StageName,
    Validity,
)
from contract.samples import Samples
from contract.variant import (
    RUN_SETTINGS,
    SETTING_FIELDS,
    SETTINGS,
    VariantRef,
    VariantSettings,
    heading,
    worded,
)
from report import intervals
from report.estimates import PlanCheck, plan_checks
from report.intervals import MedianEstimate, Ratio
from report.machines import MachineLack, machine_lacks
from report.runner_image import runner_words
from report.stacks import split_by_stack
from report.startup import Startup, startup
from store.database import StoredRun
from store.history import CURRENT, SpecRevision

REPORT_SCHEMA_VERSION: Final = 8
"""Bumped when a field of `to_json`'s output changes meaning or goes away (6: a variant's
row is written once, in `variants`, and referred to elsewhere by its index there; 7: a
variant's `latency.p99_9_ms` and `is_p99_9_reliable`, its fixed-rate `scenario`, and the
control answers, `control`, first; 8: a baseline's `changes` hold only variants of the same
stack, or of an unknown one, those of another stack in `other_stack`, unless
`across_stacks`)."""
DEFAULT_REGRESSION_THRESHOLD: Final = 0.05

Verdict = Literal["regression", "improvement", "inconclusive", "unchanged"]
"""With neither run in doubt (see `VariantRow.doubts`): a change beyond the threshold whose
ratio's CI excludes 1 is a regression or an improvement; a CI wholly within the threshold is
unchanged; anything else, and any run in doubt, is inconclusive."""
VERDICT_ORDER: Final[dict[Verdict, int]] = {
    "regression": 0,
    "improvement": 1,
    "inconclusive": 2,
    "unchanged": 3,
}


@total_ordering
class VariantKey(VariantSettings):
    """What makes two runs the same variant: where it ran and its settings, for
    de-duplication and for matching baselines; ordered by KEY_FIELDS."""

    cluster: str
    target: str

    @classmethod
    def of(cls, cluster: str, target: str, settings: VariantSettings) -> Self:
        return cls.model_validate(
            {"cluster": cluster, "target": target}
            | {name: getattr(settings, name) for name in SETTING_FIELDS}
        )

    def fields(self) -> dict[str, object]:
        """Each of KEY_FIELDS, by name, in order."""
        return dict(zip(KEY_FIELDS, _in_order(self), strict=True))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, VariantKey):
            return NotImplemented
        # Reports sort up to 10,000 keys several times: no dicts per comparison.
        return bool(_in_order(self) < _in_order(other))

    def value(self, name: str) -> str:
        """One field, by name, as text."""
        return str(getattr(self, name))

    def label(self, names: Sequence[str]) -> str:
        """The fields `names`, for a reader: "fp16 int8-weight-only batch 64"."""
        return " ".join(worded(name, self.value(name)) for name in names)


KEY_FIELDS: Final = ("cluster", "target", *SETTING_FIELDS)
_in_order: Final = attrgetter(*KEY_FIELDS)


@dataclass(frozen=True)
class Repeats:
    """A variant's runs in separate pods (`benchmark.repeats`): the row's number is their
    median, and how far they spread is the noise between runs."""

    p50s_ms: tuple[float, ...]
    """Each run's median per batch, in repeat order."""
    jobs: tuple[str, ...]
    """The Job of each run, in the same order."""

    @property
    def spread(self) -> float:
        """The largest p50 over the smallest, less 1: a change within it is not told apart
        from running the same thing again."""
        return max(self.p50s_ms) / min(self.p50s_ms) - 1


AccuracyState = Literal["passed", "accuracy_failed", "not measured"]
"""What a variant's accuracy gate says of its run: "not measured" is never passing, and
counts a comparison that is not meaningful (a constant reference) too, which its description
says."""
ACCURACY_ORDER: Final[dict[AccuracyState, int]] = {
    "passed": 0,
    "not measured": 1,
    "accuracy_failed": 2,
}
"""Which may be a best configuration first: a known pass, then the unknown, then a known
failure (only where nothing else is left)."""


@dataclass(frozen=True)
class AccuracyCheck:
    """A run's accuracy against its gate (contract.accuracy): the gate its Job said when it
    was stored, else its precision's and quantization's default."""

    state: AccuracyState
    accuracy: Accuracy | None = None
    """The numbers: the worst of each over the outputs (None: not measured)."""
    failures: tuple[str, ...] = ()
    """Each threshold missed, in words with both numbers."""

    @property
    def not_meaningful(self) -> bool:
        """Compared with a constant reference: counted as not measured, said apart."""
        return self.accuracy is not None and self.accuracy.not_meaningful is not None

    def describe(self) -> str:
        """The check in a few words, for a table cell."""
        accuracy = self.accuracy
        if self.state == "accuracy_failed":
            return f"accuracy_failed: {'; '.join(self.failures)}"
        if accuracy is not None and accuracy.not_meaningful is not None:
            return f"not meaningful ({accuracy.not_meaningful})"
        if self.state == "not measured" or accuracy is None:
            why = accuracy.error if accuracy and accuracy.error else "a runner before accuracy"
            return f"not measured ({why})"
        numbers = [
            f"{name} {value:.6g}"
            for name, value in (("cosine", accuracy.cosine), ("rel", accuracy.max_rel_error))
            if value is not None
        ]
        return f"passed ({', '.join(numbers)})" if numbers else "passed"


NOT_MEASURED: Final = AccuracyCheck("not measured")


@dataclass(frozen=True)
class RunRounds:
    """What one run of a variant measured in interleaved rounds brings to paired ratios."""

    job: str
    rounds: Rounds | None
    """Its block median in each round, under the rounds' name: pairs it with any variant of
    the same rounds (None in results of runners before `rounds`)."""
    paired: Paired | None
    """Its ratio to its pod's first variant of the model: all that older results pair by."""


@dataclass(frozen=True)
class VariantRow:
    """One measured variant: its run in the newest reported Job that ran it, which succeeded;
    with repeats, the median of its runs in the newest reported Job of each repeat."""

    key: VariantKey
    variant_id: str
    job: str
    """The Job the number came from: with several revisions reported, not all rows share it."""
    finished_at: datetime | None
    device_name: str | None
    """The device as the runner saw it ("NVIDIA A100-SXM4-80GB", a CPU model)."""
    latency: LatencyStats
    """Per iteration, i.e. per batch."""
    estimate: MedianEstimate
    """The median per batch with its 95 % CI: from the samples where the result has them."""
    is_p99_reliable: bool
    """False when too few iterations lie beyond p99 (or the result does not say)."""
    is_p99_9_reliable: bool
    """As `is_p99_reliable`, for p99.9 (10,000 iterations)."""
    is_noisy: bool | None
    """IQR above 10 % of the median, as the runner judged it; None when it did not say."""
    mean_samples_per_s: float | None
    """The runner's throughput: samples over the timed loop's total time, i.e. at the mean."""
    doubts: tuple[str, ...]
    """Why this run's number must not decide a comparison: the runner's validity flags that
    are set (noisy, contended, CPU or GPU throttled, stopped early), in words."""
    quantized: str | None = None
    """How much of the model a quantization reached, as the runner proved it ("1 of 1
    Linear; conv2d x3 not"); None without quantization or where the result does not say."""
    paired: Paired | None = None
    """Where its pod measured it in rounds alternating with another variant of the model
    (`benchmark.interleave`): the ratio of their latencies, round by round."""
    flags: tuple[str, ...] = ()
    """The runner's validity flags that are set, by field name (`contended`, `noisy`): what
    the run's verdict counts and advises on."""
    flag_reasons: tuple[str, ...] = ()
    """The runner's reasons for its flags ("IQR is 37% of the median (over 10%)"): said once
    per run, not in every verdict the flags make inconclusive."""
    repeats: Repeats | None = None
    """Its several runs, where the spec repeats it and more than one was measured; the row's
    other fields are then those of the median run, its latency and estimate scaled to the
    median of the runs' p50s."""
    rounds: tuple[RunRounds, ...] = ()
    """Each of its runs that was measured in interleaved rounds, in repeat order: what pairs
    it with every other variant of the same rounds, run by run (`_paired_ratio`)."""
    accuracy: AccuracyCheck = NOT_MEASURED
    """Its outputs against the untouched program's, judged by its gate; with repeats, the
    worst of its runs'."""
    allocations: tuple[Allocation | None, ...] = ()
    """What the cluster allocated to each of its runs, in repeat order (None: not recorded,
    for runs stored before it and local runs): what its cost is summed from."""
    energy: Energy | None = None
    """The GPU's energy over its timed loop (with repeats, the median run's); None in
    results of runners before it."""
    throttle_reasons: tuple[str, ...] = ()
    """The clock-event reasons NVML saw during that loop: shown beside its energy."""
    cpu_quota: float | None = None
    """The CPUs its runner's cgroup allowed (its CPU limit; None: unlimited or not said)."""
    scenario: Scenario | None = None
    """A fixed-rate run's scenario (with repeats, the median run's): its rate, deadline,
    misses and their interval, jitter; None for the closed loop."""
    timeline: Samples | None = None
    """A fixed-rate run's per-query latencies from their scheduled arrivals, in the order
    they were issued (its samples; with repeats, the median run's): the report's
    latency-over-time strip. None for the closed loop."""
    inputs: tuple[DrawnInput, ...] | None = None
    """How its runner drew each input (declared dtype, an integer input's range): what tells
    an image model from a text model, where results keep no shapes. None: not said (a
    compacted termination message, a runner before it), or not drawn (`recorded_inputs`)."""
    fingerprint: Fingerprint | None = None
    """The stack it was measured on (with repeats, the median run's); None where its result
    has none (a runner before it): an unknown stack."""
    family: str | None = None
    """Its model's family, where the spec names one (report/params.py compares within it)."""
    params: tuple[tuple[str, ParamValue], ...] = ()
    """Its model's params within the family, by name."""
    recorded_inputs: str | None = None
    """The sha256 of the recorded inputs it replayed; None: it drew its inputs. Rows that
    differ in it are of other inputs: never ranked together, and a baseline comparison
    between them says so and concludes nothing."""
    stages: Mapping[StageName, StageLatency] | None = None
    """Where the model runs between a preprocess and a postprocess: each stage's time per
    query and share of the chain (with repeats, the median run's). None: a model alone."""

    @property
    def guaranteed_cpus(self) -> bool:
        """Whether every run had what `resources: guaranteed` gives: whole CPUs, requested
        as many as the limit allowed (the request from its allocation, the limit from the
        cgroup). Not known for local runs, runs stored before allocations, or GPU pods."""
        quota = self.cpu_quota
        return (
            quota is not None
            and float(quota).is_integer()
            and bool(self.allocations)
            and all(
                allocation is not None and allocation.unit == "cpu" and allocation.devices == quota
                for allocation in self.allocations
            )
        )

    @property
    def run_jobs(self) -> tuple[str, ...]:
        """The Job of each run the row's numbers come from."""
        return self.repeats.jobs if self.repeats else (self.job,)

    @property
    def ci_low_ms(self) -> float:
        return self.estimate.low

    @property
    def ci_high_ms(self) -> float:
        return self.estimate.high

    @property
    def per_sample(self) -> MedianEstimate:
        """The median latency divided by the batch size: what a sweep's best minimises."""
        return self.estimate.scaled(1 / self.key.batch_size)

    @property
    def p50_per_sample_ms(self) -> float:
        return self.per_sample.median

    @property
    def ci_per_sample_ms(self) -> tuple[float, float]:
        """The median's confidence interval, per sample."""
        return self.per_sample.low, self.per_sample.high

    @property
    def samples_per_s(self) -> float:
        """Throughput at the median: batch size over the p50, the statistic latency uses."""
        return 1000 / self.p50_per_sample_ms


@dataclass(frozen=True)
class FailedVariant:
    """A variant whose run in a reported Job gave no measurement, and why."""

    cluster: str
    target: str
    job: str
    index: int
    variant: VariantRef | None
    """None when no result named the variant (the pod never started, or was OOMKilled)."""
    explanation: str
    attempts: int
    finished_at: datetime | None
    """None when no pod of it finished: killed at the Job's deadline, never scheduled."""
    allocation: Allocation | None = None
    """What its attempts held of their nodes, which failed too, and cost."""


Selection = Literal["newest", "named", "all"]
"""Which Jobs a report shows: the newest of each workflow, cluster and target (the current
spec revision), the Jobs named, or every revision combined."""


@dataclass(frozen=True)
class JobSummary:
    """One Job: one target's run of one spec revision of a workflow in one cluster."""

    workflow: str
    cluster: str
    namespace: str
    target: str
    job: str
    spec_sha256: str | None
    finished_at: datetime | None
    """When its last variant finished; None when none did."""
    measured: int
    failed: int
    reported: bool
    """Whether the report shows its runs (see `Report.selection`)."""
    spec_file: str | None = None
    image: str | None = None
    """The runner image the Job's pods ran, as its pod template names it."""
    runner: str | None = None
    """What ran its benchmarks, for a reader (`report.runner_image`): the image, marked
    where it is the examples' placeholder, or this checkout's runner for a local try."""
    first_finished_at: datetime | None = None
    torch: tuple[str, ...] = ()
    """The torch versions its runs report (one, unless the image was a moving tag)."""
    devices: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    description: str | None = None
    """The workflow's, as the Job's record says (`About`)."""
    owner: str | None = None
    spec_commit: str | None = None
    """The git commit whose spec file has the bytes the Job was made from."""
    finished_ahead: bool = False
    """Some run of it reports a finish time later than it was stored, or than the report
    was made, beyond contract.clocks.CLOCK_TOLERANCE, or gather held one to its own clock
    (`clock_note`): its node's clock ran ahead. Finish times order nothing (`Notes`)."""
    stacks: tuple[Fingerprint, ...] = ()
    """The stacks its results were measured on (one, unless its pods ran on different
    nodes); empty where its runners wrote none."""


About = tuple[str | None, str | None]
"""A Job's workflow description and owner, from its record in results/."""
NO_ABOUT: About = (None, None)


@dataclass(frozen=True)
class Notes:
    """What the records in results/ and git add to the stored runs."""

    reuses: Mapping[str, Reuses] = field(default_factory=dict)
    """Job name: the earlier Jobs' variants its revision reused (its record's `reuses`)."""
    about: Mapping[str, About] = field(default_factory=dict)
    """Job name: its workflow's description and owner (its record's)."""
    spec_revisions: Mapping[tuple[str, str], SpecRevision] = field(default_factory=dict)
    """(spec file, sha256): the git commit holding those bytes and how recent it is
    (store.history), or that the checkout holds them."""
    record_ages: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(cluster, Job): the order git added the Jobs' records in, newest 0 (store.history)."""
    in_dist: frozenset[tuple[str, str]] = frozenset()
    """(cluster, Job) of each Job dist/ holds now: what Flux runs, each its target's current
    revision."""
    tried: Mapping[tuple[str, str], Reuses] = field(default_factory=dict)
    """(cluster, Job): the earlier Jobs' variants of that cluster it reused, as the store says
    (a local try's incremental sweep: localrun)."""

    def reused_by(self, cluster: str, job: str) -> Reuses:
        """The earlier Jobs' variants Job `job` of `cluster` reuses, by its record and by the
        store."""
        found = {earlier: set(ids) for earlier, ids in self.reuses.get(job, {}).items()}
        for earlier, ids in self.tried.get((cluster, job), {}).items():
            found.setdefault(earlier, set()).update(ids)
        return {earlier: tuple(sorted(ids)) for earlier, ids in found.items()}


@dataclass(frozen=True)
class Ranked:
    """One variant within a comparison."""

    row: VariantRow
    ratio: Ratio
    """Its p50 per sample over the fastest's (1 for the fastest), with the ratio's CI."""
    doubts: tuple[str, ...]
    """Why it cannot be told apart from the fastest even if the CI says so: either side's
    validity flags, or a difference within either side's between-run noise."""

    @property
    def is_significant(self) -> bool:
        """Slower than the fastest beyond noise, with neither run in doubt (False for the
        fastest itself, and for one faster than the first, which only a best configuration
        has: one outside its accuracy gate)."""
        return self.ratio.excludes_one and self.ratio.value > 1 and not self.doubts


@dataclass(frozen=True)
class Comparison:
    """Variants that differ only in some key fields, fastest (per sample) first."""

    fixed: tuple[tuple[str, str], ...]
    """The key fields all entries share, as (name, value)."""
    varies: tuple[str, ...]
    """The key fields that tell the entries apart."""
    entries: tuple[Ranked, ...]

    def describe(self) -> str:
        """What the entries share: "model tiny-cnn, precision fp32, ...", fields in key order."""
        return ", ".join(f"{heading(name)} {value}" for name, value in self.fixed)


@dataclass(frozen=True)
class BestConfiguration:
    """The configurations of one model on one target: which is fastest within its accuracy
    gate, and is it clearly so (its comparison's entries: within the gate, not measured,
    outside it; each fastest first)."""

    comparison: Comparison

    @property
    def is_significant(self) -> bool:
        """The runner-up is slower than the best beyond noise, neither run in doubt."""
        return self.comparison.entries[1].is_significant

    @property
    def faster_but_failed(self) -> tuple[Ranked, ...]:
        """The configurations faster than the best that miss their accuracy gate: never the
        best, and never left unsaid either."""
        best = self.comparison.entries[0]
        return tuple(
            entry
            for entry in self.comparison.entries[1:]
            if entry.row.accuracy.state == "accuracy_failed"
            and best.row.accuracy.state != "accuracy_failed"
            and entry.row.p50_per_sample_ms < best.row.p50_per_sample_ms
        )


Direction = Literal["faster", "slower", "no difference", "inconclusive"]


@dataclass(frozen=True)
class AxisEntry:
    """One variant against the reference value of an axis, every other setting the same."""

    row: VariantRow
    reference: VariantRow
    ratio: Ratio
    """Its p50 per sample over the reference's, with the ratio's CI."""
    doubts: tuple[str, ...]
    """Either side's validity flags, or a difference within either side's between-run
    noise: then no direction is claimed."""

    @property
    def direction(self) -> Direction:
        """What the numbers allow to say, and no more."""
        if self.doubts or not self.ratio.bounded:
            return "inconclusive"
        if not self.ratio.excludes_one:
            return "no difference"
        return "faster" if self.ratio.value < 1 else "slower"


@dataclass(frozen=True)
class AxisComparison:
    """Each value of one sweep axis against a reference value, the other axes held fixed:
    "bf16 vs fp32 at batch 1: 0.62x [0.58, 0.66]"."""

    axis: str
    entries: tuple[AxisEntry, ...]
    """Grouped by the settings held fixed, in key order."""
    not_compared: tuple[str, ...] = ()
    """Models left out of the comparison because their inputs differ, in words: an image
    classifier is not faster or slower than a text encoder, it does something else."""


@dataclass(frozen=True)
class Change:
    """One variant now and in the baseline."""

    current: VariantRow
    baseline: VariantRow
    ratio: Ratio
    """Current p50 over the baseline's, with the ratio's CI."""
    verdict: Verdict
    doubts: tuple[str, ...]
    """Why the verdict is inconclusive although the CI excludes no change: either side's
    validity flags, or a change within either side's between-run noise."""
    stack: tuple[str, ...] = ()
    """How the two runs' stacks differ, field by field, where `--across-stacks` compared
    them anyway; or that one side's stack is unknown (a runner before the fingerprint)."""


@dataclass(frozen=True)
class OtherStack:
    """One variant now and in the baseline, measured on different stacks: not compared."""

    current: VariantRow
    baseline: VariantRow
    differences: tuple[str, ...]
    """Each stack field that differs, baseline's value vs now."""


@dataclass(frozen=True)
class BaselineComparison:
    """Today vs an earlier run, matched by `VariantKey`."""

    threshold: float
    changes: tuple[Change, ...]
    """Regressions first (largest first), then improvements, inconclusive, unchanged."""
    new: tuple[VariantKey, ...]
    """Measured now, not in the baseline."""
    missing: tuple[VariantKey, ...]
    """Measured in the baseline, not now (see the failures for why)."""
    reused: tuple[VariantRow, ...] = ()
    """Variants whose current number is the baseline's own run (the current revision reuses
    it rather than measuring again): the same measurement, so no change of any kind."""
    other_stack: tuple[OtherStack, ...] = ()
    """Variants measured now on another stack than in the baseline: not compared, unless
    `--across-stacks` asks (then they are changes, each naming how the stacks differ)."""

    def with_verdict(self, verdict: Verdict) -> tuple[Change, ...]:
        """The changes with that verdict, in report order."""
        return tuple(change for change in self.changes if change.verdict == verdict)


@dataclass(frozen=True)
class Report:
    """Everything the renderers show; built by `build_report`."""

    workflows: tuple[str, ...]
    variants: tuple[VariantRow, ...]
    """Sorted by key."""
    failures: tuple[FailedVariant, ...]
    by_target: tuple[Comparison, ...]
    """The same model, precision, quantization, batch and runtime on several targets (or
    clusters)."""
    best_configurations: tuple[BestConfiguration, ...]
    """Per cluster, target and model with several configurations."""
    rankings: tuple[Comparison, ...]
    """Models side by side, per cluster, target and configuration with several models."""
    axes: tuple[AxisComparison, ...]
    """Per sweep axis with several values: each value against the axis's reference."""
    baseline: BaselineComparison | None
    superseded: int
    """Runs of the reported Jobs left out because a newer reported Job ran the same variant
    (only where several Jobs of a target are reported)."""
    selection: Selection
    jobs: tuple[JobSummary, ...]
    """Every Job of the runs, reported or not: by workflow, cluster and target, newest first."""
    startup: tuple[Startup, ...] = ()
    """Per cluster and target, where the reported runs' pods spent their time besides the
    timed loops, and their memory against each model's file."""
    prices: Pricing = field(default_factory=Pricing)
    """What a device-hour cost when each Job ran, where specs/clusters.yaml said
    (report/cost.py prices each variant's allocated time with it)."""
    plan_checks: tuple[PlanCheck, ...] = ()
    """Per Job reported on its own account, `make plan`'s estimate recomputed against what
    its pods took."""
    lacks: tuple[MachineLack, ...] = ()
    """What the machines the reported variants ran on lack of what they need."""
    across_stacks: bool = False
    """Whether variants of different stacks were compared (`--across-stacks`)."""
    stacks_apart: tuple[str, ...] = ()
    """The variants of a comparison that ran on different stacks, which fields differ, and
    whether they were kept apart or (`across_stacks`) compared."""


def run_target(run: StoredRun) -> str:
    """The target a run measured on: its Job's, else its result's."""
    result = run.variant.result
    return run.job.target or (result.target if result else None) or "unknown"


def key_of(run: StoredRun, ref: VariantRef) -> VariantKey:
    """The key of `ref` as `run` measured it: its cluster and target, and the variant's settings."""
    return VariantKey.of(run.job.cluster, run_target(run), ref)


def _ref(run: StoredRun) -> VariantRef | None:
    """Which variant the run was: as config.json named it, else as its result says."""
    result = run.variant.result
    return run.variant.variant or (result.variant if result else None)


def _same_variant(run: StoredRun, other: StoredRun) -> bool:
    """Whether the two runs measured the same thing, as their variant ids say."""
    ref, other_ref = _ref(run), _ref(other)
    return ref is not None and other_ref is not None and ref.id == other_ref.id


def variant_key(run: StoredRun) -> VariantKey | None:
    """Which variant a run measured, where it is known."""
    ref = _ref(run)
    return key_of(run, ref) if ref else None


_NEVER: Final = datetime.min.replace(tzinfo=UTC)
"""The finish time of a run that has none, for ordering: before every other."""


class JobId(NamedTuple):
    """What tells Jobs apart: a name alone may recur in another cluster."""

    cluster: str
    namespace: str
    name: str


JobAge = tuple[bool, int, int, str, str, str]
"""What orders a workflow's Jobs, newest greatest (`job_age`)."""
_UNKNOWN_AGE: Final = 1 << 30
"""The age of a spec revision that neither the checkout nor its recent history holds."""


def job_id(run: StoredRun) -> JobId:
    """Which Job `run` belongs to."""
    return JobId(run.job.cluster, run.job.namespace, run.job.job)


def job_age(runs: Sequence[StoredRun], notes: "Notes") -> JobAge:
    """What orders a workflow's Jobs, by what they are, never by a node's clock (a node whose
    clock ran ahead made an older revision look newest): first whether dist/ holds the Job
    now (Flux runs it: it is current), then how recent its spec revision is in git (the
    checkout's bytes newest), then the order git added the Jobs' records (not yet committed:
    newest), and last when the collector stored its runs (its own clock: a Job's re-run with
    the same spec and no record yet). Past that, the name and namespace only make the order
    independent of the input's."""
    job = runs[0].job
    spec = notes.spec_revisions.get((job.spec_file or "", job.spec_sha256 or ""))
    record = notes.record_ages.get((job.cluster, job.job), CURRENT)
    return (
        (job.cluster, job.job) in notes.in_dist,
        -(spec.age if spec else _UNKNOWN_AGE),
        -record,
        max(run.collected_at for run in runs),
        job.job,
        job.namespace,
    )


def _ahead(runs: Sequence[StoredRun], now: datetime) -> bool:
    """Whether a run reports a finish time later than it was stored, or than `now`, beyond
    the clocks' tolerance (a local run's finish has milliseconds, its time of storage whole
    seconds: stored within the second it finished, it was no clock's fault), or gather said
    its node's clock ran ahead."""
    return any(
        run.variant.clock_note is not None
        or (
            run.variant.finished_at is not None
            and ahead_by(run.variant.finished_at, instant(run.collected_at) or now) is not None
        )
        for run in runs
    )


def measurement_of(run: StoredRun) -> tuple[OkResult, VariantRef] | None:
    """The run's result and the variant it names, where the run measured one."""
    result = run.variant.result
    if run.variant.state != "succeeded" or not isinstance(result, OkResult) or not result.variant:
        return None
    return result, result.variant


def _job_summary(
    runs: Sequence[StoredRun], reported: bool, notes: Notes, now: datetime
) -> JobSummary:
    job = runs[0].job
    description, owner = notes.about.get(job.job, NO_ABOUT)
    revision = notes.spec_revisions.get((job.spec_file or "", job.spec_sha256 or ""))
    finished = [run.variant.finished_at for run in runs if run.variant.finished_at]
    measured = sum(measurement_of(run) is not None for run in runs)
    environments = [
        result.environment
        for run in runs
        if isinstance(result := run.variant.result, OkResult) and result.environment
    ]
    nodes = {run.variant.node for run in runs if run.variant.node}
    nodes |= {e.node_name for e in environments if e.node_name}
    return JobSummary(
        workflow=job.workflow,
        cluster=job.cluster,
        namespace=job.namespace,
        target=min(map(run_target, runs)),
        job=job.job,
        spec_sha256=job.spec_sha256,
        finished_at=max(finished, default=None),
        measured=measured,
        failed=len(runs) - measured,
        reported=reported,
        spec_file=job.spec_file,
        image=job.image,
        runner=runner_words(job.cluster, job.image),
        first_finished_at=min(finished, default=None),
        torch=tuple(sorted({e.torch for e in environments})),
        devices=tuple(sorted({e.device_name for e in environments})),
        nodes=tuple(sorted(nodes)),
        description=description,
        owner=owner,
        spec_commit=revision.commit if revision else None,
        finished_ahead=_ahead(runs, now),
        stacks=_stacks(runs),
    )


def _stacks(runs: Sequence[StoredRun]) -> tuple[Fingerprint, ...]:
    """The distinct fingerprints of the runs' results, in a fixed order."""
    found = {
        fingerprint.model_dump_json(): fingerprint
        for run in runs
        if run.variant.result is not None and (fingerprint := run.variant.result.fingerprint)
    }
    return tuple(found[text] for text in sorted(found))


class JobChoiceError(ValueError):
    """Jobs asked for by name cannot be reported as asked."""


class UnknownJob(JobChoiceError):
    """A Job asked for by name is not among the runs."""


def _reused(
    chosen: Collection[JobId], by_job: Mapping[JobId, list[StoredRun]], notes: Notes
) -> dict[JobId, list[StoredRun]]:
    """The runs of earlier Jobs that the chosen Jobs' revisions reuse rather than ran again
    (synth left them out, or a local try: their results stand for the revision), by Job."""
    found: dict[JobId, list[StoredRun]] = {}
    for job in chosen:
        for earlier, ids in notes.reused_by(job.cluster, job.name).items():
            source = JobId(job.cluster, job.namespace, earlier)
            if source in chosen or source not in by_job:
                continue
            wanted = set(ids)
            runs = [run for run in by_job[source] if (ref := _ref(run)) and ref.id in wanted]
            if runs:
                found.setdefault(source, []).extend(runs)
    return found


def _select(
    runs: Iterable[StoredRun],
    names: Collection[str],
    all_revisions: bool,
    notes: Notes,
    now: datetime,
) -> tuple[list[StoredRun], dict[JobId, JobAge], tuple[JobSummary, ...], set[JobId]]:
    """The runs of the Jobs to report, each Job's age, a summary of every Job, and the Jobs
    chosen (not only reused from)."""
    by_job: dict[JobId, list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_job[job_id(run)].append(run)
    ages = {job: job_age(job_runs, notes) for job, job_runs in by_job.items()}
    known = {job.name for job in by_job}
    unknown = set(names) - known
    if unknown:
        raise UnknownJob(
            f"no Job named {', '.join(sorted(unknown))}; the runs have {', '.join(sorted(known))}"
        )
    slots: dict[tuple[str, str, str, int], list[JobId]] = defaultdict(list)
    for job, job_runs in by_job.items():
        first = job_runs[0].job
        slots[first.workflow, job.cluster, min(map(run_target, job_runs)), first.run].append(job)
    if all_revisions:
        chosen = set(by_job)
    elif names:
        chosen = {job for job in by_job if job.name in names}
    else:
        # A Job's name changes with its spec: the newest per target and repeat (job_age) is
        # the current revision, whatever its variants' finish times say.
        chosen = {max(jobs, key=ages.__getitem__) for jobs in slots.values()}
    reused = _reused(chosen, by_job, notes) if not all_revisions else {}
    summaries = tuple(
        _job_summary(by_job[job], job in chosen or job in reused, notes, now)
        for slot in sorted(slots)
        for job in sorted(slots[slot], key=ages.__getitem__, reverse=True)
    )
    selected = [run for job in chosen for run in by_job[job]]
    selected += [run for job_runs in reused.values() for run in job_runs]
    return selected, {job: ages[job] for job in (*chosen, *reused)}, summaries, chosen


def _recency(run: StoredRun, ages: dict[JobId, JobAge]) -> tuple[JobAge, datetime, str, int]:
    # The newer Job's run wins even when it has no finish time: a failure of the current
    # revision is never replaced by an older revision's success. Within a Job, the rest only
    # makes the choice independent of the input's order.
    return (
        ages[job_id(run)],
        run.variant.finished_at or _NEVER,
        run.collected_at,
        run.variant.index,
    )


def _latest(runs: Iterable[StoredRun], ages: dict[JobId, JobAge]) -> tuple[list[StoredRun], int]:
    """One run per variant key and repeat, the newest Job's, and of a key's repeats only
    those measuring what its newest run measures (the same variant id); also how many were
    left out."""
    latest: dict[tuple[VariantKey, int], StoredRun] = {}
    unnamed: list[StoredRun] = []
    left_out = 0
    for run in runs:
        key = variant_key(run)
        if key is None:
            # Without a result nothing says which variant this was, so nothing supersedes it.
            unnamed.append(run)
            continue
        slot = (key, run.job.run)
        if slot in latest:
            left_out += 1
            if _recency(run, ages) <= _recency(latest[slot], ages):
                continue
        latest[slot] = run
    newest: dict[VariantKey, StoredRun] = {}
    for (key, _), run in latest.items():
        if key not in newest or _recency(run, ages) > _recency(newest[key], ages):
            newest[key] = run
    # A repeat left from an earlier revision (repeats lowered after a change of what is
    # measured) measured something else: it does not join the current runs.
    kept = [run for (key, _), run in latest.items() if _same_variant(run, newest[key])]
    return [*kept, *unnamed], left_out + len(latest) - len(kept)


def _accuracy(run: StoredRun, result: OkResult, ref: VariantRef) -> AccuracyCheck:
    """The run judged by the gate stored with it, or its default: from the numbers each time,
    so the verdict is the gate's on them whatever stored it."""
    gate = run.variant.accuracy_gate or default_gate(ref.precision, ref.quantization)
    verdict = judge(result.accuracy, gate)
    if not verdict.measured:
        return AccuracyCheck("not measured", result.accuracy)
    state: AccuracyState = "accuracy_failed" if verdict.failed else "passed"
    return AccuracyCheck(state, result.accuracy, verdict.failures)


def _inputs(result: OkResult) -> tuple[DrawnInput, ...] | None:
    accuracy = result.accuracy
    drawn = accuracy.inputs if accuracy else None
    # The weight an index input reaches is named by each model its own way: only what was
    # drawn tells inputs apart.
    return tuple(d.model_copy(update={"bounded_by": None}) for d in drawn) if drawn else None


def _measured(run: StoredRun) -> VariantRow | None:
    measurement = measurement_of(run)
    if measurement is None:
        return None
    result, ref = measurement
    validity = result.validity
    return VariantRow(
        key=key_of(run, ref),
        variant_id=ref.id,
        job=run.job.job,
        finished_at=run.variant.finished_at,
        device_name=result.environment.device_name if result.environment else None,
        latency=result.latency,
        estimate=_estimate(result),
        is_p99_reliable=validity is not None and "p99" in validity.reliable_percentiles,
        is_p99_9_reliable=result.reliable_p99_9_ms is not None,
        is_noisy=validity.noisy if validity else None,
        mean_samples_per_s=result.throughput_samples_per_s,
        doubts=_doubts(validity),
        flags=tuple(flag for flag in FLAGS if validity and getattr(validity, flag)),
        flag_reasons=tuple(validity.reasons) if validity and _doubts(validity) else (),
        quantized=_quantized(result),
        paired=result.paired,
        rounds=(
            (RunRounds(run.job.job, result.rounds, result.paired),)
            if result.rounds or result.paired
            else ()
        ),
        accuracy=_accuracy(run, result, ref),
        inputs=_inputs(result),
        recorded_inputs=result.recorded_inputs.sha256 if result.recorded_inputs else None,
        family=result.family,
        params=tuple(sorted((result.params or {}).items())),
        allocations=(run.variant.allocation,),
        energy=result.energy,
        throttle_reasons=tuple(result.gpu.throttle_reasons) if result.gpu else (),
        cpu_quota=result.environment.cpu_quota if result.environment else None,
        fingerprint=result.fingerprint,
        scenario=result.scenario,
        stages=result.stages,
        timeline=(
            result.samples
            if result.scenario is not None and result.scenario.kind == "fixed_rate"
            else None
        ),
    )


def _median_run(runs: Sequence[tuple[int, VariantRow]]) -> VariantRow:
    """One variant's runs, by repeat, as one row: the median run's (the lower middle one of
    an even count), scaled to the median of every run's p50, with the runs' p50s and every
    run's doubts (a flagged repeat puts the median in doubt too)."""
    rows = [row for _, row in runs]
    if len(rows) == 1:
        return rows[0]
    p50s = tuple(row.estimate.median for row in rows)
    middle = sorted(rows, key=lambda row: row.estimate.median)[(len(rows) - 1) // 2]
    factor = statistics.median(p50s) / middle.estimate.median
    latency = middle.latency
    return replace(
        middle,
        latency=latency.model_copy(update={"p50_ms": latency.p50_ms * factor}),
        estimate=middle.estimate.scaled(factor),
        is_p99_reliable=all(row.is_p99_reliable for row in rows),
        is_p99_9_reliable=all(row.is_p99_9_reliable for row in rows),
        doubts=tuple(dict.fromkeys(doubt for row in rows for doubt in row.doubts)),
        flags=tuple(dict.fromkeys(flag for row in rows for flag in row.flags)),
        flag_reasons=tuple(dict.fromkeys(why for row in rows for why in row.flag_reasons)),
        # A pairing compares two variants within one run; the median of several runs has none
        # of its own: every run's rounds stay, and _paired_ratio combines them per pair.
        paired=None,
        repeats=Repeats(p50s_ms=p50s, jobs=tuple(row.job for row in rows)),
        rounds=tuple(rounds for row in rows for rounds in row.rounds),
        accuracy=max((row.accuracy for row in rows), key=lambda c: ACCURACY_ORDER[c.state]),
        allocations=tuple(allocation for row in rows for allocation in row.allocations),
    )


def _between_runs(ratio: Ratio, *rows: VariantRow) -> tuple[str, ...]:
    """Why a ratio says nothing, where it lies within the noise between either side's
    repeated runs."""
    spread = max((row.repeats.spread for row in rows if row.repeats), default=None)
    if spread is None or abs(ratio.value - 1) > spread:
        return ()
    return (f"within between-run noise ±{spread:.1%}",)


def _quantized(result: OkResult) -> str | None:
    applied = result.applied
    if applied is None or applied.quantization == "none":
        return None
    reached = f"{applied.quantized_layers} of {applied.linear_layers} Linear"
    others = ", ".join(
        f"{kind} x{count}" for kind, count in sorted(applied.unquantized_weighted_layers.items())
    )
    return f"{reached}; {others} not" if others else reached


def _estimate(result: OkResult) -> MedianEstimate:
    latency = result.latency
    if latency.p50_interval is not None:
        return intervals.from_interval(latency.p50_ms, latency.p50_interval)
    if result.samples is not None:
        try:
            return intervals.from_samples([ns / 1e6 for ns in result.samples.durations_ns()])
        except ValueError:
            pass  # damaged samples: the summary still holds
    return intervals.from_summary(latency.p50_ms, latency.iqr_ms, latency.count)


FLAGS: Final = {
    "noisy": "noisy",
    "contended": "contended",
    "cpu_throttled": "CPU-throttled",
    "gpu_throttled": "GPU-throttled",
    "stopped_early": "stopped early",
}
"""The runner's validity flags that put a number in doubt, and how a report words them."""


def _doubts(validity: Validity | None) -> tuple[str, ...]:
    if validity is None:
        return ()
    flagged = [words for flag, words in FLAGS.items() if getattr(validity, flag)]
    return (", ".join(flagged),) if flagged else ()


def _failure(run: StoredRun) -> FailedVariant:
    return FailedVariant(
        cluster=run.job.cluster,
        target=run_target(run),
        job=run.job.job,
        index=run.variant.index,
        variant=_ref(run),
        explanation=run.variant.explanation,
        attempts=run.variant.attempts,
        finished_at=run.variant.finished_at,
        allocation=run.variant.allocation,
    )


def _split(runs: Iterable[StoredRun]) -> tuple[tuple[VariantRow, ...], tuple[FailedVariant, ...]]:
    """A row per measured variant (its repeats combined), and every failed run."""
    repeats: dict[VariantKey, list[tuple[int, VariantRow]]] = defaultdict(list)
    failures: list[FailedVariant] = []
    for run in runs:
        row = _measured(run)
        if row is None:
            failures.append(_failure(run))
        else:
            repeats[row.key].append((run.job.run, row))
    rows = [_median_run(sorted(measured)) for measured in repeats.values()]
    rows.sort(key=lambda row: row.key)
    failures.sort(key=lambda failed: (failed.cluster, failed.target, failed.job, failed.index))
    return tuple(rows), tuple(failures)


def _compare(rows: Sequence[VariantRow], *, by_accuracy: bool = False) -> Comparison:
    """The rows fastest first, or with `by_accuracy` those within their accuracy gate first
    (then the unmeasured, then those outside it), each fastest first: the first is what the
    others are compared with."""
    ranked = sorted(
        rows,
        key=lambda row: (
            ACCURACY_ORDER[row.accuracy.state] if by_accuracy else 0,
            row.p50_per_sample_ms,
            row.key,
        ),
    )
    fastest = ranked[0]
    varies = tuple(name for name in KEY_FIELDS if len({row.key.value(name) for row in rows}) > 1)
    return Comparison(
        fixed=tuple((name, fastest.key.value(name)) for name in KEY_FIELDS if name not in varies),
        varies=varies,
        entries=tuple(_ranked(row, fastest) for row in ranked),
    )


RunRatio = tuple[float, float, float]
"""One run's paired ratio: (median over rounds, low, high of its 95 % interval)."""


def _run_ratio(
    row: VariantRow, mine: RunRounds | None, other: VariantRow, theirs: RunRounds | None
) -> RunRatio | None:
    """`row`'s run `mine` over `other`'s run `theirs` of the same Job, where the two ran in
    the same rounds (either may be None: a run that names no rounds)."""
    if mine is not None and mine.rounds is not None and theirs is not None and theirs.rounds:
        # Both name their rounds: the names decide, also against an older `paired` (a
        # retried pod's variant may name a first variant whose kept run is another attempt's).
        if mine.rounds.id != theirs.rounds.id:
            return None
        try:
            return paired_ratio(mine.rounds.medians_ns, theirs.rounds.medians_ns)
        except ValueError:
            return None  # damaged rounds: the unpaired ratio still holds
    # A result of a runner before `rounds`: only its pairing with its pod's first variant
    # (whose result says nothing of rounds).
    return _older_pairing(mine, other.variant_id) or _inverse(
        _older_pairing(theirs, row.variant_id)
    )


def _older_pairing(run: RunRounds | None, against: str) -> RunRatio | None:
    if run is None or run.paired is None or run.paired.against != against:
        return None
    return run.paired.ratio, run.paired.low, run.paired.high


def _inverse(ratio: RunRatio | None) -> RunRatio | None:
    if ratio is None:
        return None
    value, low, high = ratio
    return 1 / value, 1 / high, 1 / low


def _paired_ratio(row: VariantRow, other: VariantRow) -> tuple[Ratio, bool] | None:
    """`row`'s p50 per sample over `other`'s from the rounds both were measured in, and
    whether every run of both rows is in it; None where no run of one shared rounds with a
    run of the other.

    With several runs (`benchmark.repeats`), each pairs within its own pod and the runs
    combine as the rows do: the ratio is the median of the runs' ratios, and its interval
    spans every run's own interval, lowest low to highest high. A direction is then claimed
    only where every run's interval lies on the same side of 1, each run on its own node
    showing it. Pooling all runs' rounds into one sign test would be narrower, but rounds
    of one pod share its node and moment: the runs are the independent units, and pooling
    would count node-to-node differences in the ratio (which repeats exist to expose) as if
    they were 16 x N independent rounds. A sign test over the runs' ratios alone says
    little with the few runs a spec repeats (with 3 the range of the three covers the median
    only 75 % of the time) and leaves out each run's own uncertainty; the envelope keeps
    both. With one run it is that run's interval, as before.
    """
    if row is other or row.key.cluster != other.key.cluster:
        return None
    # Rounds are a pod's, so two runs pair only within one Job: a Job is one repeat, and
    # another target's Job has the same variant ids (another cluster's the same Job names).
    mine = {run.job: run for run in row.rounds}
    theirs = {run.job: run for run in other.rounds}
    shared = [job for job in row.run_jobs if job in other.run_jobs]
    runs = [
        found
        for job in shared
        if (found := _run_ratio(row, mine.get(job), other, theirs.get(job))) is not None
    ]
    if not runs:
        return None
    per_sample = other.key.batch_size / row.key.batch_size
    value = statistics.median(value for value, _, _ in runs)
    low = min(low for _, low, _ in runs)
    high = max(high for _, _, high in runs)
    ratio = Ratio(value * per_sample, low * per_sample, high * per_sample, paired=True)
    return ratio, len(runs) == len(row.run_jobs) == len(other.run_jobs)


def _per_sample_ratio(row: VariantRow, other: VariantRow) -> tuple[Ratio, tuple[str, ...]]:
    """`row`'s p50 per sample over `other`'s, and why the between-run noise makes it say
    nothing (if it does): from the rounds both were measured in where they share any (the
    tighter, drift-free interval), otherwise from both sides' own intervals."""
    paired = _paired_ratio(row, other)
    if paired is None:
        ratio = intervals.ratio(row.per_sample, other.per_sample)
        return ratio, _between_runs(ratio, row, other)
    ratio, every_run = paired
    # The runs' spread in p50 is the nodes' speed, which a ratio within one pod cancels;
    # what the ratio itself varies by between runs is in its interval, if all runs are.
    return ratio, () if every_run else _between_runs(ratio, row, other)


def _ranked(row: VariantRow, fastest: VariantRow) -> Ranked:
    ratio, noise = _per_sample_ratio(row, fastest)
    if row is fastest:
        return Ranked(row=row, ratio=ratio, doubts=())
    doubts = (*_labelled(fastest), *_labelled(row), *noise)
    return Ranked(row=row, ratio=ratio, doubts=doubts)


@dataclass(frozen=True)
class _Stacks:
    """How a comparison treats rows of different stacks (report/stacks.py)."""

    across: bool
    """Compare them anyway (`--across-stacks`), saying how they differ."""
    exempt: bool = False
    """Compare them without a word: a comparison of targets, whose stacks differ by what it
    compares (another machine, its driver, its CPU)."""


def _part_label(rows: Sequence[VariantRow]) -> str:
    jobs = sorted({job for row in rows for job in row.run_jobs})
    variants = " / ".join(sorted({row.key.label(KEY_FIELDS) for row in rows})[:3])
    return f"{variants} (Job {', '.join(jobs)})"


def _by_stack(
    group: Sequence[VariantRow], stacks: _Stacks
) -> tuple[list[list[VariantRow]], tuple[str, ...]]:
    if stacks.exempt:
        return [list(group)], ()
    return split_by_stack(
        group, attrgetter("fingerprint"), _part_label, across_stacks=stacks.across
    )


def _comparisons(
    rows: Sequence[VariantRow],
    by: tuple[str, ...],
    stacks: _Stacks,
    *,
    by_accuracy: bool = False,
    fed_alike: bool = False,
) -> tuple[tuple[Comparison, ...], tuple[str, ...]]:
    """A comparison per group of rows sharing the fields `by` and their stack (`stacks`),
    where a group has several; `fed_alike`: and the inputs their results say they were fed
    (a ranking of models puts an image classifier beside a text encoder otherwise, as the
    model axis would). With them, what was kept apart for its stack, in words."""
    groups: dict[tuple[object, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        fed = (row.inputs, row.recorded_inputs) if fed_alike else ()
        groups[(*(row.key.value(name) for name in by), *fed)].append(row)
    comparisons: list[Comparison] = []
    notes: list[str] = []
    for group in groups.values():
        parts, apart = _by_stack(group, stacks)
        notes.extend(apart)
        comparisons.extend(
            _compare(part, by_accuracy=by_accuracy) for part in parts if len(part) > 1
        )
    return tuple(comparisons), tuple(notes)


def _best_configuration(comparison: Comparison) -> BestConfiguration:
    return BestConfiguration(comparison=comparison)


AXES: Final = ("target", *RUN_SETTINGS, "model")
_REFERENCE_VALUES: Final = {
    name: setting.reference for name, setting in SETTINGS.items() if setting.reference is not None
}
"""What other values are compared with, where a group has it; else the group's first value
(the smallest batch, the first target or model by name)."""


def untouched(key: VariantKey) -> bool:
    """Whether the variant runs the model as exported: every axis that has a reference
    value at it (fp32, no quantization, eager), whatever its batch size."""
    return all(key.value(axis) == value for axis, value in _REFERENCE_VALUES.items())


def _reference(axis: str, group: Sequence[VariantRow]) -> VariantRow:
    preferred = _REFERENCE_VALUES.get(axis)
    for row in group:
        if row.key.value(axis) == preferred:
            return row
    return min(group, key=lambda row: (getattr(row.key, axis), row.key))


def _axis(
    axis: str, rows: Sequence[VariantRow], stacks: _Stacks
) -> tuple[AxisComparison | None, tuple[str, ...]]:
    held = tuple(name for name in KEY_FIELDS if name != axis)
    groups: dict[tuple[str, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        groups[tuple(row.key.value(name) for name in held)].append(row)
    entries: list[AxisEntry] = []
    not_compared: list[str] = []
    stack_notes: list[str] = []
    for whole in groups.values():
        parts, apart = _by_stack(whole, replace(stacks, exempt=axis == "target"))
        stack_notes.extend(apart)
        alike = [split for group in parts for split in _alike(axis, group)]
        for like, unlike in alike:
            not_compared.extend(unlike)
            if len(like) < 2:
                continue
            reference = _reference(axis, like)
            entries.extend(
                axis_entry(row, reference)
                for row in sorted(like, key=lambda row: row.key)
                if row is not reference
            )
    notes = tuple(dict.fromkeys(not_compared))
    comparison = AxisComparison(axis, tuple(entries), notes) if entries or notes else None
    return comparison, tuple(stack_notes)


def _alike(
    axis: str, group: Sequence[VariantRow]
) -> list[tuple[list[VariantRow], tuple[str, ...]]]:
    """`group` split into rows that may be compared on `axis`, each with what was left out
    of it, in words. Only models differ in their inputs: rows whose inputs differ as far
    as their results say are apart, and rows whose results do not say are compared only
    with each other."""
    said = {row.inputs for row in group if row.inputs is not None}
    if axis != "model" or len(said) < 2:
        return [(list(group), ())]
    by_inputs: dict[tuple[DrawnInput, ...] | None, list[VariantRow]] = defaultdict(list)
    for row in group:
        by_inputs[row.inputs].append(row)
    kinds = sorted(said, key=lambda inputs: min(row.key for row in by_inputs[inputs]))
    note = "models with different inputs are not compared: " + " vs ".join(
        f"{'/'.join(sorted({row.key.model for row in by_inputs[inputs]}))} ({_input_words(inputs)})"
        for inputs in kinds
    )
    return [(by_inputs[inputs], (note,)) for inputs in kinds] + [(by_inputs[None], ())]


def _input_words(inputs: Sequence[DrawnInput]) -> str:
    """Inputs as a reader knows them: "float32", "int64 in [0, 30522), int64 in [0, 2)"."""
    return ", ".join(
        drawn.dtype if drawn.high is None else f"{drawn.dtype} in [{drawn.low}, {drawn.high})"
        for drawn in inputs
    )


def axis_entry(row: VariantRow, reference: VariantRow) -> AxisEntry:
    """`row` against `reference`: the ratio of their p50s per sample, and the doubts that
    keep it from claiming a direction."""
    ratio, noise = _per_sample_ratio(row, reference)
    return AxisEntry(
        row=row,
        reference=reference,
        ratio=ratio,
        doubts=(*_labelled(reference), *_labelled(row), *noise),
    )


def _labelled(row: VariantRow) -> tuple[str, ...]:
    """The row's doubts, saying whose they are."""
    return tuple(f"{row.key.label(KEY_FIELDS[1:])} is {doubt}" for doubt in row.doubts)


def _verdict(ratio: Ratio, doubts: tuple[str, ...], threshold: float) -> Verdict:
    # "unchanged" is a claim too: only when the whole interval lies within the threshold
    # (an equivalence test), never from a point estimate whose interval reaches beyond it.
    if doubts:
        return "inconclusive"
    if ratio.bounded and 1 - threshold <= ratio.low and ratio.high <= 1 + threshold:
        return "unchanged"
    if ratio.excludes_one and not 1 - threshold <= ratio.value <= 1 + threshold:
        return "regression" if ratio.value > 1 else "improvement"
    return "inconclusive"


def _change(
    current: VariantRow, baseline: VariantRow, threshold: float, stack: tuple[str, ...] = ()
) -> Change:
    ratio = intervals.ratio(current.estimate, baseline.estimate)
    doubts = (
        *(f"now {doubt}" for doubt in current.doubts),
        *(f"in the baseline {doubt}" for doubt in baseline.doubts),
        *_between_runs(ratio, current, baseline),
        *_fed_otherwise(current, baseline),
    )
    return Change(
        current=current,
        baseline=baseline,
        ratio=ratio,
        verdict=_verdict(ratio, doubts, threshold),
        doubts=doubts,
        stack=stack,
    )


def _fed_otherwise(current: VariantRow, baseline: VariantRow) -> tuple[str, ...]:
    """Where the two runs were fed other inputs (recorded against drawn, or two recordings),
    in words: a latency of other inputs is no change of the variant's."""
    if current.recorded_inputs == baseline.recorded_inputs:
        return ()

    def fed(sha256: str | None) -> str:
        return f"replayed recorded inputs {sha256[:12]}" if sha256 else "drew its inputs"

    return (
        f"fed other inputs: now it {fed(current.recorded_inputs)}, in the baseline it "
        f"{fed(baseline.recorded_inputs)}",
    )


UNKNOWN_STACK: Final = "stack unknown {side} (a runner before the fingerprint): compared as is"


def _stack_words(current: VariantRow, baseline: VariantRow) -> tuple[str, ...]:
    """How the two runs' stacks differ; that one side's is unknown where only the other's is
    known; nothing where both are unknown (as every run was before the fingerprint)."""
    if (current.fingerprint is None) != (baseline.fingerprint is None):
        side = "now" if current.fingerprint is None else "in the baseline"
        return (UNKNOWN_STACK.format(side=side),)
    return stack_differences(baseline.fingerprint, current.fingerprint)


def _same_run(current: VariantRow, baseline: VariantRow) -> bool:
    """Whether two rows are one measurement: the same variant from the same runs (Job names
    are content hashes, and both rows are of one cluster), with the same numbers."""
    return (current.variant_id, current.run_jobs, current.latency) == (
        baseline.variant_id,
        baseline.run_jobs,
        baseline.latency,
    )


def _against(
    rows: Sequence[VariantRow],
    baseline: Iterable[StoredRun],
    threshold: float,
    across_stacks: bool = False,
) -> BaselineComparison:
    now = {row.key: row for row in rows}
    before = {row.key: row for row in _split(baseline)[0]}
    matched = sorted(now.keys() & before.keys())
    reused = tuple(now[key] for key in matched if _same_run(now[key], before[key]))
    changes: list[Change] = []
    other_stack: list[OtherStack] = []
    for key in matched:
        if _same_run(now[key], before[key]):
            continue
        stack = _stack_words(now[key], before[key])
        known = now[key].fingerprint is not None and before[key].fingerprint is not None
        if stack and known and not across_stacks:
            other_stack.append(OtherStack(now[key], before[key], stack))
        else:
            changes.append(_change(now[key], before[key], threshold, stack))
    changes.sort(
        key=lambda change: (
            VERDICT_ORDER[change.verdict],
            -abs(math.log(change.ratio.value)),
            change.current.key,
        )
    )
    return BaselineComparison(
        threshold=threshold,
        changes=tuple(changes),
        new=tuple(sorted(now.keys() - before.keys())),
        missing=tuple(sorted(before.keys() - now.keys())),
        reused=reused,
        other_stack=tuple(other_stack),
    )


def _current(
    runs: Iterable[StoredRun],
    names: Collection[str],
    all_revisions: bool,
    notes: Notes,
    now: datetime,
) -> tuple[list[StoredRun], int, tuple[JobSummary, ...], set[JobId]]:
    """The runs to report, one per variant; how many of the chosen Jobs' runs were left out;
    a summary of every Job; the Jobs chosen, whose runs are reported on their own account
    (the others' only where a chosen Job reuses them)."""
    selected, ages, summaries, chosen = _select(runs, names, all_revisions, notes, now)
    latest, superseded = _latest(selected, ages)
    return latest, superseded, summaries, chosen


def in_cluster(runs: Iterable[StoredRun], cluster: str | None) -> list[StoredRun]:
    """The runs of `cluster` (every run with None): a local try of a Job carries the Job's
    name, so naming Jobs alone would mix it with the cluster's run."""
    return [run for run in runs if cluster is None or run.job.cluster == cluster]


def build_report(
    runs: Sequence[StoredRun],
    *,
    baseline: Sequence[StoredRun] | None = None,
    regression_threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    jobs: Collection[str] = (),
    all_revisions: bool = False,
    notes: Notes | None = None,
    baseline_jobs: Collection[str] = (),
    now: datetime | None = None,
    prices: Pricing | None = None,
    across_stacks: bool = False,
) -> Report:
    """The report on `runs`, compared with `baseline` (earlier runs) when given.

    A workflow's Jobs in a cluster are one per target and spec revision: the report shows
    the newest Job of each target (the current revision: what dist/ runs, else the newest
    spec revision in git, `job_age`; never by finish times), or the Jobs named in `jobs`, or
    with `all_revisions` every Job. Every run of those Jobs is shown, a failure whatever its
    finish time; where several of them ran the same
    variant (cluster, target, model, precision, quantization, batch size), the newest Job's
    run wins and the others count as superseded. The baseline's runs are chosen alike (its
    newest Jobs, or every revision); or, with `baseline_jobs`, the runs of the Jobs so named
    among `runs` (an earlier local try, say), which the report must not show itself. `notes`
    adds what results/ and git know: the earlier runs a chosen Job's revision reused instead
    of running them again (incremental sweeps), shown under their own Job's name; the
    workflow's description and owner; the commit of each Job's spec. `prices` (the fleet's,
    as they were when each Job ran) price what each variant's pods held.

    Variants measured on different stacks (contract/fingerprint.py) are compared only
    within their stack, the report naming the fields that differ, unless `across_stacks`
    (report/stacks.py); comparisons of targets compare machines, stacks and all.

    A variant is a regression when its p50 grew by more than `regression_threshold` (a
    fraction: 0.05 is 5 %) and its CI and the baseline's are disjoint; an improvement likewise
    for a p50 that shrank by more than the threshold. Raises `UnknownJob` for a name in `jobs`
    or `baseline_jobs` that no run has, and `JobChoiceError` for a baseline Job the report
    shows.
    """
    if not 0 <= regression_threshold < 1:
        raise ValueError(
            f"regression_threshold is a fraction in [0, 1), not {regression_threshold}"
        )
    if jobs and all_revisions:
        raise ValueError("name Jobs or ask for all revisions, not both")
    if baseline is not None and baseline_jobs:
        raise ValueError("give baseline runs or name baseline Jobs, not both")
    notes = notes or Notes()
    now = now or datetime.now(UTC)
    latest, superseded, summaries, chosen = _current(runs, jobs, all_revisions, notes, now)
    rows, failures = _split(latest)
    before = None
    if baseline is not None:
        before = _current(baseline, (), all_revisions, notes, now)[0]
    elif baseline_jobs:
        # A Job the reported ones only reuse runs of may be the baseline: those runs are
        # the same runs on both sides ("reused, same run"), the rest compare.
        shown = {job.name for job in chosen} & set(baseline_jobs)
        if shown:
            raise JobChoiceError(
                f"the baseline Job {', '.join(sorted(shown))} is also reported: name an older "
                "Job as the baseline (the Jobs table lists them), or report others with --job"
            )
        before = _current(runs, baseline_jobs, False, notes, now)[0]
    stacks = _Stacks(across_stacks)
    by_target, _ = _comparisons(rows, SETTING_FIELDS, replace(stacks, exempt=True))
    # The best of a sweep is the fastest within its accuracy gate: a faster variant that
    # computes something else is shown beside it, never in its place.
    best, best_apart = _comparisons(rows, ("cluster", "target", "model"), stacks, by_accuracy=True)
    rankings, ranked_apart = _comparisons(
        rows, ("cluster", "target", *RUN_SETTINGS), stacks, fed_alike=True
    )
    axes = [_axis(axis, rows, stacks) for axis in AXES]
    apart = (*best_apart, *ranked_apart, *(note for _, notes in axes for note in notes))
    return Report(
        workflows=tuple(sorted({run.job.workflow for run in runs})),
        variants=rows,
        failures=failures,
        by_target=by_target,
        best_configurations=tuple(_best_configuration(comparison) for comparison in best),
        rankings=rankings,
        axes=tuple(comparison for comparison, _ in axes if comparison),
        baseline=(
            _against(rows, before, regression_threshold, across_stacks)
            if before is not None
            else None
        ),
        superseded=superseded,
        selection="all" if all_revisions else "named" if jobs else "newest",
        jobs=summaries,
        startup=startup(latest, run_target),
        prices=prices or Pricing(),
        plan_checks=plan_checks(runs, chosen, run_target),
        lacks=machine_lacks(latest, run_target),
        across_stacks=across_stacks,
        stacks_apart=tuple(dict.fromkeys(apart)),
    )
