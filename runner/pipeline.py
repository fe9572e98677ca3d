"""A model run between its stages: the chain preprocess -> model -> postprocess, the one
callable a loop calls per query, and each stage's time in every query.

Only the model is the variant's: cast, quantized and compiled as it says. The stages run as
loaded, in fp32 on the variant's device, whatever the variant; the model's floating inputs
are cast to its compute dtype on the way in and its floating outputs to fp32 on the way
out, casts the variant's precision costs, timed as the model's. A stage's outputs are the
next one's positional inputs: a tensor is one input, a tuple or list of them several.
"""

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule

from contract.config import Stage
from contract.inputs import GivenInput, handover_misfit
from contract.result import StageLatency, StageName
from runner import precision
from runner.errors import StageMismatch
from runner.inputs import expected_inputs
from runner.programs import module_for

Call = Callable[..., object]


@dataclass(frozen=True)
class Stages:
    """The modules run around a model, each on the variant's device in fp32."""

    preprocess: GraphModule | None = None
    postprocess: GraphModule | None = None

    @property
    def any(self) -> bool:
        return self.preprocess is not None or self.postprocess is not None

    def names(self) -> tuple[StageName, ...]:
        """The stages a query of this chain times, in the order they run."""
        return (
            *(("preprocess",) if self.preprocess is not None else ()),
            "model",
            *(("postprocess",) if self.postprocess is not None else ()),
        )


def stage_modules(programs: Mapping[Stage, ExportedProgram], device: torch.device) -> Stages:
    """The stages' modules, as loaded, in fp32 on `device`: the program's own tensors where
    they are there already, else a copy's (module_for)."""

    def module(stage: Stage) -> GraphModule | None:
        program = programs.get(stage)
        if program is None:
            return None
        own = module_for(program, torch.float32, device, quantized=False)
        return precision.cast(own, torch.float32, device)

    return Stages(preprocess=module("preprocess"), postprocess=module("postprocess"))


def arguments(output: object) -> tuple[object, ...]:
    """A stage's output as the next stage's positional inputs."""
    return tuple(output) if isinstance(output, tuple | list) else (output,)


def _cast(values: Sequence[object], dtype: torch.dtype) -> tuple[object, ...]:
    return tuple(
        value.to(dtype)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype
        else value
        for value in values
    )


def model_inputs(
    stages: Stages, inputs: Sequence[object], dtype: torch.dtype
) -> tuple[object, ...]:
    """What the model is called with on a query of `inputs`: the preprocess's outputs, cast
    to the model's compute `dtype`."""
    features = arguments(stages.preprocess(*inputs)) if stages.preprocess else tuple(inputs)
    return _cast(features, dtype)


def run_chain(model: Call, stages: Stages, inputs: Sequence[object], dtype: torch.dtype) -> object:
    """One query of the chain, untimed: the reference's call."""
    output = model(*model_inputs(stages, inputs, dtype))
    if stages.postprocess is None:
        return output
    return stages.postprocess(*_cast(arguments(output), torch.float32))


@dataclass
class StageTimes:
    """Each stage's nanoseconds in every query timed since the last `clear`, by stage."""

    names: tuple[StageName, ...]
    durations_ns: dict[StageName, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget the queries so far: warm-up's, before the timed loop."""
        self.durations_ns = {name: [] for name in self.names}

    def summary(self) -> dict[StageName, StageLatency]:
        """Each stage's percentiles and share of the chain over the queries kept."""
        totals = {name: sum(times) for name, times in self.durations_ns.items()}
        chain = sum(totals.values())
        summary = {}
        for name, times in self.durations_ns.items():
            if not times:
                continue
            ms = np.asarray(times, dtype=np.float64) / 1e6
            p50, p90, p99 = np.percentile(ms, [50, 90, 99])
            summary[name] = StageLatency(
                p50_ms=float(p50),
                p90_ms=float(p90),
                p99_ms=float(p99),
                mean_ms=float(ms.mean()),
                max_ms=float(ms.max()),
                share=totals[name] / chain if chain else 0.0,
            )
        return summary


def chain_step(
    model: Call,
    stages: Stages,
    *,
    next_inputs: Callable[[], Sequence[object]],
    dtype: torch.dtype,
    device: torch.device,
    last_output: list[object],
    times: StageTimes,
) -> Callable[[], int]:
    """The per-query callable of a pipeline, as runner.measure's Step: runs one query of
    the chain on what `next_inputs` gives (runner.inputs.Queries), keeps its output in
    `last_output`, appends each stage's time to `times` and returns the chain's, in
    nanoseconds. On a GPU, CUDA events mark the stages'
    boundaries and one sync ends the query (a host clock would time only the launches)."""
    names = times.names

    def query(mark: Callable[[], None]) -> None:
        inputs = next_inputs()
        if stages.preprocess is not None:
            features = _cast(arguments(stages.preprocess(*inputs)), dtype)
            mark()
        else:
            features = _cast(inputs, dtype)
        output = model(*features)
        if stages.postprocess is not None:
            output = _cast(arguments(output), torch.float32)
            mark()
            output = stages.postprocess(*output)
        last_output[:] = [output]

    if device.type == "cuda":

        def cuda_step() -> int:
            events = [torch.cuda.Event(enable_timing=True)]  # type: ignore[no-untyped-call]

            def mark() -> None:
                event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                event.record()
                events.append(event)

            events[0].record()
            query(mark)
            mark()
            events[-1].synchronize()
            spans = [int(a.elapsed_time(b) * 1e6) for a, b in pairwise(events)]
            return _kept(times, names, spans)

        return cuda_step

    def cpu_step() -> int:
        marks = [time.perf_counter_ns()]
        query(lambda: marks.append(time.perf_counter_ns()))
        marks.append(time.perf_counter_ns())
        return _kept(times, names, [b - a for a, b in pairwise(marks)])

    return cpu_step


def _kept(times: StageTimes, names: tuple[StageName, ...], spans: list[int]) -> int:
    for name, span in zip(names, spans, strict=True):
        times.durations_ns[name].append(span)
    return sum(spans)


def check_chain(
    model: str,
    batch_size: int,
    program: ExportedProgram,
    stages: Mapping[Stage, ExportedProgram],
) -> None:
    """Raise StageMismatch where a stage returns what the next one cannot take, read from
    the programs themselves before any query runs: the preprocess's outputs against the
    model's inputs, the model's outputs against the postprocess's."""
    pairs = []
    if (preprocess := stages.get("preprocess")) is not None:
        pairs.append((f"the preprocess of model {model}", preprocess, f"model {model}", program))
    if (postprocess := stages.get("postprocess")) is not None:
        pairs.append((f"model {model}", program, f"the postprocess of model {model}", postprocess))
    for giver_name, giver, taker_name, taker in pairs:
        given = _outputs(giver)
        if given is None:
            continue  # an output whose per-sample size is symbolic: the first query says
        misfit = handover_misfit(given, expected_inputs(taker), batch_size)
        if misfit is not None:
            returned = ", ".join(f"[{', '.join(map(str, g.shape))}] {g.dtype}" for g in given)
            raise StageMismatch(
                f"{giver_name} returns ({returned}) per sample, which {taker_name} cannot "
                f"take: {misfit}; export the stages from one pipeline (`benchfleet export "
                "--preprocess/--postprocess`), each on what the stage before it returns"
            )


def _outputs(program: ExportedProgram) -> list[GivenInput] | None:
    """The program's user outputs per sample (the batch dimension left out); None where
    one is not a tensor of fixed per-sample sizes."""
    output = next(node for node in program.graph.nodes if node.op == "output")
    nodes = {getattr(node, "name", None): node for node in output.args[0]}
    found = []
    for name in program.graph_signature.user_outputs:
        value = nodes[name].meta.get("val") if name in nodes else None
        if not isinstance(value, torch.Tensor) or value.dim() == 0:
            return None
        sizes = value.shape[1:]
        if not all(isinstance(size, int) for size in sizes):
            return None
        found.append(
            GivenInput(tuple(int(size) for size in sizes), precision.dtype_name(value.dtype))
        )
    return found
