"""A variant's inputs: checked against what the exported program accepts (contract.inputs'
rule, with what torch loaded), then made."""

import torch
from torch.export import ExportedProgram

from contract.config import VariantConfig
from contract.inputs import Dimension, ExpectedInput, GivenInput, inputs_misfit
from runner.errors import ConfigError
from runner.precision import dtype_name

INPUT_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}
_INPUT_SEED = 0


def expected_inputs(program: ExportedProgram) -> list[ExpectedInput]:
    """What the program's user inputs accept, from its placeholders' metadata."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    expected = []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        if not isinstance(value, torch.Tensor):
            continue
        dimensions = tuple(_dimension(program, size) for size in value.shape)
        expected.append(ExpectedInput(name, dimensions, dtype_name(value.dtype)))
    return expected


def _dimension(program: ExportedProgram, size: int | torch.SymInt) -> Dimension:
    if isinstance(size, int):
        return Dimension(size, size)
    bounds = program.range_constraints.get(size.node.expr)
    if bounds is None:
        return Dimension(0, None)
    return Dimension(_bound(bounds.lower) or 0, _bound(bounds.upper))


def _bound(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError, OverflowError):  # sympy's infinities
        return None


def check_inputs(variant: VariantConfig, expected: list[ExpectedInput]) -> None:
    """Raise ConfigError unless the variant's inputs fit the program's."""
    given = [GivenInput(spec.shape, spec.dtype) for spec in variant.inputs]
    misfit = inputs_misfit(variant.model, variant.batch_size, given, expected)
    if misfit:
        raise ConfigError(f"{misfit.message}; check the spec's inputs against the exported model")


def make_inputs(
    variant: VariantConfig, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """Seeded inputs of the variant's shapes; floating ones in the compute dtype, integer ones
    in {0, 1}, so that any embedding table accepts them."""
    generator = torch.Generator().manual_seed(_INPUT_SEED)
    tensors = []
    for spec in variant.inputs:
        shape = (variant.batch_size, *spec.shape)
        declared = INPUT_DTYPES[spec.dtype]
        if declared.is_floating_point:
            tensor = torch.randn(shape, generator=generator).to(dtype)
        else:
            tensor = torch.randint(0, 2, shape, generator=generator).to(declared)
        tensors.append(tensor.to(device))
    return tuple(tensors)
