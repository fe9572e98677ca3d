"""The question a sweep is run for, answered per model and target: which configuration is
fastest among those within their accuracy gate, by how much, and how sure the numbers are.

Pure, like the report it reads (its best configurations, `report.model`); the renderers
say each answer in one sentence right after the verdict on the run, and the JSON report
carries them whole.
"""

from dataclasses import dataclass

from report.intervals import Ratio
from report.model import AccuracyState, BestConfiguration, Ranked, Report, untouched


@dataclass(frozen=True)
class Against:
    """The best configuration against another of the same model and target."""

    configuration: str
    """The other's settings where the configurations differ: "fp32 batch 8"."""
    variant_id: str
    ratio: Ratio
    """The other's p50 per sample over the best's, with its 95 % CI: how many times faster
    the best is."""
    doubts: tuple[str, ...]
    """Why no direction is claimed even where the CI excludes 1: either side's validity
    flags, or a ratio within the noise between repeated runs."""
    accuracy: AccuracyState
    sure: bool
    """The best is faster beyond noise: the CI lies above 1 and nothing is in doubt."""


@dataclass(frozen=True)
class Answer:
    """Which configuration of one model on one target (of one cluster) is fastest among
    those within their accuracy gate."""

    cluster: str
    target: str
    model: str
    configurations: int
    best: str
    """The best's settings where the configurations differ."""
    best_variant_id: str
    accuracy: AccuracyState
    """The best's: "passed", the fastest within its gate; "not measured", the fastest of
    those not known to fail theirs (none is known to pass); "accuracy_failed", none is within
    its gate, and the best is the fastest by speed alone."""
    p50_per_sample_ms: float
    ci_per_sample_ms: tuple[float, float]
    runner_up: Against | None
    """The next fastest of the same accuracy standing, which "clearly the best" is judged
    against; None where the best is the only one."""
    untouched: Against | None
    """The model as exported (fp32, no quantization, eager) at the best's batch size, where that is
    another configuration: what the best gains over changing nothing."""
    faster_outside_gate: tuple[Against, ...]
    """Faster than the best, and outside their accuracy gate."""
    not_measured: int
    """The other configurations whose accuracy is unknown: ranked after those within their
    gate, never taken for passing."""


def answers(report: Report) -> tuple[Answer, ...]:
    """An answer per cluster, target and model with several configurations."""
    return tuple(map(_answer, report.best_configurations))


def _against(entry: Ranked, varies: tuple[str, ...]) -> Against:
    return Against(
        configuration=entry.row.key.label(varies),
        variant_id=entry.row.variant_id,
        ratio=entry.ratio,
        doubts=entry.doubts,
        accuracy=entry.row.accuracy.state,
        sure=entry.is_significant,
    )


def _answer(best: BestConfiguration) -> Answer:
    comparison = best.comparison
    varies = comparison.varies
    first, *others = comparison.entries
    row = first.row
    state = row.accuracy.state
    peers = [entry for entry in others if entry.row.accuracy.state == state]
    plain = [
        entry
        for entry in others
        if untouched(entry.row.key) and entry.row.key.batch_size == row.key.batch_size
    ]
    return Answer(
        cluster=row.key.cluster,
        target=row.key.target,
        model=row.key.model,
        configurations=len(comparison.entries),
        best=row.key.label(varies),
        best_variant_id=row.variant_id,
        accuracy=state,
        p50_per_sample_ms=row.p50_per_sample_ms,
        ci_per_sample_ms=row.ci_per_sample_ms,
        runner_up=_against(peers[0], varies) if peers else None,
        untouched=_against(plain[0], varies) if plain else None,
        faster_outside_gate=tuple(_against(entry, varies) for entry in best.faster_but_failed),
        not_measured=sum(entry.row.accuracy.state == "not measured" for entry in others),
    )
