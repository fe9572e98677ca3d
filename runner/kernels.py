"""Which matrix-product kernels one call of a prepared program dispatches: the proof that a
quantization runs its kernel, not a float matmul it fell back to (torchao falls back without a
word in places, e.g. `torch._int_mm` on CUDA below 17 rows).

The count rides on a call the runner makes anyway (`CountedFirst`), never on one of its own:
a call of a BERT-base at batch 1 takes seconds on a CPU, and every call before the first
measurement is the pod's start-up. The dispatch mode runs a line of Python per op, so the
call that counts is never one whose time is reported on its own (the cold first iteration).
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from torch.utils._python_dispatch import TorchDispatchMode

from runner.errors import UnsupportedVariant
from runner.measure import Step
from runner.quantize import QuantizationReport

MATRIX_OPS: Final = frozenset(
    {
        "aten.linear",
        "aten.matmul",
        "aten.mm",
        "aten.addmm",
        "aten.bmm",
        "aten.baddbmm",
        "aten.scaled_dot_product_attention",
        "aten.conv1d",
        "aten.conv2d",
        "aten.conv3d",
        "aten.convolution",
        "aten._int_mm",
        "aten._weight_int8pack_mm",
        "aten._weight_int4pack_mm",
        "aten._weight_int4pack_mm_for_cpu",
        "aten._scaled_mm",
    }
)
"""The ops that do a model's products, float or quantized, named as they reach the
dispatcher under `torch.inference_mode` (where aten.linear arrives whole, not as
aten.addmm)."""


class _Counting(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves it untyped
    """Counts the matrix ops that reach the dispatcher, after torchao's tensors chose them."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name = f"{func.namespace}.{func._opname}"
        if name in MATRIX_OPS:
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


def kernel_calls(call: Callable[[], object]) -> dict[str, int]:
    """The matrix ops one `call` dispatches, by name, with their counts."""
    with _Counting() as counting:
        call()
    return dict(sorted(counting.calls.items()))


def check_kernel(report: QuantizationReport, calls: dict[str, int], described: str) -> None:
    """Fail `described` (a variant) unless each quantized layer dispatched its kernel once."""
    method = report.method
    if method is None or method.kernel_op is None:
        return
    ran = calls.get(method.kernel_op, 0)
    if ran < report.quantized_layers:
        raise UnsupportedVariant(
            f"{described}: {report.quantized_layers} layers were quantized, but one call "
            f"dispatched {method.kernel_op} {ran} times (matrix ops: "
            f"{', '.join(f'{k} x{v}' for k, v in calls.items()) or 'none'}); the quantized "
            "kernel did not run where it should, so the variant would measure something else"
        )


@dataclass
class CountedFirst:
    """`step`, whose first call also counts the matrix ops it dispatches (`calls`) and fails
    the variant there, before any more of its calls, unless each quantized layer ran its
    kernel (`check_kernel`); later calls are `step`'s alone."""

    step: Step
    report: QuantizationReport
    described: str
    calls: dict[str, int] = field(default_factory=dict)
    counted: bool = False

    def __call__(self) -> int:
        if self.counted:
            return self.step()
        took: list[int] = []
        self.calls = kernel_calls(lambda: took.append(self.step()))
        self.counted = True
        check_kernel(self.report, self.calls, self.described)
        return took[0]
