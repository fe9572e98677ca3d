"""One variant, start to finish: load, prepare, warm up, measure, summarise."""

import itertools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch.export import ExportedProgram

from contract.accuracy import Accuracy, DrawnInput
from contract.config import ModelConfig, RunConfig, ScenarioConfig, VariantConfig, program_name
from contract.result import (
    Applied,
    Compiled,
    Contention,
    GpuTelemetry,
    LoopRules,
    Memory,
    ModelLoad,
    OkResult,
    Paired,
    PhaseTiming,
    RecordedInputs,
    Rounds,
    Timings,
)
from contract.samples import encode
from contract.variant import QUANTIZERS, Precision, Quantization, Runtime, VariantRef
from runner import (
    compiling,
    contention,
    fixed_rate,
    kernels,
    pipeline,
    precision,
    progress,
    quantize,
    rounds,
    runtimes,
)
from runner.accuracy import References, compare, leaves, reference_of
from runner.device import device_name, select_device, timed_step
from runner.environment import cpu_model, fingerprint
from runner.errors import ConfigError, OutOfMemory, RuntimeFailed, UnsupportedVariant
from runner.fingerprint import stack_fingerprint
from runner.gpu_telemetry import GpuSampler, energy, nvml_uuid
from runner.inputs import (
    Batch,
    Feed,
    Queries,
    as_variant,
    check_inputs,
    draw_inputs,
    expected_inputs,
    id_bounds,
)
from runner.measure import PhaseOutcome, Step, Tick, run_phase
from runner.memory import peak_rss_bytes
from runner.programs import Programs, module_for
from runner.recorded import Replay, recorded_batches
from runner.startup import since_start
from runner.stats import summarize
from runner.threads import cpu_quota, thread_count, usable_cpus
from runner.validity import validity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPaths:
    """Where the pod's files are: MODEL_PATH, a writable scratch folder (/tmp) and the CA
    bundles its downloads trust (CA_PATH, where the pod has one)."""

    models: Path
    scratch: Path
    ca: Path | None = None


def pick_group(config: RunConfig, index: int) -> tuple[VariantConfig, ...]:
    """The variants Job index `index` runs, in order."""
    try:
        positions = config.positions(index)
    except IndexError:
        listed = "variants" if config.groups is None else "groups"
        raise ConfigError(
            f"index {index} is out of range: config.json has {listed} 0..{config.completions - 1}"
        ) from None
    for position in positions:
        if (found := config.variants[position].index) != position:
            raise ConfigError(f"config.json lists variant {found} at position {position}")
    return config.group(index)


def _training_ops(module: torch.fx.GraphModule) -> list[str]:
    # Exported programs cannot be switched to eval(): a model exported in training mode keeps
    # dropout and batch-norm statistics updates, and would be measured doing them.
    found = []
    for node in module.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is torch.ops.aten.dropout.default and node.args[2] is True:
            found.append(node.name)
        if node.target is torch.ops.aten._native_batch_norm_legit.default:
            found.append(node.name)
    return found


def _phase_timing(outcome: PhaseOutcome) -> PhaseTiming:
    return PhaseTiming(
        iterations=len(outcome.durations_ns),
        seconds=outcome.elapsed_s,
        stopped_by=outcome.stopped_by,
    )


def _tensors(output: object) -> list[torch.Tensor]:
    return [leaf for leaf in leaves(output) if isinstance(leaf, torch.Tensor)]


def _all_finite(output: object) -> bool:
    floating = [t for t in _tensors(output) if t.is_floating_point()]
    return all(bool(torch.isfinite(t).all()) for t in floating)


def _output_dtype(output: object) -> str:
    tensors = _tensors(output)
    return precision.dtype_name(tensors[0].dtype) if tensors else "none"


def _out_of_memory(error: BaseException) -> bool:
    # CUDA raises torch.OutOfMemoryError; the CPU allocator a plain RuntimeError.
    return isinstance(error, MemoryError | torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "can't allocate memory" in str(error)
    )


def _first_iteration(step: Callable[[], int], variant: VariantConfig) -> int:
    try:
        return step()
    except (RuntimeError, ValueError, TypeError, AssertionError) as error:
        # The exported program checks its inputs' count, shapes and dtypes, and raises these
        # (AssertionError for its guards) where check_inputs could not tell in advance.
        if _out_of_memory(error):
            raise
        shapes = ", ".join(f"{list(i.shape)} {i.dtype}" for i in variant.inputs)
        exact = variant.precision in {Precision.FP32, Precision.TF32}
        if exact and variant.quantization == Quantization.NONE:
            raise ConfigError(
                f"model {variant.model} fails on inputs of batch {variant.batch_size} x "
                f"({shapes}): {error}; check the spec's inputs against the exported model"
            ) from error
        raise UnsupportedVariant(
            f"model {variant.model} does not run at {variant.precision} with quantization "
            f"{variant.quantization}: {error}"
        ) from error


def _replay(config: RunConfig, programs: Programs) -> Replay | None:
    """The recorded inputs the pod's variants replay; None: they draw theirs."""
    recorded = config.recorded_inputs
    return programs.recording(recorded) if recorded is not None else None


def _batches(
    config: RunConfig, variant: VariantConfig, first: ExportedProgram, programs: Programs
) -> tuple[tuple[Batch, ...], list[DrawnInput] | None, Replay | None]:
    """The variant's batches for `first`, the program the chain's inputs go to, fp32 on the
    CPU, how they were drawn (None: recorded) and the recording replayed (None: drawn); the
    recording is held to `first`'s inputs, as the spec's were (`_load`)."""
    replay = _replay(config, programs)
    if replay is not None:
        return recorded_batches(variant, replay, expected_inputs(first)), None, replay
    drawn, how_drawn = draw_inputs(variant, id_bounds(first))
    return (drawn,), how_drawn, None


def _feed(
    batches: tuple[Batch, ...], stages: pipeline.Stages, dtype: torch.dtype, device: torch.device
) -> Feed:
    """The batches on the device, as the chain's first program takes them: a preprocess
    takes them in fp32 as drawn or recorded (the chain casts what it returns), a model in its
    compute dtype."""
    fed = torch.float32 if stages.preprocess else dtype
    return Feed(tuple(as_variant(batch, fed, device) for batch in batches))


@dataclass
class Prepared:
    """A variant ready for its timed loop, with what was measured on the way there."""

    variant: VariantConfig
    device: torch.device
    threads: int
    quota: float | None
    module: torch.fx.GraphModule
    inputs: tuple[torch.Tensor, ...]
    dtype: torch.dtype
    fp32_math: str | None
    report: quantize.QuantizationReport
    kernel_calls: dict[str, int]
    load_s: float
    copy_s: float
    prepare_s: float
    first_ns: int
    warmup: PhaseOutcome
    step: Step
    last_output: list[object]
    accuracy: Accuracy
    accuracy_s: float
    """The accuracy pass: the reference where this variant computed it, and the comparison."""
    model_load: ModelLoad | None
    """How the pod loaded its model, where this variant is the first of the model to report."""
    compiled: Compiled | None = None
    compile_s: float | None = None
    replay: Replay | None = None
    """The recorded inputs the variant replayed; None: it drew its inputs."""
    conversion_s: float | None = None
    """Inductor's compile or another runtime's conversion (runner/runtimes.py); None eager."""
    runtime_load_s: float | None = None
    """Of `conversion_s`, loading what the conversion built, where that is a step apart."""
    runtime_proof: list[str] | None = None
    stage_times: pipeline.StageTimes | None = None
    """Each stage's time in every query `step` ran, where the model runs between stages."""

    def restart_stages(self) -> None:
        """Forget the stage times of the calls so far, before the timed loop: its queries
        are the ones `latency` summarises."""
        if self.stage_times is not None:
            self.stage_times.clear()


@dataclass(frozen=True)
class _Span:
    """What the kernel and NVML saw during a timed loop, shared by the variants it ran."""

    used: Contention
    telemetry: GpuTelemetry | None
    started_s: float | None
    """When the loop began, in seconds since the process started."""
    loop_s: float
    """The timed loops' time, every variant's blocks: what an interleaved variant's share of
    the GPU's energy is taken of."""


@contextmanager
def _allocator_failures() -> Iterator[None]:
    try:
        yield
    except (MemoryError, RuntimeError) as error:
        if _out_of_memory(error):
            raise OutOfMemory(f"out of memory: {str(error).splitlines()[0]}") from error
        raise


def run_variant(
    config: RunConfig,
    variant: VariantConfig,
    paths: RunPaths,
    programs: Programs | None = None,
    references: References | None = None,
) -> OkResult:
    """Measure `variant` of `config`, taking its model from `programs` (a fresh load without)
    and its accuracy reference from `references` (computed without); raises RunnerError
    subclasses on failure."""
    ready = prepare_variant(
        config,
        variant,
        programs or Programs(paths.models, paths.scratch, paths.ca),
        references,
    )
    progress.begin([variant], "measure")
    ready.restart_stages()
    tick = progress.loop([variant], "measure", config.measure, at_least=1)
    if config.scenario is not None:
        return _fixed_rate(config, config.scenario, ready, tick)
    with _allocator_failures():
        blocks, span = _timed(
            ready, lambda: [[run_phase(ready.step, config.measure, at_least=1, tick=tick)]]
        )
    return _result(config, ready, blocks[0][0], span)


def _fixed_rate(
    config: RunConfig, scenario: ScenarioConfig, ready: Prepared, tick: Tick
) -> OkResult:
    """`ready` measured at a fixed rate (runner/fixed_rate.py): the same per-query callable
    the closed loop times, issued on the clock."""
    delays = fixed_rate.injected_delays()
    outcomes: list[fixed_rate.FixedRateOutcome] = []

    def loop() -> list[list[PhaseOutcome]]:
        with contention.ThreadWaits() as waits:
            outcomes.append(
                fixed_rate.run_fixed_rate(
                    ready.step,
                    config.measure,
                    scenario,
                    delays=delays,
                    tick=tick,
                    waits=waits.read if waits.available else None,
                )
            )
        return [[outcomes[0].as_phase()]]

    with _allocator_failures():
        blocks, span = _timed(ready, loop)
    return _result(config, ready, blocks[0][0], span, fixed=outcomes[0])


def run_interleaved(config: RunConfig, variants: Sequence[Prepared]) -> list[OkResult]:
    """Measure prepared variants of one model in alternating rounds (runner/rounds.py); every
    one after the first carries its paired comparison with the first, and, where there are
    several, every one its block medians under the loop's name, which pair any two."""
    steps = [ready.step for ready in variants]
    measured = [ready.variant for ready in variants]
    progress.begin(measured, "measure")
    for ready in variants:
        ready.restart_stages()
    tick = progress.loop(measured, "measure", rounds.loop_rule(config.measure, len(steps)))
    with _allocator_failures():
        blocks, span = _timed(variants[0], lambda: rounds.run_rounds(steps, config.measure, tick))
    reference = variants[0].variant.id
    # A loop left with one variant (the others failed to prepare) pairs nothing: its result
    # stays as a lone variant's.
    shares: list[Rounds | None] = [*rounds.round_shares(blocks)] if len(blocks) > 1 else [None]
    return [
        _result(
            config,
            ready,
            rounds.joined(own),
            span,
            paired=rounds.paired(own, blocks[0], reference) if position else None,
            round_share=share,
        )
        for position, (ready, own, share) in enumerate(zip(variants, blocks, shares, strict=True))
    ]


def prepare_variant(
    config: RunConfig,
    variant: VariantConfig,
    programs: Programs,
    references: References | None = None,
) -> Prepared:
    """Load, prepare and warm up `variant`, and compare its outputs with the reference's;
    raises RunnerError subclasses on failure."""
    with _allocator_failures():
        return _prepare(config, variant, programs, references or References())


def _placed(config: RunConfig, variant: VariantConfig) -> tuple[torch.device, float | None, int]:
    """`variant`'s device, the pod's CPU quota and the threads torch is given, set."""
    device = select_device(config.device_type, config.gpus)
    quota = cpu_quota()
    threads = thread_count(quota, usable_cpus())
    torch.set_num_threads(threads)
    log.info("variant %s (%s): %d threads, device %s", variant.index, variant.id, threads, device)
    return device, quota, threads


def _stepper(  # noqa: PLR0917 (a query's parts)
    stages: pipeline.Stages,
    feed: Feed,
    dtype: torch.dtype,
    device: torch.device,
    outputs: tuple[list[object], list[object]],
    stage_times: pipeline.StageTimes | None,
    run: Callable[..., object],
) -> Callable[[], int]:
    """The timed step of one query on the feed's next batch with `run` as the model: the
    chain's (pipeline.chain_step), where there are stages. It keeps its output in the first
    of `outputs`, and the latest on the feed's first batch (what the accuracy pass compares)
    in the second, the same list where the feed has one batch."""
    last_output, first_batch_output = outputs
    # Each step's calls count from query 0: a converted variant's first converted call is on
    # the first batch again.
    queries = Queries(feed)
    if stage_times is not None:
        step = pipeline.chain_step(
            run,
            stages,
            # Drawn inputs are every query's: no count to keep in the preprocess's time.
            next_inputs=queries if len(feed) > 1 else itertools.repeat(feed(0)).__next__,
            dtype=dtype,
            device=device,
            last_output=last_output,
            times=stage_times,
        )
    elif len(feed) == 1:
        inputs = feed(0)

        # Drawn inputs: one batch, every call's, with no count to keep.
        def call() -> None:
            last_output[:] = [run(*inputs)]

        return timed_step(call, device)
    else:

        def replayed() -> None:
            last_output[:] = [run(*queries())]

        step = timed_step(replayed, device)
    if len(feed) == 1:
        return step

    def kept() -> int:
        # After the step's clock: keeping the first batch's output is no query's time.
        ns = step()
        if queries.on_first_batch:
            first_batch_output[:] = last_output
        return ns

    return kept


def _load(
    config: RunConfig, variant: VariantConfig, programs: Programs, device: torch.device
) -> tuple[ExportedProgram, ExportedProgram, pipeline.Stages]:
    """`variant`'s model program, the program its inputs go to (its preprocess's, where it
    has one; the model's), and its stages' modules: each loaded with the same checks, the
    inputs and the chain checked."""
    model = config.models[variant.model]
    program = programs.program(variant.model, model)
    around = {
        stage: programs.program(program_name(variant.model, stage), source)
        for stage, source in model.stages().items()
    }
    first = around.get("preprocess", program)
    check_inputs(variant, expected_inputs(first))
    pipeline.check_chain(variant.model, variant.batch_size, program, around)
    return program, first, pipeline.stage_modules(around, device)


def _prepare(
    config: RunConfig, variant: VariantConfig, programs: Programs, references: References
) -> Prepared:
    if variant.model not in config.models:
        raise ConfigError(f"variant {variant.index} names model {variant.model!r}, not in models")
    device, quota, threads = _placed(config, variant)

    progress.begin([variant], "load")
    began = time.perf_counter()
    program, first, stages = _load(config, variant, programs, device)
    batches, how_drawn, replay = _batches(config, variant, first, programs)
    load_s = time.perf_counter() - began
    # The accuracy pass compares outputs on the first batch: the reference's, and the
    # variant's last call on it.
    reference, reference_s = references.unless_first_call(
        variant, program, batches[0], device, stages
    )

    progress.begin([variant], "prepare")
    began = time.perf_counter()
    dtype = precision.compute_dtype(variant.precision)
    quantized = variant.quantization != Quantization.NONE
    module = module_for(program, dtype, device, quantized=quantized)
    copy_s = time.perf_counter() - began
    load_s += copy_s
    if training := _training_ops(module):
        raise UnsupportedVariant(
            f"model {variant.model} was exported in training mode ({', '.join(training)}): "
            "call model.eval() before torch.export.export"
        )

    began = time.perf_counter()
    fp32_math = precision.set_fp32_math(variant.precision, device)
    # Cast first, then quantize, as torchao expects (`model.to(dtype)`, then `quantize_`):
    # the int4 and fp8 packings run on the device, from weights in the compute dtype.
    module = precision.cast(module, dtype, device)
    report = quantize.quantize(module, variant.quantization, device)
    feed = _feed(batches, stages, dtype, device)
    prepare_s = time.perf_counter() - began

    last_output: list[object] = []
    first_batch_output = last_output if len(feed) == 1 else []
    stage_times = pipeline.StageTimes(stages.names()) if stages.any else None
    calling = partial(
        _stepper, stages, feed, dtype, device, (last_output, first_batch_output), stage_times
    )
    step = precision.in_own_fp32_math(calling(module), fp32_math)
    # The kernel count, of the eager module (a dispatch mode turns torch.compile off, so it
    # proves the quantization of the module that is then compiled), rides on a call made
    # anyway, never the one timed as the first iteration: an eager variant's first warm-up
    # call, a compiled variant's eager first call (its compiled code's first is timed).
    counted = kernels.CountedFirst(step, report, variant.describe())
    eager = variant.runtime is Runtime.EAGER
    converted: runtimes.Converted | None = None
    # An eager variant's first call is its warm-up's first; a compiled variant's eager first
    # call is made on the way to its compile.
    progress.begin([variant], "warmup" if eager else "compile")
    with torch.inference_mode():
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        first_ns = _first_iteration(step if eager else counted, variant)
        if reference is None:
            # The call compute_reference would make (`first_call_is_reference`), made.
            reference = references.keep(variant, reference_of(first_batch_output[0]))
        if not eager:
            # Only the model is converted, on what it is called with in a query; with stages
            # around it, its own output (the chain's last is the postprocess's) shapes the
            # converted call's.
            tensors = _model_tensors(pipeline.model_inputs(stages, feed(0), dtype), variant, feed)
            model_output = module(*tensors) if stages.any else first_batch_output[0]
            converted = _in_runtime(
                module, tensors, model_output, variant, device=device, scratch=programs.scratch
            )
            step = precision.in_own_fp32_math(calling(converted.call), fp32_math)
            # The first call of the converted code: cold as an eager variant's first is.
            first_ns = step()
            progress.begin([variant], "warmup")
        # An eager variant warms up at least once, the call that counts its kernels.
        warmup = run_phase(
            counted if eager else step,
            config.warmup,
            at_least=int(eager),
            tick=progress.loop([variant], "warmup", config.warmup, at_least=int(eager)),
        )
        began = time.perf_counter()
        # The last warm-up call's output on the first batch: these inputs, this module, no
        # call of its own.
        accuracy = compare(first_batch_output[0], reference, how_drawn)
        compare_s = time.perf_counter() - began
    return Prepared(
        variant=variant,
        device=device,
        threads=threads,
        quota=quota,
        module=module,
        inputs=feed(0),
        dtype=dtype,
        fp32_math=fp32_math,
        report=report,
        kernel_calls=counted.calls,
        load_s=load_s,
        copy_s=copy_s,
        prepare_s=prepare_s,
        first_ns=first_ns,
        warmup=warmup,
        step=step,
        last_output=last_output,
        accuracy=accuracy,
        accuracy_s=reference_s + compare_s,
        compiled=converted.compiled.applied if converted and converted.compiled else None,
        compile_s=converted.compiled.seconds if converted and converted.compiled else None,
        conversion_s=converted.seconds if converted else None,
        runtime_load_s=converted.load_seconds if converted else None,
        runtime_proof=converted.proof if converted else runtimes.eager_proof(),
        stage_times=stage_times,
        # Claimed last: a variant that fails on the way leaves the load to the next one.
        model_load=programs.claim(variant.model),
        replay=replay,
    )


def _model_tensors(
    called: tuple[object, ...], variant: VariantConfig, feed: Feed
) -> tuple[torch.Tensor, ...]:
    """What the model is called with on the feed's first batch, as the tensors a converted
    program takes."""
    tensors = tuple(value for value in called if isinstance(value, torch.Tensor))
    if len(tensors) != len(called):
        raise RuntimeFailed(
            f"{variant.runtime.value}: the preprocess hands the model values other than "
            "tensors, which a converted program cannot take"
        )
    if len(feed) > 1:
        # A runtime bound to these (ONNX Runtime) copies each query's batch into them: its
        # own copy, so that no recorded batch is written over.
        return tuple(tensor.clone() for tensor in tensors)
    return tensors


def _in_runtime(
    module: torch.fx.GraphModule,
    inputs: tuple[torch.Tensor, ...],
    output: object,
    variant: VariantConfig,
    *,
    device: torch.device,
    scratch: Path,
) -> runtimes.Converted:
    if variant.runtime is Runtime.INDUCTOR:
        compiled = compiling.compile_module(
            module, variant.runtime, device, lambda run: run(*inputs), variant.describe()
        )
        applied = compiled.applied
        proof = [
            f"torch.compile {applied.backend} {applied.mode}: {applied.graphs} graph(s), "
            f"{applied.cache_hits} from its cache",
            applied.toolchain,
        ]
        return runtimes.Converted(compiled.module, compiled.seconds, proof, compiled)
    return runtimes.convert(
        module,
        inputs=inputs,
        output=output,
        runtime=variant.runtime,
        device=device,
        scratch=scratch / "runtimes",
    )


def _timed(
    ready: Prepared, loop: Callable[[], list[list[PhaseOutcome]]]
) -> tuple[list[list[PhaseOutcome]], _Span]:
    """Run a timed `loop` on `ready`'s device, which returns each variant's blocks, with
    contention and GPU telemetry read around it: one span for all the variants it ran, as
    they ran at the same moments."""
    device = ready.device
    gpu = device.type == "cuda"
    sampling = GpuSampler(nvml_uuid(device)) if gpu else nullcontext()
    with torch.inference_mode(), sampling as sampler:
        started_s = since_start()
        before = contention.read_counters()
        blocks = loop()
        after = contention.read_counters()
    outcomes = [block for own in blocks for block in own]
    cpus = contention.cpus_allowed(ready.quota, usable_cpus())
    used = contention.contention(before, after, torch.get_num_threads(), cpus)
    loop_s = sum(o.elapsed_s for o in outcomes)
    telemetry = (
        sampler.telemetry(sum(sum(o.durations_ns) for o in outcomes) / 1e9, loop_s)
        if sampler is not None
        else None
    )
    return blocks, _Span(used, telemetry, started_s, loop_s)


def _result(
    config: RunConfig,
    ready: Prepared,
    measured: PhaseOutcome,
    span: _Span,
    *,
    paired: Paired | None = None,
    round_share: Rounds | None = None,
    fixed: fixed_rate.FixedRateOutcome | None = None,
) -> OkResult:
    variant, device, module, inputs = ready.variant, ready.device, ready.module, ready.inputs
    model = config.models[variant.model]
    gpu = device.type == "cuda"
    output = ready.last_output[0]
    stats = summarize(measured.durations_ns)
    cpu = cpu_model()
    samples = variant.batch_size * stats.count
    method = ready.report.method
    scenario = fixed_rate.summarize(fixed) if fixed else None
    return OkResult(
        workflow=config.workflow,
        target=config.target,
        variant=VariantRef.of(variant),
        model_sha256=model.sha256,
        latency=stats,
        # A fixed-rate run's latencies hold its waits: its throughput is what it got through.
        throughput_samples_per_s=samples
        / (measured.elapsed_s if fixed else sum(measured.durations_ns) / 1e9),
        timings=Timings(
            load_s=ready.load_s,
            prepare_s=ready.prepare_s,
            first_iteration_ms=ready.first_ns / 1e6,
            warmup=_phase_timing(ready.warmup),
            measure=_phase_timing(measured),
            accuracy_s=ready.accuracy_s,
            model=ready.model_load,
            copy_s=ready.copy_s,
            measure_start_s=span.started_s,
            compile_s=ready.compile_s,
            conversion_s=ready.conversion_s,
            runtime_load_s=ready.runtime_load_s,
            loops=LoopRules(warmup=config.warmup, measure=config.measure),
            bound_s=config.warmup.max_time_s + config.measure.max_time_s,
        ),
        memory=Memory(
            peak_rss_bytes=peak_rss_bytes(),
            gpu_peak_allocated_bytes=torch.cuda.max_memory_allocated(device) if gpu else None,
            gpu_peak_reserved_bytes=torch.cuda.max_memory_reserved(device) if gpu else None,
        ),
        applied=Applied(
            compute_dtype=precision.dtype_name(ready.dtype),
            parameter_dtypes=precision.tensor_dtypes(module),
            input_dtypes=[precision.dtype_name(t.dtype) for t in inputs],
            output_dtype=_output_dtype(output),
            matmul_fp32_precision=ready.fp32_math,
            quantization=variant.quantization,
            linear_layers=ready.report.linear_layers,
            quantized_layers=ready.report.quantized_layers,
            unquantized_weighted_layers=ready.report.unquantized_weighted_layers,
            weight_bytes=precision.tensor_bytes(module),
            kernel=method.kernel if method else None,
            quantizer=QUANTIZERS.get(variant.quantization),
            quantized_weight_share=ready.report.quantized_weight_share,
            kernel_calls=ready.kernel_calls,
            compiled=ready.compiled,
            runtime_proof=ready.runtime_proof,
        ),
        validity=validity(
            stats,
            _all_finite(output),
            [("warmup", ready.warmup, config.warmup), ("measurement", measured, config.measure)],
            span.used,
            span.telemetry,
            open_loop=fixed_rate.open_loop(scenario) if fixed and scenario else None,
        ),
        contention=span.used,
        gpu=span.telemetry,
        energy=energy(
            span.telemetry,
            measured.elapsed_s / span.loop_s if span.loop_s else 1,
            samples,
        ),
        environment=fingerprint(device, device_name(device, cpu), ready.threads, ready.quota),
        fingerprint=stack_fingerprint(device),
        samples=encode(measured.durations_ns),
        accuracy=ready.accuracy,
        paired=paired,
        rounds=round_share,
        scenario=scenario,
        stages=ready.stage_times.summary() if ready.stage_times is not None else None,
        **_later_facts(ready.replay, model),
    )


def _later_facts(replay: Replay | None, model: ModelConfig) -> dict[str, object]:
    """What a result says of recorded inputs and of the model's family (result schema 9);
    nothing where there are none, so that the result stays what it was before them."""
    facts: dict[str, object] = {}
    if replay is not None:
        facts["recorded_inputs"] = RecordedInputs(sha256=replay.sha256, samples=replay.count)
    if model.family is not None:
        facts |= {"family": model.family, "params": model.params}
    return facts
