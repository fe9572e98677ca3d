"""The tables of what ran: every variant's numbers, the flagged runs and why, the failures,
the Jobs and where their numbers come from, start-up and memory per target, and energy."""

from collections.abc import Sequence
from typing import Final

from contract.clocks import CLOCK_TOLERANCE
from contract.fingerprint import Fingerprint
from contract.result import ENERGY_ON_CPU, StageName
from contract.text import plural
from contract.variant import SETTING_FIELDS, VariantRef
from report.estimates import PlanCheck
from report.machines import MachineLack
from report.model import FailedVariant, JobSummary, VariantRow
from report.stage_split import stage_names, stage_p50_cell
from report.startup import Startup
from report.table import (
    KEY_HEADINGS,
    Column,
    Table,
    columns,
    format_bytes,
    format_figure,
    format_finished,
    format_ms,
    format_p99,
    format_p99_9,
    format_ratio,
    key_cells,
    row_interval,
    significant,
)

_CI_NOTE: Final = (
    "95% CI of the median: from every iteration's time (order statistics, distribution-free) "
    "where the result carries them; ≈ marks the IQR approximation for results without samples. "
    "Ratios combine both sides' uncertainty (Price & Bonett 2002); a paired one comes from "
    "rounds alternating the two in one pod (benchmark.interleave), each round compared within "
    "itself; over repeats, the median of the runs' paired ratios, its CI spanning all of theirs."
)
ACCURACY_NOTE: Final = (
    "accuracy: the outputs against the untouched program's fp32 outputs on the same inputs, "
    "judged by the variant's gate (docs/runner.md): passed, accuracy_failed (it computes "
    "something else: measured and stored, never the best), or not measured (never taken for "
    "passing; not meaningful where the reference's outputs are constant, which any variant "
    "returning the same matches)."
)
_FLAGS_NOTE: Final = (
    "flags: the runner's validity flags (noisy, contended, throttled, stopped early); a "
    "flagged run never decides a comparison."
)


def _flags(row: VariantRow) -> str:
    return "; ".join(row.doubts)


def _runs(row: VariantRow) -> str:
    """How many runs the row's number is the median of, and how far they spread."""
    if row.repeats is None:
        return "1"
    return f"{len(row.repeats.p50s_ms)} runs, spread ±{row.repeats.spread:.1%}"


_RUNS_NOTE: Final = (
    "runs: where the spec repeats a variant (benchmark.repeats), its p50 is the median of its "
    "runs' p50s and the other numbers the median run's; the spread is their largest p50 over "
    "their smallest, less 1. A difference within either side's spread is inconclusive."
)


def variants_table(rows: Sequence[VariantRow]) -> Table:
    """Every measured variant's numbers, where they come from and what is doubted."""
    # Shown only where a variant ran more than once: a report without repeats is unchanged.
    repeated = any(row.repeats for row in rows)
    # Shown only where a run had enough iterations for it: a report of today's runs (a few
    # hundred iterations) is unchanged.
    deep = any(row.is_p99_9_reliable for row in rows)
    return Table(
        title=f"Variants ({len(rows)})",
        columns=columns(
            *KEY_HEADINGS,
            *("p50 ms", "95% CI ms", "p90 ms", "p99 ms"),
            *(("p99.9 ms",) if deep else ()),
            *("samples/s (p50)", "cv", "iters"),
            *(("runs",) if repeated else ()),
            *("quantized", "accuracy", "flags", "device", "job", "finished"),
        ),
        rows=tuple(
            (
                *key_cells(row.key),
                format_ms(row.latency.p50_ms),
                row_interval(row, row.ci_low_ms, row.ci_high_ms),
                format_ms(row.latency.p90_ms),
                format_p99(row),
                *((format_p99_9(row),) if deep else ()),
                f"{row.samples_per_s:,.1f}",
                f"{row.latency.cv:.3f}",
                str(row.latency.count),
                *((_runs(row),) if repeated else ()),
                row.quantized or "",
                row.accuracy.describe(),
                _flags(row),
                row.device_name or "",
                row.job,
                format_finished(row.finished_at),
            )
            for row in rows
        ),
        notes=(
            _CI_NOTE,
            "p99? : too few iterations beyond p99 for it to be reliable"
            + (" (p99.9?: beyond p99.9)." if deep else "."),
            "samples/s (p50): batch size over the median latency, the statistic of every table.",
            _FLAGS_NOTE,
            "job, finished: the run the number comes from (UTC).",
            "quantized: the layers the quantization reached, as the runner proved it; the "
            "others ran in the precision (an int8 label over mostly fp32 compute).",
            ACCURACY_NOTE,
            *((_RUNS_NOTE,) if repeated else ()),
        ),
        kind="detail",
    )


def flagged_table(rows: Sequence[VariantRow]) -> Table | None:
    """The flagged runs and the runner's reasons; None where none is flagged."""
    flagged = [row for row in rows if row.doubts]
    if not flagged:
        return None
    return Table(
        title=f"Flagged ({len(flagged)}): why these runs decide nothing",
        columns=columns(*KEY_HEADINGS, "flags", "why"),
        rows=tuple(
            (*key_cells(row.key), _flags(row), "; ".join(row.flag_reasons)) for row in flagged
        ),
        notes=(
            "why: the runner's own reasons, measured during the timed loop (docs/runner.md). "
            "Every comparison with these runs is inconclusive.",
        ),
        kind="detail",
    )


def _named(ref: VariantRef | None) -> tuple[str, ...]:
    if ref is None:
        return ("",) * len(SETTING_FIELDS)
    return tuple(str(getattr(ref, name)) for name in SETTING_FIELDS)


def failures_table(failures: Sequence[FailedVariant]) -> Table | None:
    """The variants that gave no measurement, and why; None where none failed."""
    if not failures:
        return None
    return Table(
        title=f"Failed ({len(failures)})",
        columns=columns(
            "cluster",
            "target",
            *KEY_HEADINGS[2:],
            *("job", "index", "attempts", "finished", "explanation"),
        ),
        rows=tuple(
            (
                failed.cluster,
                failed.target,
                *_named(failed.variant),
                failed.job,
                str(failed.index),
                str(failed.attempts),
                format_finished(failed.finished_at),
                failed.explanation,
            )
            for failed in failures
        ),
    )


def jobs_table(jobs: Sequence[JobSummary]) -> Table:
    """Every Job of the runs, reported or not."""
    return Table(
        title=f"Jobs ({len(jobs)})",
        columns=columns(
            *("cluster", "target", "job", "spec", "finished", "measured", "failed", "reported")
        ),
        rows=tuple(
            (
                job.cluster,
                job.target,
                job.job,
                (job.spec_sha256 or "")[:12],
                format_finished(job.finished_at) + (" (ahead)" if job.finished_ahead else ""),
                str(job.measured),
                str(job.failed),
                "yes" if job.reported else "no",
            )
            for job in jobs
        ),
        notes=(
            "One Job per target and spec revision, newest first (what dist/ runs, then by spec "
            "revision in git: never by finish times); spec: the spec file's sha256, finished: "
            "when its last variant finished (UTC), as its node's clock said; ahead: later than "
            f"the collector stored it, or than now, by over {CLOCK_TOLERANCE.seconds} s (or "
            "held to the collector's clock when stored): its node's clock ran ahead.",
        ),
        kind="detail",
    )


_STARTUP_NOTE: Final = (
    "Each phase's median and longest, counted where it is paid: a pod's start once per pod, a "
    "model's file and torch.export.load once per model and pod (its first variant there), "
    "the rest per variant (compile: inductor's torch.compile and compiling call, or another "
    "runtime's conversion, of which loading what it built is a row apart). "
    "Waiting for a node and the pod's start come from the pod's status "
    "(whole seconds: the node's image pulls, an oci model's too, are in the pod's start); the "
    "rest from the runner. To first measurement: from getting a node to the first timed loop."
)


def startup_table(startup: Startup) -> Table | None:
    """Where one target's pods spent their time before measuring."""
    if not startup.phases:
        return None  # runs of runners and collectors before the start-up timings
    share = (
        f"measurement {startup.measured_share:.0%} of their wall time"
        if startup.measured_share is not None
        else "their wall time unknown"
    )
    if startup.compiled_share is not None:
        share += f", compile {startup.compiled_share:.0%}"
    return Table(
        title=(
            f"Start-up on {startup.target} ({startup.cluster}): "
            f"{plural(startup.pods, 'pod')}, {share}"
        ),
        columns=columns("phase", "per", "n", "median s", "max s"),
        rows=tuple(
            (
                phase.phase,
                phase.per,
                str(phase.count),
                significant(phase.median_s, 3),
                significant(phase.max_s, 3),
            )
            for phase in startup.phases
        ),
        notes=(_STARTUP_NOTE,),
        kind="detail",
    )


def memory_table(startup: Startup) -> Table | None:
    """One target's peak memory per model, against the model's file."""
    if not startup.memory:
        return None
    return Table(
        title=f"Memory on {startup.target} ({startup.cluster}): the runner's peak RSS per model",
        columns=columns(
            "model",
            "file",
            "n",
            "after others",
            "peak RSS median",
            "peak RSS max",
            "added median",
            "added max",
            "max / file",
        ),
        rows=tuple(
            (
                memory.model,
                format_bytes(memory.file_bytes) if memory.file_bytes is not None else "-",
                str(memory.variants),
                str(memory.after_others),
                format_bytes(memory.median_peak_rss_bytes),
                format_bytes(memory.max_peak_rss_bytes),
                format_bytes(memory.median_added_bytes),
                format_bytes(memory.max_added_bytes),
                format_ratio(ratio) if (ratio := memory.max_over_file) is not None else "-",
            )
            for memory in startup.memory
        ),
        notes=(
            "The runner process's peak resident memory (the kernel's VmHWM) in the variants of "
            "each model, against the size of the model's .pt2: torch itself takes a few "
            "hundred MiB, and a pod running several models holds each it loaded.",
            "A peak is the pod's high-water mark so far, not the variant's own: in a pod of "
            "several variants it holds what those before it held ('after others' counts the "
            "variants that ran after another in their pod). 'added' is how much each variant "
            "raised that mark (the first in its pod: its whole peak), 0 where it fitted in "
            "what was already held.",
        ),
        kind="detail",
    )


def _listed(values: Sequence[str], most: int = 3) -> str:
    listed = ", ".join(values[:most])
    return f"{listed} (+{len(values) - most})" if len(values) > most else listed or "-"


def provenance_table(jobs: Sequence[JobSummary]) -> Table:
    """Where the reported numbers come from: enough to rerun them, or to doubt them."""
    reported = [job for job in jobs if job.reported]
    return Table(
        title="Provenance",
        columns=columns(
            *(
                "cluster",
                "target",
                "job",
                "spec file",
                "spec",
                "commit",
                "image",
                "torch",
                "device",
                "nodes",
                "runs",
            )
        ),
        rows=tuple(
            (
                job.cluster,
                job.target,
                job.job,
                job.spec_file or "-",
                (job.spec_sha256 or "")[:12] or "-",
                (job.spec_commit or "")[:12] or "-",
                job.runner or "-",
                _listed(job.torch),
                _listed(job.devices),
                _listed(job.nodes),
                f"{format_finished(job.first_finished_at)} to {format_finished(job.finished_at)}",
            )
            for job in reported
        ),
        notes=(
            "Per reported Job: the spec file, its sha256 and the git commit holding those "
            "bytes (- where none of its last 50 does), the runner image its pods ran (a local "
            "try runs this checkout's runner, whatever image its Job names), "
            "the torch, devices and nodes its results report, and when its first and last "
            "variants finished (UTC).",
        ),
        kind="detail",
    )


def _stack_cells(stack: Fingerprint) -> tuple[str, ...]:
    clocks = (stack.sm_application_clock_mhz, stack.memory_application_clock_mhz)
    return (
        stack.driver_version or "-",
        " / ".join(v or "-" for v in (stack.cuda_runtime, stack.cudnn, stack.cublas)),
        " ".join(filter(None, (stack.gpu_name, stack.gpu_uuid))) or "-",
        stack.mig or "-",
        "-" if stack.ecc is None else "on" if stack.ecc else "off",
        "-" if stack.power_limit_w is None else format_figure(stack.power_limit_w),
        "-" if None in clocks else f"{clocks[0]} / {clocks[1]}",
        " ".join(filter(None, (stack.cpu_model, stack.cpu_microcode))) or "-",
        stack.cpu_governor or "-",
        stack.image_digest or "-",
        ", ".join(f"{name} {version}" for name, version in sorted(stack.libraries.items())) or "-",
    )


def stacks_table(jobs: Sequence[JobSummary]) -> Table | None:
    """The stacks each reported Job's results were measured on (None: no runner said)."""
    rows = tuple(
        (job.cluster, job.job, *_stack_cells(stack))
        for job in jobs
        if job.reported
        for stack in job.stacks
    )
    if not rows:
        return None
    return Table(
        title="Stacks",
        columns=columns(
            *("cluster", "job", "driver", "CUDA / cuDNN / cuBLAS", "GPU", "MIG", "ECC"),
            *("power limit W", "app clocks MHz (SM / memory)", "CPU (microcode)", "governor"),
            *("image digest", "libraries"),
        ),
        rows=rows,
        notes=(
            "Per reported Job, each stack its results name (their `fingerprint`, "
            "docs/runner.md): the versions as the runner's process had them loaded, the "
            "GPU as NVML says, the CPU as /proc and /sys say, the image digest from the "
            "pod's status; - where the device has none or the runner could not read it.",
        ),
        kind="detail",
    )


def _energy_cells(row: VariantRow) -> tuple[str, str]:
    """mJ per inference and average W, or why there are none."""
    energy = row.energy
    if energy is None:
        return "-", "not measured: a runner before energy"
    if energy.unavailable == ENERGY_ON_CPU:
        return "-", "not available: a CPU target"
    if energy.joules_per_inference is None:
        return "-", f"unknown: {energy.unavailable}"
    return format_figure(energy.joules_per_inference * 1000), format_figure(energy.average_w)


def energy_table(rows: Sequence[VariantRow]) -> Table | None:
    """Each variant's energy per inference and average power, the throttle reasons beside
    them, or why there are none: shown where any GPU variant has a word on it."""
    if all(row.energy is None or row.energy.unavailable == ENERGY_ON_CPU for row in rows):
        return None
    return Table(
        title="Energy",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            Column("mJ/inference", True),
            Column("average W", True),
            Column("throttle reasons"),
            Column("device"),
        ),
        rows=tuple(
            (
                *key_cells(row.key),
                *_energy_cells(row),
                ", ".join(row.throttle_reasons) or "none",
                row.device_name or "",
            )
            for row in rows
        ),
        notes=(
            "From NVML's total-energy counter, read as the timed loop started and as it ended "
            "(docs/runner.md, Energy): the whole GPU's energy over the samples the loop "
            "computed (an interleaved variant's share by its time), and the average power; a "
            "throttle reason (power cap, thermal) says the GPU slowed its clocks in that loop.",
        ),
        kind="detail",
    )


def stages_table(rows: Sequence[VariantRow]) -> Table | None:
    """Where each pipeline's time goes: every stage's median per query and its share of the
    chain, beside the chain's median; shown where any variant runs between stages."""
    staged = [row for row in rows if row.stages]
    if not staged:
        return None
    names = stage_names(staged)
    return Table(
        title="Stages",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            *(
                column
                for name in names
                for column in (Column(f"{name} p50 ms", True), Column(f"{name} share", True))
            ),
            Column("chain p50 ms", True),
        ),
        rows=tuple(
            (
                *key_cells(row.key),
                *(cell for name in names for cell in _stage_cells(row, name)),
                significant(row.latency.p50_ms, 4),
            )
            for row in staged
        ),
        notes=(
            "Each stage's median time per query and its share of the chain's time over the "
            "same queries (docs/runner.md, Pipelines): the preprocess and postprocess run in "
            "fp32 as exported whatever the variant; the model's time holds the casts to and "
            "from its precision. The chain's latency is the variant's everywhere else.",
        ),
        kind="detail",
    )


def _stage_cells(row: VariantRow, name: StageName) -> tuple[str, str]:
    stage = row.stages.get(name) if row.stages else None
    return stage_p50_cell(row, name), "-" if stage is None else f"{stage.share:.0%}"


def _went_by(check: PlanCheck) -> str:
    """What the recomputed estimate went by, in words."""
    estimate = check.estimate
    if estimate is None:
        return "cannot be recomputed: its results (before schema 6) do not say its bounds"
    parts = [f"{estimate.from_history} by earlier runs"]
    if estimate.from_history < check.variants:
        compiling = f", {estimate.compiled} compiling" if estimate.compiled else ""
        parts.append(f"{check.variants - estimate.from_history} by loops and allowances{compiling}")
    return f"{', '.join(parts)} ({plural(check.earlier_jobs, 'earlier Job')})"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else significant(seconds / 60, 3)


def plan_table(checks: Sequence[PlanCheck]) -> Table | None:
    """Per reported Job, `make plan`'s estimate recomputed against what its pods took."""
    if not checks:
        return None
    return Table(
        title="make plan's estimate against what the pods took",
        columns=(
            *columns("cluster", "target", "job"),
            Column("estimate pod-min", True),
            Column("at most pod-min", True),
            Column("went by"),
            Column("took pod-min", True),
            Column("took / estimate", True),
        ),
        rows=tuple(
            (
                check.cluster,
                check.target,
                check.job,
                _minutes(check.estimate.seconds if check.estimate else None),
                _minutes(check.estimate.high_s if check.estimate else None),
                _went_by(check),
                _minutes(check.took_s) + (" (allocated)" if check.took_by == "allocated" else ""),
                format_ratio(ratio) if (ratio := check.ratio) is not None else "-",
            )
            for check in checks
        ),
        notes=(
            "The estimate `make plan` gave the Job, recomputed by the plan's own code "
            "(contract/estimate.py) from what it had: the Job's variants, pods, model loads and "
            "bounds, and the runs of the workflow's earlier Jobs in the cluster that finished "
            "before its first pod was created. A variant such a run measured goes by what it "
            "took; the others by their loops and the allowances for compile, conversion, "
            "first calls, start-up and loads (docs/synth.md): the estimate is the likely pod "
            "time, at most the most they may take (loops to their max_time, allowances at "
            "their most). Results say a loop's bounds, not its minimums, so a variant no "
            "earlier run measured counts its loops at their bounds here, where the plan "
            "counted them at their minimums. Took: the variants' allocated "
            "time where gather recorded it, else the pods' wall time (getting a node to the "
            "runner's end). Above 1x the plan under-estimated.",
        ),
        kind="detail",
    )


def lacks_table(lacks: Sequence[MachineLack]) -> Table | None:
    """The variants that ran on machines without the instructions they need, and what that
    does to their numbers; None where none did (or no result says)."""
    if not lacks:
        return None
    return Table(
        title=f"Instruction sets ({len(lacks)}): variants on machines without what they need",
        columns=(
            *columns("cluster", "target", "machine", "needs", "lacks"),
            Column("variants", True),
            Column("so"),
        ),
        rows=tuple(
            (
                found.cluster,
                found.target,
                found.machine,
                found.lack.need.name,
                found.lack.missing,
                str(found.lack.variants),
                found.lack.need.without,
            )
            for found in lacks
        ),
        notes=(
            "From the CPU flags and GPU compute capability the runner recorded (result schema "
            "8), held to contract/instructions.py: x86 lists any one flag that would do. Such "
            "variants ran correctly and measured what this machine does; another CPU or GPU "
            "with the instructions runs them faster.",
        ),
    )
