"""The control answers as the first table of a report with fixed-rate runs."""

from collections.abc import Sequence

from contract.proportions import MISS_TOLERANCE
from report.control import ControlAnswer
from report.stage_split import stage_names, stage_notes, stage_p50_cell, stage_p50_columns
from report.table import KEY_HEADINGS, Column, Table, columns, format_ms, interval, key_cells


def control_table(answers: Sequence[ControlAnswer]) -> Table | None:
    """Held or not, per fixed-rate variant; None without any."""
    if not answers:
        return None
    stages = stage_names([answer.row for answer in answers])
    return Table(
        title="Control loops: does it hold the rate?",
        columns=(
            *columns(*KEY_HEADINGS),
            Column("held"),
            *(
                Column(heading, is_numeric=True)
                for heading in (
                    "rate Hz",
                    "deadline ms",
                    "missed",
                    "missed 95% CI",
                    "p99.9 ms",
                    "p99.9 95% CI",
                    "jitter ms",
                    "longest miss run",
                )
            ),
            *stage_p50_columns(stages),
            Column("why"),
        ),
        rows=tuple(
            (
                *key_cells(answer.row.key),
                answer.held,
                f"{answer.rate_hz:g}",
                format_ms(answer.deadline_ms),
                f"{answer.miss_rate:.2%}",
                f"{answer.miss_rate_interval[0]:.2%}-{answer.miss_rate_interval[1]:.2%}",
                "?" if answer.p99_9_ms is None else format_ms(answer.p99_9_ms),
                "" if answer.p99_9_interval is None else interval(*answer.p99_9_interval),
                format_ms(answer.jitter_ms),
                str(answer.longest_miss_run),
                *(stage_p50_cell(answer.row, name) for name in stages),
                answer.why,
            )
            for answer in answers
        ),
        notes=(
            f"held: the miss rate's 95% interval (Wilson) within {MISS_TOLERANCE:.1%}, the "
            "share a p99.9 deadline allows, and p99.9 within the deadline; not held: the "
            "interval above it or p99.9 past the deadline; undecided: neither, or a run the "
            "machine disturbed (contended, throttled, stopped early), which blames no model.",
            "Latency counts from each query's scheduled arrival, its queueing included. "
            "jitter: p99 of how far consecutive completions stray from the period.",
            "p99.9 ?: fewer than 10,000 queries, too few for it. Its 95% CI: the order "
            "statistics a Binomial(n, 0.999) count allows, from the stored per-query "
            "latencies.",
            *stage_notes(stages),
        ),
    )
