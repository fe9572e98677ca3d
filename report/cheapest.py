"""The control question's second half, answered per model and rate: which target and
configuration holds the rate within its accuracy gate for the least money, by how much, and
what could not be judged.

At a fixed rate the loop holds its device for as long as it runs, however fast each query
is: what holding the rate costs is what the pod's devices cost an hour (report/cost.py,
`cost_per_hour`), not the cost of 1,000 inferences at the p50 (`docs/report.md`, "The
cheapest that holds the rate"). Only a variant that held (report/control.py) and is not
known to fail its accuracy gate can win; one within its gate beats one whose accuracy is not
measured, as in report/answers.py. Pure, like the report it reads.
"""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contract.variant import RUN_SETTINGS
from report.control import ControlAnswer, Held
from report.cost import Costs, VariantCost
from report.model import ACCURACY_ORDER, AccuracyState, VariantKey, VariantRow


@dataclass(frozen=True)
class Candidate:
    """One fixed-rate variant of the model at the rate, as the cheapest answer weighs it."""

    row: VariantRow
    configuration: str
    """Its cluster and target, and its settings where the model's variants differ:
    "us-east/cpu fp32 batch 1"."""
    held: Held
    accuracy: AccuracyState
    cost_per_hour: float | None
    """None where it is not priced (`why`)."""
    p99_9_ms: float | None
    why: str
    """Why it cannot win, or where it can, that it held (report/control.py's reason)."""

    @property
    def can_win(self) -> bool:
        """Held, priced, and not known to fail its accuracy gate."""
        return (
            self.held == "held"
            and self.accuracy != "accuracy_failed"
            and self.cost_per_hour is not None
        )


@dataclass(frozen=True)
class CheapestHolder:
    """The cheapest target and configuration of one model that holds one rate and deadline."""

    model: str
    rate_hz: float
    deadline_ms: float
    currency: str | None
    cheapest: Candidate | None
    """None where none held within its gate with a price."""
    accuracy: AccuracyState | None
    """The cheapest's: "passed", or "not measured" where none that held is known to pass."""
    runner_up: Candidate | None
    """The next cheapest of the same accuracy standing that held; None where it is alone."""
    times_cheaper: float | None
    """The runner-up's cost an hour over the cheapest's (None: no runner-up, or the
    cheapest is free)."""
    saving_per_hour: float | None
    """The runner-up's cost an hour less the cheapest's."""
    ranked: tuple[Candidate, ...]
    """Those that can win, cheapest first (within the gate before not measured)."""
    left_out: tuple[Candidate, ...]
    """Those that cannot, each saying why: not held, undecided, outside its accuracy gate
    or not priced; cheapest first, the unpriced last."""


def cheapest_holders(control: Sequence[ControlAnswer], costs: Costs) -> tuple[CheapestHolder, ...]:
    """An answer per model, rate and deadline among the fixed-rate variants of `control`;
    none without prices (a local run's report), where no cost tells them apart."""
    if costs.currency is None:
        return ()
    by_key = {cost.key: cost for cost in costs.variants if cost.measured and cost.key}
    groups: dict[tuple[str, float, float], list[ControlAnswer]] = defaultdict(list)
    for answer in control:
        groups[answer.row.key.model, answer.rate_hz, answer.deadline_ms].append(answer)
    return tuple(
        _holder(where, group, by_key, costs.currency) for where, group in sorted(groups.items())
    )


def _configuration(key: VariantKey, varies: Sequence[str]) -> str:
    settings = key.label(varies)
    return f"{key.cluster}/{key.target}" + (f" {settings}" if settings else "")


def _candidate(
    answer: ControlAnswer, varies: Sequence[str], costs: Mapping[VariantKey, VariantCost]
) -> Candidate:
    row = answer.row
    cost = costs.get(row.key)
    price = cost.cost_per_hour if cost else None
    accuracy = row.accuracy.state
    if answer.held != "held":
        why = f"{answer.held}: {answer.why}"
    elif accuracy == "accuracy_failed":
        why = "held, but outside its accuracy gate"
    elif price is None:
        why = f"held, but not priced: {(cost.unpriced if cost else None) or 'no allocation'}"
    else:
        why = f"held: {answer.why}"
    return Candidate(
        row=row,
        configuration=_configuration(row.key, varies),
        held=answer.held,
        accuracy=accuracy,
        cost_per_hour=price,
        p99_9_ms=answer.p99_9_ms,
        why=why,
    )


def _rank(candidate: Candidate) -> tuple[object, ...]:
    cost = candidate.cost_per_hour
    tail = candidate.p99_9_ms
    # Equal prices: the one with more room under the deadline first.
    return (
        ACCURACY_ORDER[candidate.accuracy],
        cost is None,
        cost or 0.0,
        tail is None,
        tail or 0.0,
        candidate.row.key,
    )


def _holder(
    where: tuple[str, float, float],
    group: Sequence[ControlAnswer],
    costs: Mapping[VariantKey, VariantCost],
    currency: str | None,
) -> CheapestHolder:
    """`where`: the model, rate and deadline of `group`."""
    model, rate_hz, deadline_ms = where
    keys = [answer.row.key for answer in group]
    varies = [name for name in RUN_SETTINGS if len({key.value(name) for key in keys}) > 1]
    candidates = sorted((_candidate(answer, varies, costs) for answer in group), key=_rank)
    ranked = [candidate for candidate in candidates if candidate.can_win]
    left_out = sorted(
        (candidate for candidate in candidates if not candidate.can_win),
        key=lambda c: (c.cost_per_hour is None, c.cost_per_hour or 0.0, c.row.key),
    )
    cheapest = ranked[0] if ranked else None
    peers = [c for c in ranked[1:] if cheapest and c.accuracy == cheapest.accuracy]
    runner_up = peers[0] if peers else None
    times = saving = None
    if cheapest is not None and runner_up is not None:
        low, high = cheapest.cost_per_hour, runner_up.cost_per_hour
        assert low is not None and high is not None
        saving = high - low
        times = high / low if low > 0 else None
    return CheapestHolder(
        model=model,
        rate_hz=rate_hz,
        deadline_ms=deadline_ms,
        currency=currency,
        cheapest=cheapest,
        accuracy=cheapest.accuracy if cheapest else None,
        runner_up=runner_up,
        times_cheaper=times,
        saving_per_hour=saving,
        ranked=tuple(ranked),
        left_out=tuple(left_out),
    )


def _money(amount: float, currency: str | None) -> str:
    return f"{amount:,.4g} {currency or ''} an hour".replace("  ", " ")


def _named(candidates: Sequence[Candidate]) -> str:
    return "; ".join(f"{candidate.configuration} ({candidate.why})" for candidate in candidates)


def cheapest_line(holder: CheapestHolder) -> str:
    """The answer in one sentence: which, how much cheaper than the next, what was not
    judged."""
    where = f"{holder.model} at {holder.rate_hz:g} Hz (deadline {holder.deadline_ms:g} ms)"
    cheapest = holder.cheapest
    if cheapest is None:
        sentence = f"{where}: nothing held the rate within its accuracy gate at a known price"
    else:
        assert cheapest.cost_per_hour is not None
        lead = (
            "cheapest that holds it within its accuracy gate"
            if holder.accuracy == "passed"
            else "cheapest that holds it, its accuracy not measured (none held within its gate)"
        )
        sentence = (
            f"{where}: {lead} is {cheapest.configuration}, "
            f"{_money(cheapest.cost_per_hour, holder.currency)}"
        )
        runner_up = holder.runner_up
        if runner_up is None:
            within = " within its gate" if holder.accuracy == "passed" else ""
            sentence += f", the only one{within} that held"
        elif holder.saving_per_hour is not None:
            times = (
                f"{holder.times_cheaper:.2f}x cheaper than"
                if holder.times_cheaper is not None
                else "free, against"
            )
            sentence += (
                f", {times} the next, {runner_up.configuration} "
                f"({_money(holder.saving_per_hour, holder.currency)} less)"
            )
    sentence += "."
    unmeasured = [
        candidate.configuration
        for candidate in holder.ranked
        if cheapest is not None
        and holder.accuracy == "passed"
        and candidate.accuracy == "not measured"
        and (candidate.cost_per_hour or 0.0) < (cheapest.cost_per_hour or 0.0)
    ]
    if unmeasured:
        sentence += f" Cheaper, but accuracy not measured (ranked after): {', '.join(unmeasured)}."
    if holder.left_out:
        sentence += f" Could not win: {_named(holder.left_out)}."
    return sentence
