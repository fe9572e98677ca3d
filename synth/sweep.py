"""Expanding a workflow into its variants: deterministic, capped, each with a content id.

The order is the order of the spec (targets, then models, then the matrix's dimensions in
the order of the variant's settings (contract/variant.py: precision, quantization, batch
size, compile), each in the order its values are written: a variant's eager and compiled
runs are neighbours, so they share a pod), followed by `include` entries. Each target's
variants become the indexes of one Indexed Job.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product
from typing import Final

from pydantic import Field

from contract.variant import (
    QUANTIZERS,
    RUN_SETTINGS,
    SETTING_FIELDS,
    Quantization,
    VariantSettings,
)
from synth.spec import InputSpec, VariantSelector, Workflow
from synth.yaml_source import Loc

VARIANT_ID_LENGTH = 12

DIMENSIONS: Final = ("target", *SETTING_FIELDS)
"""What a VariantSelector can name, in the order of a variant's key: where it runs, then its
settings."""

_Key = tuple[object, ...]
"""A variant's dimensions, in DIMENSIONS' order: what makes it distinct."""


@dataclass(frozen=True)
class VariantInput:
    """One input tensor of a variant, per sample."""

    shape: tuple[int, ...]
    dtype: str

    @classmethod
    def of(cls, spec: InputSpec) -> "VariantInput":
        return cls(shape=tuple(spec.shape), dtype=spec.dtype)


class Variant(VariantSettings):
    """One measurement: one model's settings on one target."""

    target: str
    inputs: tuple[VariantInput, ...]
    origins: Mapping[str, Loc] = Field(default_factory=dict, exclude=True)
    """Where each dimension's value is written in the spec, for locating errors."""

    @property
    def key(self) -> _Key:
        """What makes the variant distinct (its inputs follow from its model)."""
        return tuple(getattr(self, name) for name in DIMENSIONS)

    def variant_id(self, workflow_id: str, setup: Mapping[str, object]) -> str:
        """A stable id from everything that determines the variant's number: its dimensions
        and inputs, and the `setup` it is measured in (synth/identity.py, `measurement_setup`).
        The same id means the same measurement, so a recorded result with it is reused
        rather than run again (synth/recorded.py)."""
        content = {
            "workflow": workflow_id,
            "target": self.target,
            # A later setting at its default is left out, as every id was before it existed:
            # recorded results stay reusable.
            **{name: str(value) for name, value in self.written().items()},
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
    for name in RUN_SETTINGS:
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
    return [(_default(workflow, name), _default_loc(workflow, name))]


def _default(workflow: Workflow, name: str) -> object:
    """The setting `name` of variants that do not sweep it."""
    benchmark = workflow.benchmark
    return benchmark.default_batch_size if name == "batch_size" else getattr(benchmark, name)


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
    axes = [_axis(workflow, name) for name in RUN_SETTINGS]
    for target, model in product(workflow.targets, workflow.models):
        for chosen in product(*axes):
            key = (target.key, model.name, *(value for value, _ in chosen))
            yield key, {name: loc for name, (_, loc) in zip(RUN_SETTINGS, chosen, strict=True)}


def _matrix(
    workflow: Workflow, inputs: Mapping[str, tuple[VariantInput, ...]]
) -> Iterator[Variant]:
    excluded = _Exclusions(workflow.sweep.exclude if workflow.sweep else [])
    for key, origins in _combinations(workflow):
        if key in excluded:
            continue
        dimensions = dict(zip(DIMENSIONS, key, strict=True))
        yield Variant.model_validate(
            {**dimensions, "inputs": inputs[str(dimensions["model"])], "origins": origins}
        )


def _included(
    workflow: Workflow, inputs: Mapping[str, tuple[VariantInput, ...]]
) -> Iterator[tuple[int, Variant]]:
    """Each `include` entry's variants, with the entry's index."""
    if workflow.sweep is None:
        return
    for index, entry in enumerate(workflow.sweep.include):
        loc: Loc = ("sweep", "include", index)
        targets = [t.key for t in workflow.targets if entry.target in (None, t.key)]
        models = [m.name for m in workflow.models if entry.model in (None, m.name)]
        swept = {name: getattr(entry, name) or _default(workflow, name) for name in RUN_SETTINGS}
        origins = {
            name: (*loc, name) if name in entry.model_fields_set else _default_loc(workflow, name)
            for name in RUN_SETTINGS
        }
        for target, model in product(targets, models):
            yield (
                index,
                Variant.model_validate(
                    {
                        "target": target,
                        "model": model,
                        **swept,
                        "inputs": inputs[model],
                        "origins": origins,
                    }
                ),
            )
