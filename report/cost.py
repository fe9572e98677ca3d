"""What each variant cost: the device-seconds its pods held (contract/allocation.py, all its
runs and attempts), priced per device-hour where specs/clusters.yaml says; and what 1,000
inferences cost at its measured speed on what it held. Worked out from a Report, for the
renderers.

Two numbers answer two questions. A variant's cost is what measuring it took (start-up,
load, warm-up, measurement, retries: the benchmark's bill). Its cost per 1,000 inferences
is what serving would take on that target: the devices its pod held for the p50 latency per
sample, 1,000 times (`docs/report.md`, "Cost"), the number to choose a GPU by.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from contract.allocation import Allocation, Capacity, Unit
from contract.layout import LOCAL_CLUSTER
from contract.pricing import (
    PriceList,
    Pricing,
    device_seconds_per_1000,
    hourly,
    priced,
    table_name,
)
from contract.variant import RUN_SETTINGS, SETTING_FIELDS
from report.model import ACCURACY_ORDER, FailedVariant, Report, VariantKey, VariantRow

NOT_RECORDED: Final = (
    "not recorded: gathered before allocated time was, or a local run (localrun holds no node)"
)


@dataclass(frozen=True)
class VariantCost:
    """One variant's cost, all its runs in the reported Jobs (repeats, every attempt)."""

    cluster: str
    target: str
    key: VariantKey | None
    """None for a failure that names no variant (`index` says which)."""
    job: str
    """The Job of its run (of the median run, with repeats)."""
    index: int | None
    """A failure's index in its Job (None for a measured variant)."""
    measured: bool
    runs: int
    recorded: int
    """Its runs whose allocation is recorded: the numbers below are theirs, of those whose
    time is known (an unknown one says why in `estimate`, and leaves `cost` unknown)."""
    unit: Unit | None
    devices: float | None
    """What each pod held: GPUs, or CPUs for a pod without GPUs."""
    device_type: str | None
    capacity: Capacity | None
    seconds: float | None
    """Its share of its pods' time on their nodes, its runs summed."""
    device_seconds: float | None
    cost: float | None
    """device_seconds priced per device-hour; None without a price."""
    device_seconds_per_1000: float | None
    """What 1,000 inferences hold at its p50 latency per sample: devices x seconds."""
    cost_per_1000: float | None
    estimate: tuple[str, ...]
    """What of its numbers is estimated, in words (contract/allocation.py)."""
    unpriced: str | None
    """Why it has no cost, where it has device-seconds (or none either)."""
    cost_per_hour: float | None = None
    """What an hour of what its pod held costs: its devices at the price per device-hour. A
    control loop at a fixed rate holds its device whatever each inference costs, so this,
    not the cost per 1,000 inferences, prices holding the rate (report/cheapest.py)."""
    price_table: str | None = None
    """Which version of the fleet file priced it: its Job's (with repeats, the median
    run's), the commit that made the prices in force when the Job ran, or `checkout`
    (contract/pricing.py); None where it is not priced."""


@dataclass(frozen=True)
class TargetCost:
    """Every variant of one target in one cluster, together."""

    cluster: str
    target: str
    unit: Unit | None
    device_type: str | None
    capacity: Capacity | None
    variants: int
    device_seconds: float
    cost: float | None
    """None where any of its recorded variants has no price."""
    estimated: int
    """Variants whose device-seconds are in part estimated."""
    unrecorded: int
    """Variants with no allocation recorded: not in the sums."""


@dataclass(frozen=True)
class CostPoint:
    """One target in the latency-cost plot: its fastest configuration of a model within
    its accuracy gate (the best configuration), at the cost of 1,000 inferences there."""

    model: str
    cluster: str
    target: str
    configuration: str
    p50_per_sample_ms: float
    low_ms: float
    high_ms: float
    cost_per_1000: float
    on_front: bool
    """No other target is both as fast and as cheap: a choice worth making."""


@dataclass(frozen=True)
class Costs:
    """The cost tables of a report."""

    currency: str | None
    """None without prices: device-seconds only."""
    variants: tuple[VariantCost, ...]
    targets: tuple[TargetCost, ...]
    points: tuple[CostPoint, ...]
    """By model, fastest first."""

    @property
    def recorded(self) -> bool:
        """Whether any run has its allocation recorded."""
        return any(cost.recorded for cost in self.variants)


def costs(report: Report) -> Costs:
    """The cost of every variant and target the report shows, and the plot's points."""
    prices = report.prices
    variants = sorted(
        [
            *(_measured(row, prices) for row in report.variants),
            *(_failed(failure, prices) for failure in report.failures),
        ],
        key=_order,
    )
    return Costs(
        currency=prices.currency,
        variants=tuple(variants),
        targets=tuple(_targets(variants)),
        points=_points(report.variants, variants),
    )


def _order(cost: VariantCost) -> tuple[object, ...]:
    """By cluster and target, measured first; of the failures, those that name no variant
    first, by index; the others by their settings, in the order contract/variant.py lists
    them."""
    key = cost.key
    settings = tuple(getattr(key, name) for name in SETTING_FIELDS) if key else ()
    return (cost.cluster, cost.target, not cost.measured, settings, cost.index or 0)


def _measured(row: VariantRow, prices: Pricing) -> VariantCost:
    key = row.key
    return _cost(
        row.allocations, prices, where=(key.cluster, key.target, row.job), key=key, row=row
    )


def _failed(failure: FailedVariant, prices: Pricing) -> VariantCost:
    ref = failure.variant
    key = None
    if ref is not None:
        key = VariantKey.of(failure.cluster, failure.target, ref)
    return _cost(
        (failure.allocation,),
        prices,
        where=(failure.cluster, failure.target, failure.job),
        key=key,
        index=failure.index,
    )


def _cost(
    allocations: Sequence[Allocation | None],
    prices: Pricing,
    *,
    where: tuple[str, str, str],
    key: VariantKey | None,
    index: int | None = None,
    row: VariantRow | None = None,
) -> VariantCost:
    """The cost of a variant's runs that held `allocations` (`where`: cluster, target and
    Job), and where `row` measured it, of 1,000 inferences at its speed."""
    cluster, target, job = where
    recorded = [a for a in allocations if a is not None]
    # A run whose time is unknown says why among the estimates, and adds to no sum.
    known = [a for a in recorded if a.seconds is not None]
    first = known[0] if known else recorded[0] if recorded else None
    version, table = prices.version(cluster, job)
    price = None
    if table is not None and first is not None and table.currency == prices.currency:
        price = table.price(cluster, first)
    estimate = list(dict.fromkeys(words for a in recorded for words in a.estimate))
    if recorded and len(recorded) < len(allocations):
        estimate.append(f"{len(allocations) - len(recorded)} of its runs {NOT_RECORDED}")
    if known and len(known) < len(recorded):
        estimate.append(f"{len(recorded) - len(known)} of its runs' time unknown: not in the sum")
    device_seconds = sum(a.device_seconds or 0.0 for a in known) if known else None
    per_1000 = None
    # What a pod holds is known though its time is not: 1,000 inferences cost as much.
    if first is not None and row is not None:
        per_1000 = device_seconds_per_1000(first.devices, row.p50_per_sample_ms)
    return VariantCost(
        cluster=cluster,
        target=target,
        key=key,
        job=job,
        index=index,
        measured=row is not None,
        runs=len(allocations),
        recorded=len(recorded),
        unit=first.unit if first else None,
        devices=first.devices if first else None,
        device_type=first.device_type if first else None,
        capacity=first.capacity if first else None,
        seconds=sum(a.seconds or 0.0 for a in known) if known else None,
        device_seconds=device_seconds,
        cost=priced(device_seconds, price),
        device_seconds_per_1000=per_1000,
        cost_per_1000=priced(per_1000, price),
        estimate=tuple(estimate),
        unpriced=None if price is not None else _unpriced(cluster, first, version, table, prices),
        cost_per_hour=hourly(first.devices, price) if first is not None else None,
        price_table=version if price is not None else None,
    )


def _unpriced(
    cluster: str,
    allocation: Allocation | None,
    version: str,
    table: PriceList | None,
    prices: Pricing,
) -> str:
    if allocation is None:
        return NOT_RECORDED
    if cluster == LOCAL_CLUSTER:
        return "a local run holds no cluster's node: not priced"
    if table is None:
        return f"no prices in {table_name(version)}"
    if table.currency != prices.currency:
        return f"{table_name(version)} prices in {table.currency}, the report in {prices.currency}"
    return table.unpriced(cluster, allocation, version)


def _targets(variants: Iterable[VariantCost]) -> list[TargetCost]:
    by_target: dict[tuple[str, str], list[VariantCost]] = defaultdict(list)
    for cost in variants:
        by_target[cost.cluster, cost.target].append(cost)
    found = []
    for (cluster, target), group in sorted(by_target.items()):
        recorded = [cost for cost in group if cost.recorded]
        first = recorded[0] if recorded else None
        priced = recorded and all(cost.cost is not None for cost in recorded)
        found.append(
            TargetCost(
                cluster=cluster,
                target=target,
                unit=first.unit if first else None,
                device_type=first.device_type if first else None,
                capacity=first.capacity if first else None,
                variants=len(group),
                device_seconds=sum(cost.device_seconds or 0 for cost in recorded),
                cost=sum(cost.cost or 0 for cost in recorded) if priced else None,
                estimated=sum(bool(cost.estimate) for cost in recorded),
                unrecorded=len(group) - len(recorded),
            )
        )
    return found


def _points(rows: Sequence[VariantRow], variants: Sequence[VariantCost]) -> tuple[CostPoint, ...]:
    """Per model, each target's best configuration (the fastest per sample within its
    accuracy gate, else not known to miss it) that has a cost per 1,000 inferences; the
    Pareto front of latency and cost marked."""
    per_1000 = {cost.key: cost.cost_per_1000 for cost in variants if cost.measured}
    best: dict[tuple[str, str, str], VariantRow] = {}
    for row in rows:
        if row.accuracy.state == "accuracy_failed" or per_1000.get(row.key) is None:
            continue
        slot = (row.key.model, row.key.cluster, row.key.target)
        rank = (ACCURACY_ORDER[row.accuracy.state], row.p50_per_sample_ms)
        held = best.get(slot)
        if held is None or rank < (ACCURACY_ORDER[held.accuracy.state], held.p50_per_sample_ms):
            best[slot] = row
    by_model: dict[str, list[VariantRow]] = defaultdict(list)
    for (model, _, _), row in sorted(best.items()):
        by_model[model].append(row)
    points: list[CostPoint] = []
    for model, chosen in sorted(by_model.items()):
        chosen.sort(key=lambda row: (row.p50_per_sample_ms, per_1000[row.key] or 0, row.key))
        cheapest = float("inf")
        for row in chosen:
            cost = per_1000[row.key]
            assert cost is not None
            on_front = cost < cheapest
            cheapest = min(cheapest, cost)
            low, high = row.ci_per_sample_ms
            points.append(
                CostPoint(
                    model=model,
                    cluster=row.key.cluster,
                    target=row.key.target,
                    configuration=row.key.label(RUN_SETTINGS),
                    p50_per_sample_ms=row.p50_per_sample_ms,
                    low_ms=low,
                    high_ms=high,
                    cost_per_1000=cost,
                    on_front=on_front,
                )
            )
    return tuple(points)
