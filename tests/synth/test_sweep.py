"""Variant expansion: order, excludes, includes, and ids derived from content."""

from pathlib import Path

import pytest

import synth.load
from contract.variant import QUANTIZERS
from synth.load import load_specs
from synth.problems import SpecProblems
from synth.sweep import Variant, combinations
from tests.synth.conftest import WriteSpec

# "cnn" is any program that takes the inputs below: these tests need only the names.
HEADER = """\
id: sweep
description: d
owner: o
clusters: [alpha]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
  - name: cnn
    file: models/examples/tiny-mlp.pt2
benchmark:
  inputs: [{shape: [64]}]
targets:
  - gpu_type: nvidia-a100
  - gpu_type: cpu
"""


@pytest.fixture
def expand(spec_repo: Path, write_spec: WriteSpec):  # type: ignore[no-untyped-def]
    def expand(sweep: str) -> list[Variant]:
        spec = write_spec("sweep.yaml", HEADER + sweep)
        return list(load_specs(spec_repo, [spec]).workflows[0].variants)

    return expand


def dims(variants: list[Variant]) -> list[tuple[str, str, str, str, int]]:
    return [
        (v.target, v.model, str(v.precision), str(v.quantization), v.batch_size) for v in variants
    ]


def test_without_a_sweep_each_model_runs_once_per_target(expand) -> None:  # type: ignore[no-untyped-def]
    assert dims(expand("")) == [
        ("a100", "mlp", "fp32", "none", 1),
        ("a100", "cnn", "fp32", "none", 1),
        ("cpu", "mlp", "fp32", "none", 1),
        ("cpu", "cnn", "fp32", "none", 1),
    ]


def test_matrix_expands_in_spec_order_with_excludes_and_includes(expand) -> None:  # type: ignore[no-untyped-def]
    variants = expand(
        """\
sweep:
  matrix:
    batch_size: [8, 1]
    precision: [bf16, fp32]
  exclude:
    - {target: cpu}
    - {model: cnn, precision: fp32}
  include:
    - {target: cpu, model: mlp, quantization: int8-dynamic}
"""
    )
    assert dims(variants) == [
        ("a100", "mlp", "bf16", "none", 8),
        ("a100", "mlp", "bf16", "none", 1),
        ("a100", "mlp", "fp32", "none", 8),
        ("a100", "mlp", "fp32", "none", 1),
        ("a100", "cnn", "bf16", "none", 8),
        ("a100", "cnn", "bf16", "none", 1),
        ("cpu", "mlp", "fp32", "int8-dynamic", 1),
    ]


def test_an_include_equal_to_a_matrix_variant_is_reported(expand) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecProblems) as raised:
        expand("sweep:\n  matrix: {batch_size: [1, 2]}\n  include: [{batch_size: 2}]\n")
    (problem,) = raised.value.problems
    assert problem.path == "sweep.include[0]"
    assert "adds no variant" in problem.message


def test_variant_ids_are_stable_and_pinned(expand) -> None:  # type: ignore[no-untyped-def]
    """Ids are stored with results; a change here breaks every comparison with old runs."""
    first = expand("")[0]
    assert first.variant_id("sweep", {}) == first.variant_id("sweep", {})
    assert first.variant_id("sweep", {"image": "runner:1"}) == "ve18724aa2608"


def test_variant_id_changes_with_content_only(expand) -> None:  # type: ignore[no-untyped-def]
    base = expand("")
    swept = expand("sweep:\n  matrix: {batch_size: [1, 4]}\n")
    base_ids = {v.variant_id("sweep", {}) for v in base}
    swept_ids = {v.variant_id("sweep", {}) for v in swept}
    assert base_ids < swept_ids
    assert base[0].variant_id("sweep", {}) != base[0].variant_id("other-workflow", {})
    assert base[0].variant_id("sweep", {}) != base[0].variant_id("sweep", {"image": "runner:2"})


def test_combinations_are_counted_from_the_lists_with_includes(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    spec = write_spec(
        "sweep.yaml",
        HEADER
        + "sweep:\n  matrix: {batch_size: [1, 2, 4], precision: [fp32, fp16]}\n"
        + "  include: [{batch_size: 8}, {batch_size: 16, target: cpu, model: mlp}]\n"
        + "scheduling: {max_variants: 1000}\n",
    )
    workflow = load_specs(spec_repo, [spec]).workflows[0].workflow
    assert combinations(workflow) == 2 * 2 * 3 * 2 + 2 * 2 + 1


def test_a_sweep_too_large_to_expand_is_refused_without_expanding_it(
    spec_repo: Path, write_spec: WriteSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(workflow: object) -> None:
        raise AssertionError("expanded")

    monkeypatch.setattr(synth.load, "expand_variants", refuse)
    sizes = ", ".join(str(size) for size in range(1, 15_001))
    spec = write_spec("sweep.yaml", HEADER + f"sweep:\n  matrix: {{batch_size: [{sizes}]}}\n")
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [spec])
    assert [str(problem) for problem in raised.value.problems] == [
        "specs/workflows/sweep.yaml:16:3: sweep.matrix: the workflow names 60,000 combinations "
        "(targets x models x matrix, plus includes), more than the 50,000 synth expands\n"
        "    hint: sweep fewer values or split the workflow: at most 10,000 variants run after "
        "excludes"
    ]


def test_excludes_remove_what_each_one_names(expand) -> None:  # type: ignore[no-untyped-def]
    variants = expand(
        "sweep:\n  matrix: {batch_size: [1, 2], precision: [fp32, fp16]}\n"
        "  exclude:\n    - {target: cpu, precision: fp16}\n    - {batch_size: 2, model: mlp}\n"
    )
    assert ("cpu", "mlp", "fp16", "none", 1) not in dims(variants)
    assert not [d for d in dims(variants) if d[1] == "mlp" and d[4] == 2]
    assert ("a100", "cnn", "fp16", "none", 2) in dims(variants)
    assert len(variants) == 2 * 2 * 2 * 2 - 2 * 2 - 2 * 2 + 1


def test_the_design_notes_int4_is_int4_weight_only(expand) -> None:  # type: ignore[no-untyped-def]
    """The design note's example, `{"quantization": "int4", "precision": "fp16"}`, on a CPU
    (its GPU targets wait for a device run: tests/data/specs/invalid/)."""
    spelled = expand(
        "sweep:\n  matrix: {batch_size: [1]}\n"
        "  include: [{target: cpu, model: mlp, precision: fp16, quantization: int4}]\n"
    )
    written = expand(
        "sweep:\n  matrix: {batch_size: [1]}\n"
        "  include: [{target: cpu, model: mlp, precision: fp16, quantization: int4-weight-only}]\n"
    )
    assert dims(spelled)[-1] == ("cpu", "mlp", "fp16", "int4-weight-only", 1)
    assert [v.variant_id("sweep", {}) for v in spelled] == [
        v.variant_id("sweep", {}) for v in written
    ]


def test_both_spellings_of_int4_in_a_matrix_are_a_repeat(expand) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecProblems) as raised:
        expand("sweep:\n  matrix: {quantization: [int4, int4-weight-only]}\n")
    assert "lists int4-weight-only more than once" in raised.value.problems[0].message


def test_what_a_quantization_runs_is_part_of_its_variants_id(  # type: ignore[no-untyped-def]
    expand, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replacing the runner's own int8 rewrite by torchao changed the numbers, so it changed
    the ids of int8 variants (and no others): their recorded results are not reused."""
    none, int8 = expand(
        "sweep:\n  matrix: {quantization: [none, int8-weight-only]}\n"
        "  exclude: [{target: a100}, {model: cnn}]\n"
    )
    before = [v.variant_id("sweep", {}) for v in (none, int8)]
    assert before[1] == "vadc3ec3bbdea"
    ours = {**QUANTIZERS, int8.quantization: "benchfleet's own graph rewrite"}
    monkeypatch.setattr("synth.sweep.QUANTIZERS", ours)
    after = [v.variant_id("sweep", {}) for v in (none, int8)]
    assert after[0] == before[0]
    assert after[1] != before[1]


def test_compile_is_swept_last_so_a_variants_eager_and_compiled_runs_are_neighbours(  # type: ignore[no-untyped-def]
    expand,
) -> None:
    variants = expand(
        "sweep:\n  matrix: {runtime: [eager, inductor], batch_size: [1, 2]}\n"
        "  exclude: [{target: a100}, {model: cnn}]\n"
        "  include: [{model: cnn, target: cpu, runtime: inductor}]\n"
    )
    assert [(*d[1:], str(v.runtime)) for d, v in zip(dims(variants), variants, strict=True)] == [
        ("mlp", "fp32", "none", 1, "eager"),
        ("mlp", "fp32", "none", 1, "inductor"),
        ("mlp", "fp32", "none", 2, "eager"),
        ("mlp", "fp32", "none", 2, "inductor"),
        ("cnn", "fp32", "none", 1, "inductor"),
    ]


@pytest.mark.parametrize(
    "sweep",
    [
        "sweep:\n  matrix: {runtime: [eager, inductor]}\n"
        "  exclude: [{target: a100, runtime: inductor}]\n",
        "sweep:\n  matrix: {runtime: [eager]}\n",
    ],
    ids=["eager-and-inductor", "eager-listed"],
)
def test_an_eager_variant_keeps_the_id_it_had_before_the_compile_axis(  # type: ignore[no-untyped-def]
    expand, sweep: str
) -> None:
    """Recorded results are found by id: naming compile, or sweeping it, must not make every
    eager variant new (nor rename its Job)."""
    before = {v.key[:5]: v.variant_id("sweep", {}) for v in expand("")}
    after = expand(sweep)
    eager = {v.key[:5]: v.variant_id("sweep", {}) for v in after if v.runtime == "eager"}
    compiled = {v.variant_id("sweep", {}) for v in after if v.runtime != "eager"}
    assert eager == before
    assert not compiled & set(before.values())
    assert len(compiled) == len(after) - len(eager)


def test_benchmark_compile_compiles_every_variant_that_does_not_sweep_it(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    text = HEADER.replace("  - gpu_type: nvidia-a100\n", "").replace(
        "benchmark:\n", "benchmark:\n  runtime: inductor\n"
    )
    spec = write_spec("sweep.yaml", text + "sweep:\n  include: [{model: mlp, runtime: eager}]\n"
                      "  matrix: {batch_size: [1]}\n")  # fmt: skip
    variants = load_specs(spec_repo, [spec]).workflows[0].variants
    assert [(v.model, str(v.runtime)) for v in variants] == [
        ("mlp", "inductor"),
        ("cnn", "inductor"),
        ("mlp", "eager"),
    ]
