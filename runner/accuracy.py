"""The accuracy pass: is the variant still the same model? The untouched program's fp32 eager
outputs on the variant's own seeded inputs (the reference, computed once per model, batch
size and inputs in a pod), and the variant's outputs compared with them, outside warmup and
the timed loop (docs/runner.md, "Accuracy").

A variant that runs the untouched program as the reference does (`first_call_is_reference`)
computes the reference with its own first call: the runner takes it from that call's output
(`References.keep`) rather than make the same call twice before its first measurement.

The comparison takes the variant's output of its last warm-up call, which ran on exactly
these inputs: no extra call of the variant, whatever its precision or quantization did to
the module (the pass compares outputs, not modules). The numbers are measured here and
judged elsewhere (contract.accuracy.judge).
"""

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import torch
from torch.export import ExportedProgram
from torch.utils import _pytree as pytree

from contract.accuracy import INPUT_SEED, NOT_MEANINGFUL, Accuracy, DrawnInput, OutputAccuracy
from contract.config import InputConfig, VariantConfig
from contract.variant import Precision, Quantization
from runner import precision, progress
from runner.pipeline import Stages, run_chain
from runner.programs import is_own, module_for


@dataclass(frozen=True)
class Reference:
    """The untouched program's outputs (flattened in order), or why there are none."""

    outputs: tuple[object, ...] | None
    error: str | None = None
    constant: str | None = None
    """Where every output of more than one element is constant, which values they hold:
    nothing compared with it tells a variant that computes the model from one that does not."""


def reference_of(output: object) -> Reference:
    """The reference that a call of the untouched program returned as `output`."""
    outputs = tuple(leaves(output))
    return Reference(outputs, constant=_constant(outputs))


def _constant(outputs: tuple[object, ...]) -> str | None:
    """`outputs` in words where each one of more than one element holds a single value (over
    its finite elements), and at least one does; else None."""
    said = []
    for index, output in enumerate(outputs):
        # One element is one value, whatever the model computes: it says nothing either way.
        if not isinstance(output, torch.Tensor) or output.numel() <= 1:
            continue
        values = output.detach().flatten()
        if values.is_floating_point():
            values = values[torch.isfinite(values)]
        if values.numel() == 0 or bool((values != values[0]).any()):
            return None
        value = values[0].item()
        shape = ", ".join(map(str, output.shape))
        said.append(f"output {index} [{shape}] all {value:.6g}")
    return "; ".join(said) or None


def first_call_is_reference(
    variant: VariantConfig, program: ExportedProgram, device: torch.device
) -> bool:
    """Whether `variant`'s first call is `compute_reference`'s call: on the program's own
    module (`module_for` copies, casts and quantizes nothing), eager (a compiled variant's
    first call is of its eager module too), in IEEE fp32 math (what `set_fp32_math` sets for
    fp32 on CUDA; a CPU's only fp32 math), on the same drawn inputs. Any other variant must
    not give the reference: its module is cast or quantized, or its math is TF32."""
    return (
        variant.precision == Precision.FP32
        and variant.quantization == Quantization.NONE
        and is_own(program, torch.float32, device, quantized=False)
    )


_Key = tuple[str, int, tuple[InputConfig, ...]]
_ERROR_CHARS: Final = 300
"""Of an error's first line: the accuracy's summary travels in the termination message."""


@dataclass
class References:
    """The references a pod has computed for its current model, by batch size and inputs: a
    group's variants of one model at one batch size share one, however many precisions they
    try. Another model's variant drops them (synth keeps a model's variants together in a
    group), so the outputs held stay one model's, on its device."""

    _computed: dict[_Key, Reference] = field(default_factory=dict)

    def held(self, variant: VariantConfig) -> Reference | None:
        """The reference an earlier variant of the pod computed for `variant`'s model, batch
        size and inputs, if one did."""
        return self._computed.get(_key(variant))

    def keep(self, variant: VariantConfig, reference: Reference) -> Reference:
        """Hold `reference`, computed for `variant`, for the pod's later variants of its
        model, batch size and inputs; return it."""
        if any(model != variant.model for model, _, _ in self._computed):
            self._computed.clear()
        self._computed[_key(variant)] = reference
        return reference

    def unless_first_call(
        self,
        variant: VariantConfig,
        program: ExportedProgram,
        inputs: tuple[torch.Tensor, ...],
        device: torch.device,
        stages: Stages | None = None,
    ) -> tuple[Reference | None, float]:
        """The reference of `variant`'s model on `inputs` (fp32, as drawn), and the seconds
        spent computing it here (0 where an earlier variant of the pod did); but None (and
        0 s) where no earlier variant computed it and `variant`'s own first call will
        (`first_call_is_reference`): the caller `keep`s that call's output."""
        if (held := self.held(variant)) is not None:
            return held, 0.0
        if first_call_is_reference(variant, program, device):
            return None, 0.0
        progress.begin([variant], "accuracy")
        began = time.perf_counter()
        reference = self.keep(variant, compute_reference(program, inputs, device, stages))
        return reference, time.perf_counter() - began


def _key(variant: VariantConfig) -> _Key:
    return (variant.model, variant.batch_size, variant.inputs)


def compute_reference(
    program: ExportedProgram,
    inputs: tuple[torch.Tensor, ...],
    device: torch.device,
    stages: Stages | None = None,
) -> Reference:
    """`program` as loaded, in fp32 with IEEE math, on `inputs`, between its `stages` where
    it has any (the chain's output is the reference): on a copy where the cast would change
    the program's tensors, so that nothing reaches a variant. A failure is kept,
    not raised: the variant is still measured (its own first call says what is wrong, if the
    program is), and its accuracy says it was not measured, and why."""
    try:
        with precision.ieee_fp32(device), torch.inference_mode():
            module = module_for(program, torch.float32, device, quantized=False)
            module = precision.cast(module, torch.float32, device)
            placed = [tensor.to(device) for tensor in inputs]
            output = run_chain(module, stages or Stages(), placed, torch.float32)
        return reference_of(output)
    except Exception as error:  # anything the program raises: the measurement goes on
        if device.type == "cuda":
            torch.cuda.empty_cache()
        first_line = (str(error).splitlines() or [""])[0][:_ERROR_CHARS]
        return Reference(None, f"the fp32 reference failed: {type(error).__name__}: {first_line}")


def leaves(output: object) -> list[object]:
    """A program's output flattened in order. It is a tensor or a tuple, list or dict of
    them, nested (the archive check admits no other container): its leaves, in order."""
    return list(pytree.tree_leaves(output))


def compare(output: object, reference: Reference, drawn: Sequence[DrawnInput] | None) -> Accuracy:
    """The variant's `output` against `reference`, output by output, with the worst of each
    number over the outputs; `drawn` says how the inputs were drawn (None: recorded)."""
    inputs = list(drawn) if drawn is not None else None
    if reference.outputs is None:
        return Accuracy(seed=INPUT_SEED, error=reference.error, inputs=inputs)
    mine = leaves(output)
    if len(mine) != len(reference.outputs):
        return Accuracy(
            seed=INPUT_SEED,
            error=f"the variant returns {len(mine)} outputs, the reference "
            f"{len(reference.outputs)}",
            inputs=inputs,
        )
    outputs = [
        _compared(index, own, theirs)
        for index, (own, theirs) in enumerate(zip(mine, reference.outputs, strict=True))
        if isinstance(own, torch.Tensor) and isinstance(theirs, torch.Tensor)
    ]
    top1 = [o.top1_agreement for o in outputs if o.top1_agreement is not None]
    return Accuracy(
        seed=INPUT_SEED,
        max_abs_error=_worst([o.max_abs_error for o in outputs], max),
        max_rel_error=_worst([o.max_rel_error for o in outputs], max),
        cosine=_worst([o.cosine for o in outputs], min),
        top1_agreement=min(top1) if top1 else None,
        nonfinite=sum(o.nonfinite for o in outputs),
        error=_meaningless(reference.constant),
        outputs=outputs,
        inputs=inputs,
    )


def _meaningless(constant: str | None) -> str | None:
    """The accuracy's error where the reference is constant: its numbers are kept, and say
    nothing (a ViT with torchvision's zero-initialised head passed at int8 with cosine 1)."""
    if constant is None:
        return None
    return (
        f"{NOT_MEANINGFUL}the fp32 reference's outputs are constant ({constant}): any variant "
        "that returns the same agrees with it, whatever it computes; a model built without "
        "trained weights whose head is initialised to zeros (torchvision's ViT) returns this: "
        "export it with its trained weights, or with a head of random ones"
    )


def _worst(values: list[float | None], pick: Callable[[Iterable[float]], float]) -> float | None:
    """The worst of an output's numbers; None where any output's could not be computed."""
    if not values or any(value is None for value in values):
        return None
    return pick(value for value in values if value is not None)


def _compared(index: int, mine: torch.Tensor, reference: torch.Tensor) -> OutputAccuracy:
    shape = list(mine.shape)
    if mine.shape != reference.shape:
        return OutputAccuracy(index=index, shape=shape)
    # float64 throughout: the sums of a large output in fp32 would add rounding of their own.
    own, theirs = mine.detach().to(torch.float64), reference.to(torch.float64)
    finite_reference = torch.isfinite(theirs)
    both = torch.isfinite(own) & finite_reference
    nonfinite = int((finite_reference & ~both).sum())
    top1 = _top1(mine, reference)
    if not bool(both.any()):
        return OutputAccuracy(index=index, shape=shape, nonfinite=nonfinite, top1_agreement=top1)
    own, theirs = torch.where(both, own, 0.0).flatten(), torch.where(both, theirs, 0.0).flatten()
    abs_error = float((own - theirs).abs().max())
    scale = float(theirs.abs().max())
    own_norm = float(torch.linalg.vector_norm(own))
    their_norm = float(torch.linalg.vector_norm(theirs))
    if own_norm == 0 or their_norm == 0:
        cosine = 1.0 if own_norm == their_norm else 0.0
    else:
        cosine = max(-1.0, min(1.0, float(torch.dot(own, theirs)) / (own_norm * their_norm)))
    return OutputAccuracy(
        index=index,
        shape=shape,
        max_abs_error=abs_error,
        # An all-zero reference has no scale: any error against it is not relative to anything.
        max_rel_error=abs_error / scale if scale > 0 else (0.0 if abs_error == 0 else None),
        cosine=cosine,
        top1_agreement=top1,
        nonfinite=nonfinite,
    )


def _top1(mine: torch.Tensor, reference: torch.Tensor) -> float | None:
    """Where both are a 2-D batch of scores, the share of rows with the same highest one."""
    if mine.dim() != 2 or mine.shape[1] < 2 or not mine.is_floating_point():
        return None
    return float((mine.argmax(dim=1) == reference.argmax(dim=1)).double().mean())
