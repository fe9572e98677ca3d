"""Expanding a workflow into its variants: deterministic, capped, each with a content id.

The order is the order of the spec (targets, then models, then the matrix's dimensions in
the order precision, quantization, batch size, compile, each in the order its values are
written: a variant's eager and compiled runs are neighbours, so they share a pod),
followed by `include` entries. Each target's variants become the indexes of one Indexed Job.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import product
from typing import Final

from contract.variant import QUANTIZERS, Compile, Precision, Quantization
from synth.spec import InputSpec, VariantSelector, Workflow
from synth.yaml_source import Loc

VARIANT_ID_LENGTH = 12

DIMENSIONS: Final = ("model", "target", "precision", "quantization", "batch_size", "compile")
"""What a VariantSelector can name, in the order of a variant's key."""
SWEPT: Final = DIMENSIONS[2:]
"""The dimensions `sweep.matrix` lists and `benchmark` sets for variants that do not."""

_Key = tuple[str, str, Precision, Quantization, int, Compile]
"""A variant's dimensions, in DIMENSIONS' order: what makes it distinct."""


@dataclass(frozen=True)
class VariantInput:
    """One input tensor of a variant, per sample."""

    shape: tuple[int, ...]
    dtype: str

    @classmethod
    def of(cls, spec: InputSpec) -> "VariantInput":
        return cls(shape=tuple(spec.shape), dtype=spec.dtype)


@dataclass(frozen=True)
class Variant:
    """One measurement: one model on one target with one precision, quantization, batch, run
    eager or compiled."""

    model: str
    target: str
    precision: Precision
    quantization: Quantization
    batch_size: int
    compile: Compile
    inputs: tuple[VariantInput, ...]
    origins: Mapping[str, Loc] = field(default_factory=dict, compare=False, hash=False)
    """Where each dimension's value is written in the spec, for locating errors."""

    @property
    def dimensions(self) -> dict[str, object]:
        """The values a VariantSelector can match."""
        return dict(zip(DIMENSIONS, self.key, strict=True))

    @property
    def key(self) -> _Key:
        """What makes the variant distinct (its inputs follow from its model)."""
        return (
            self.model,
            self.target,
            self.precision,
            self.quantization,
            self.batch_size,
            self.compile,
        )

    def variant_id(self, workflow_id: str, setup: Mapping[str, object]) -> str:
        """A stable id from everything that determines the variant's number: its dimensions
        and inputs, and the `setup` it is measured in (synth/identity.py, `measurement_setup`).
        The same id means the same measurement, so a recorded result with it is reused
        rather than run again (synth/recorded.py)."""
        content = {
            "workflow": workflow_id,
            # An eager variant's id leaves compile out: it is what every id was before the
            # option existed, and recorded eager results stay reusable.
            **{
                key: str(value)
                for key, value in self.dimensions.items()
                if key != "compile" or value is not Compile.EAGER
            },
            "inputs": [{"shape": list(i.shape), "dtype": i.dtype} for i in self.inputs],
            "setup": setup,
            # What the quantization runs, so that a new implementation re-measures; only
            # where there is one, so that no unquantized variant's id changes with it.
            **(
                {"quantizer": QUANTIZERS[self.quantization]}
                if self.quantization is not Quantization.NONE
                else {}
            ),
        }
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return "v" + hashlib.sha256(canonical.encode()).hexdigest()[:VARIANT_ID_LENGTH]


def combinations(workflow: Workflow) -> int:
    """How many variants the workflow names before `exclude` and before repeats are dropped:
    counted from the lengths of its lists, so a sweep too large to expand is refused without
    expanding it."""
    targets, models = len(workflow.targets), len(workflow.models)
    matrix = targets * models
    for name in SWEPT:
        matrix *= len(_axis(workflow, name))
    included = sum(
        (1 if entry.target is not None else targets) * (1 if entry.model is not None else models)
        for entry in (workflow.sweep.include if workflow.sweep else [])
    )
    return matrix + included


def _fields_and_values(selector: VariantSelector) -> tuple[tuple[int, ...], tuple[object, ...]]:
    """The positions in a variant's key that `selector` names, and the values it asks there."""
    fields = tuple(i for i, name in enumerate(DIMENSIONS) if name in selector.model_fields_set)
    return fields, tuple(getattr(selector, DIMENSIONS[i]) for i in fields)


class _Exclusions:
    """The excludes indexed by which dimensions they name: a variant is looked up once per
    such set (at most 31), not compared with every exclude."""

    def __init__(self, excludes: list[VariantSelector]) -> None:
        self._by_fields: dict[tuple[int, ...], dict[tuple[object, ...], list[int]]] = {}
        for index, selector in enumerate(excludes):
            fields, values = _fields_and_values(selector)
            self._by_fields.setdefault(fields, {}).setdefault(values, []).append(index)

    def matching(self, key: _Key) -> list[int]:
        """The indexes of the excludes that match the variant `key`."""
        return [
            index
            for fields, table in self._by_fields.items()
            for index in table.get(tuple(key[i] for i in fields), ())
        ]

    def __contains__(self, key: _Key) -> bool:
        return any(
            tuple(key[i] for i in fields) in table for fields, table in self._by_fields.items()
        )


def _axis(workflow: Workflow, name: str) -> list[tuple[object, Loc]]:
    matrix = workflow.sweep.matrix if workflow.sweep else None
    swept = getattr(matrix, name) if matrix else None
    if swept is not None:
        return [(value, ("sweep", "matrix", name, index)) for index, value in enumerate(swept)]
    benchmark = workflow.benchmark
    value = benchmark.default_batch_size if name == "batch_size" else getattr(benchmark, name)
    return [(value, _default_loc(workflow, name))]


def _default_loc(workflow: Workflow, name: str) -> Loc:
    if name == "batch_size" and workflow.benchmark.input_shape is not None:
        return ("benchmark", "input_shape", 0)
    return ("benchmark", name)


def _inputs(workflow: Workflow) -> dict[str, tuple[VariantInput, ...]]:
    return {
        model.name: tuple(
            VariantInput.of(spec)
            for spec in model.inputs or workflow.benchmark.default_inputs or ()
        )
        for model in workflow.models
    }


def expand_variants(workflow: Workflow) -> list[Variant]:
    """Every variant of the workflow, grouped by target in spec order, without repeats.

    Its cost grows with `combinations(workflow)`, which the caller checks first.
    """
    inputs = _inputs(workflow)
    seen: set[_Key] = set()
    by_target: dict[str, list[Variant]] = {target.key: [] for target in workflow.targets}
    included = (variant for _, variant in _included(workflow, inputs))
    for variant in (*_matrix(workflow, inputs), *included):
        if variant.key not in seen:
            seen.add(variant.key)
            by_target[variant.target].append(variant)
    return [variant for target in by_target.values() for variant in target]


def idle_includes(workflow: Workflow) -> list[int]:
    """The `include` entries that add no variant: each one they name is in the matrix (and
    not excluded) or named by an earlier entry. Same cost as `expand_variants`."""
    inputs = _inputs(workflow)
    seen = {variant.key for variant in _matrix(workflow, inputs)}
    adds: dict[int, bool] = {}
    for index, variant in _included(workflow, inputs):
        adds[index] = adds.get(index, False) or variant.key not in seen
        seen.add(variant.key)
    return [index for index, added in adds.items() if not added]


def idle_excludes(workflow: Workflow) -> list[int]:
    """The `exclude` entries that match variants of the matrix, but only ones an earlier
    entry excludes already: a repeat, or a narrower copy of an earlier entry. (An entry that
    matches nothing names a value the matrix lacks, which the checks say as such.) Same cost
    as `expand_variants`."""
    excludes = _Exclusions(workflow.sweep.exclude if workflow.sweep else [])
    matched: set[int] = set()
    removing: set[int] = set()
    for key, _ in _combinations(workflow):
        if indexes := excludes.matching(key):
            matched.update(indexes)
            removing.add(min(indexes))
    return sorted(matched - removing)


def _combinations(workflow: Workflow) -> Iterator[tuple[_Key, dict[str, Loc]]]:
    """Every combination of the matrix, excluded or not: its key, and where each of its
    swept values is written."""
    precisions = [(Precision(str(v)), loc) for v, loc in _axis(workflow, "precision")]
    quantizations = [(Quantization(str(v)), loc) for v, loc in _axis(workflow, "quantization")]
    batch_sizes = [(int(str(v)), loc) for v, loc in _axis(workflow, "batch_size")]
    compiles = [(Compile(str(v)), loc) for v, loc in _axis(workflow, "compile")]
    for target, model in product(workflow.targets, workflow.models):
        for (precision, p_loc), (quantization, q_loc), (batch, b_loc), (how, c_loc) in product(
            precisions, quantizations, batch_sizes, compiles
        ):
            key = (model.name, target.key, precision, quantization, batch, how)
            yield (
                key,
                {"precision": p_loc, "quantization": q_loc, "batch_size": b_loc, "compile": c_loc},
            )


def _matrix(
    workflow: Workflow, inputs: Mapping[str, tuple[VariantInput, ...]]
) -> Iterator[Variant]:
    excluded = _Exclusions(workflow.sweep.exclude if workflow.sweep else [])
    for key, origins in _combinations(workflow):
        if key in excluded:
            continue
        model, target, precision, quantization, batch, how = key
        yield Variant(
            model=model,
            target=target,
            precision=precision,
            quantization=quantization,
            batch_size=batch,
            compile=how,
            inputs=inputs[model],
            origins=origins,
        )


def _included(
    workflow: Workflow, inputs: Mapping[str, tuple[VariantInput, ...]]
) -> Iterator[tuple[int, Variant]]:
    """Each `include` entry's variants, with the entry's index."""
    if workflow.sweep is None:
        return
    benchmark = workflow.benchmark
    for index, entry in enumerate(workflow.sweep.include):
        loc: Loc = ("sweep", "include", index)
        targets = [t.key for t in workflow.targets if entry.target in (None, t.key)]
        models = [m.name for m in workflow.models if entry.model in (None, m.name)]
        for target, model in product(targets, models):
            yield (
                index,
                Variant(
                    model=model,
                    target=target,
                    precision=entry.precision or benchmark.precision,
                    quantization=entry.quantization or benchmark.quantization,
                    batch_size=entry.batch_size or benchmark.default_batch_size,
                    compile=entry.compile or benchmark.compile,
                    inputs=inputs[model],
                    origins={
                        dimension: (*loc, dimension)
                        if dimension in entry.model_fields_set
                        else _default_loc(workflow, dimension)
                        for dimension in SWEPT
                    },
                ),
            )
