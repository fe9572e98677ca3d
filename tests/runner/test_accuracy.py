"""The accuracy pass: every variant's outputs against the untouched program's fp32 outputs on
the same seeded inputs, ids drawn within the tables they index, one reference per model and
batch in a pod, and a failed reference never costing the measurement."""

import math
from pathlib import Path

import pytest
import torch

from contract.accuracy import INPUT_SEED, DrawnInput, default_gate, judge
from contract.config import InputConfig, RunConfig
from contract.result import OkResult, compact, parse_result
from contract.variant import Precision, Quantization
from runner import accuracy
from runner.accuracy import Reference, References, compare, compute_reference
from runner.inputs import IdBound, draw_inputs, id_bounds
from runner.loading import load_program
from runner.pipeline import Stages
from runner.programs import Programs
from runner.run import RunPaths, prepare_variant, run_variant
from tests.runner.conftest import MakeConfig, group_config, group_variant, sha256_of
from tests.runner.test_group import _run_pod

VOCABULARY = 1000
CPU = torch.device("cpu")


class _Tokens(torch.nn.Module):
    """Token ids (through a view) into an embedding, a float mask and an integer flag that
    reach no table."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCABULARY, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, ids: torch.Tensor, flag: torch.Tensor) -> torch.Tensor:
        embedded = self.tokens(ids.reshape(ids.shape[0], -1)) * (flag.unsqueeze(-1) + 1)
        scores: torch.Tensor = self.head(embedded.mean(dim=1))
        return scores


@pytest.fixture(scope="session")
def tokens_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real exported program taking token ids (int64, 16 a sample) and a flag per id."""
    path = tmp_path_factory.mktemp("models") / "tokens.pt2"
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(
        _Tokens().eval(),
        (torch.randint(0, VOCABULARY, (2, 16)), torch.zeros(2, 16, dtype=torch.int64)),
        dynamic_shapes=({0: batch}, {0: batch}),
    )
    torch.export.save(program, path)
    return path


def _tokens_config(make_config: MakeConfig, path: Path, precision: str = "fp32") -> RunConfig:
    config = make_config("tokens", precision=precision, location=path.name, sha256=sha256_of(path))
    inputs = (InputConfig(shape=(16,), dtype="int64"), InputConfig(shape=(16,), dtype="int64"))
    variant = config.variants[0].model_copy(update={"inputs": inputs})
    return config.model_copy(update={"variants": (variant,)})


def _measure(config: RunConfig, models: Path) -> OkResult:
    return run_variant(config, config.variants[0], RunPaths(models, models))


def test_an_fp32_variant_matches_its_reference_exactly(
    make_config: MakeConfig, models_dir: Path
) -> None:
    result = _measure(make_config("tiny-transformer"), models_dir)
    measured = result.accuracy
    assert measured is not None and measured.outputs is not None
    assert (measured.reference, measured.seed) == ("fp32-eager", INPUT_SEED)
    # The same program at the same precision: at most an ulp or so apart (a CPU kernel may
    # block a matmul otherwise on a later call than on the first).
    assert measured.max_rel_error is not None and measured.max_rel_error < 1e-6
    assert measured.cosine is not None and measured.cosine > 1 - 1e-12
    assert measured.top1_agreement == 1.0, "a batch of 10 scores each: top-1 applies"
    assert [(o.index, o.shape) for o in measured.outputs] == [(0, [2, 10])]
    assert measured.inputs == [DrawnInput(dtype="float32")]
    assert result.timings is not None and result.timings.accuracy_s is not None
    assert judge(measured, default_gate(Precision.FP32, Quantization.NONE)).passed


@pytest.mark.parametrize(
    ("precision", "quantization"),
    [("bf16", "none"), ("fp16", "none"), ("fp32", "int8-weight-only"), ("fp32", "int8-dynamic")],
)
def test_a_variant_that_computes_differently_shows_its_error_within_its_default_gate(
    make_config: MakeConfig, models_dir: Path, precision: str, quantization: str
) -> None:
    config = make_config("tiny-mlp", precision=precision, quantization=quantization)
    measured = _measure(config, models_dir).accuracy
    assert measured is not None and measured.cosine is not None
    assert measured.max_abs_error is not None and measured.max_abs_error > 0
    assert 0.999 < measured.cosine < 1, "compared with the fp32 reference, not with itself"
    verdict = judge(measured, default_gate(Precision(precision), Quantization(quantization)))
    assert verdict.passed, verdict.failures


def _tensor(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


@pytest.mark.parametrize(
    ("output", "reference", "expected"),
    [
        (_tensor(1, 2, 3), _tensor(1, 2, 3), {"max_abs_error": 0, "max_rel_error": 0, "cosine": 1}),
        (_tensor(2, 4, 6), _tensor(1, 2, 3), {"max_abs_error": 3, "max_rel_error": 1, "cosine": 1}),
        (_tensor(-1, -2), _tensor(1, 2), {"max_abs_error": 4, "max_rel_error": 2, "cosine": -1}),
        (_tensor(1, 0), _tensor(0, 1), {"cosine": 0, "max_rel_error": 1}),
        # A value the variant overflowed: counted, and left out of the other numbers.
        (_tensor(1, math.inf), _tensor(1, 3), {"nonfinite": 1, "max_abs_error": 0, "cosine": 1}),
        (_tensor(math.nan), _tensor(1), {"nonfinite": 1, "max_abs_error": None, "cosine": None}),
        # An all-zero reference has no scale: an error against it is relative to nothing.
        (_tensor(0, 0), _tensor(0, 0), {"max_rel_error": 0, "cosine": 1}),
        (_tensor(0, 1), _tensor(0, 0), {"max_rel_error": None, "cosine": 0}),
        (_tensor(1, 2, 3), _tensor(1, 2), {"max_abs_error": None, "cosine": None}),
        # A 2-D batch of scores: rows 0 and 2 agree on their highest score, row 1 does not.
        (
            torch.tensor([[0.0, 1], [1, 0], [0, 2]]),
            torch.tensor([[0.0, 2], [0, 1], [0, 1]]),
            {"top1_agreement": 2 / 3},
        ),
        (torch.tensor([[1.0], [2]]), torch.tensor([[1.0], [2]]), {"top1_agreement": None}),
    ],
)
def test_each_output_is_measured_against_the_reference(
    output: torch.Tensor, reference: torch.Tensor, expected: dict[str, float | None]
) -> None:
    measured = compare((output,), Reference((reference,)), [])
    assert measured.outputs is not None
    (numbers,) = measured.outputs
    for name, value in expected.items():
        found = getattr(numbers, name)
        assert found == (pytest.approx(value) if value is not None else None), name
        assert getattr(measured, name) == found, "one output: the summary is its numbers"


def test_the_summary_is_the_worst_over_the_outputs() -> None:
    # The largest error is the third output's, the largest relative one the second's.
    outputs = (_tensor(1, 2), torch.tensor([[0.0, 1], [1, 0]]), _tensor(30, 40))
    references = (_tensor(1, 2.5), torch.tensor([[0.0, 1], [0, 1]]), _tensor(30, 42))
    measured = compare({"a": outputs[0], "b": list(outputs[1:])}, Reference(references), [])
    assert measured.outputs is not None and len(measured.outputs) == 3
    assert measured.max_abs_error == pytest.approx(2.0)
    assert measured.max_rel_error == pytest.approx(1.0)
    assert measured.cosine == pytest.approx(min(o.cosine or 1 for o in measured.outputs))
    assert measured.top1_agreement == 0.5


def test_token_ids_are_drawn_within_the_table_they_index(
    make_config: MakeConfig, tokens_model: Path
) -> None:
    program = load_program(tokens_model, sha256_of(tokens_model))
    bounds = id_bounds(program)
    assert bounds == {0: IdBound(VOCABULARY, "tokens.weight")}, "the flag reaches no table"
    variant = _tokens_config(make_config, tokens_model).variants[0]
    (ids, flag), drawn = draw_inputs(variant.model_copy(update={"batch_size": 64}), bounds)
    assert 1 < int(ids.max()) < VOCABULARY and int(ids.min()) >= 0, "the table's range, no more"
    assert set(flag.flatten().tolist()) == {0, 1}
    assert drawn == [
        DrawnInput(dtype="int64", low=0, high=VOCABULARY, bounded_by="tokens.weight"),
        DrawnInput(dtype="int64", low=0, high=2),
    ]


def test_a_model_of_token_ids_is_measured_and_compared(
    make_config: MakeConfig, tokens_model: Path
) -> None:
    config = _tokens_config(make_config, tokens_model, "bf16")
    measured = _measure(config, tokens_model.parent).accuracy
    assert measured is not None and measured.error is None
    assert measured.inputs is not None and measured.inputs[0].high == VOCABULARY
    assert measured.cosine is not None and 0.99 < measured.cosine < 1


Computed = list[tuple[int, ...]]


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> Computed:
    """The input shape of every reference the runner computes, in order."""
    shapes: Computed = []

    def counting(
        program: torch.export.ExportedProgram,
        inputs: tuple[torch.Tensor, ...],
        device: torch.device,
        stages: Stages | None = None,
    ) -> Reference:
        shapes.append(tuple(inputs[0].shape))
        return compute_reference(program, inputs, device, stages)

    monkeypatch.setattr(accuracy, "compute_reference", counting)
    return shapes


@pytest.mark.slow
@pytest.mark.parametrize("interleave", [False, True])
@pytest.mark.parametrize(
    ("tiny_mlp", "tiny_cnn", "shapes"),
    [
        # Each model's fp32 variant gives the reference with its first call, and the cast or
        # quantized ones after it compare with that.
        ((("fp32", "none"), ("bf16", "none"), ("fp32", "int8-weight-only")), "fp32", []),
        # A cast variant first computes one of its own; the fp32 variant after it takes it.
        ((("bf16", "none"), ("fp32", "none"), ("fp16", "none")), "bf16", [(2, 64), (2, 3, 64, 64)]),
    ],
)
def test_a_pod_computes_at_most_one_reference_per_model_and_batch(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    computed: Computed,
    interleave: bool,
    tiny_mlp: tuple[tuple[str, str], ...],
    tiny_cnn: str,
    shapes: Computed,
) -> None:
    variants = (
        *(
            group_variant(index, "tiny-mlp", precision).model_copy(
                update={"quantization": Quantization(quantization)}
            )
            for index, (precision, quantization) in enumerate(tiny_mlp)
        ),
        group_variant(len(tiny_mlp), "tiny-cnn", tiny_cnn),
    )
    config = group_config(variants, (tuple(range(len(variants))),), interleave=interleave)
    pod = _run_pod(tmp_path, capsys, "0", config)
    assert computed == shapes, "at most one per model at batch 2"
    results = [r for r in pod.results if isinstance(r, OkResult)]
    assert len(results) == 4
    assert all(r.accuracy and r.accuracy.error is None for r in results)
    by_id = {r.variant.id: r for r in results if r.variant}
    for variant in variants[: len(tiny_mlp)]:
        measured = by_id[variant.id].accuracy
        assert measured is not None and measured.cosine is not None
        if (variant.precision, variant.quantization) == ("fp32", "none"):
            assert measured.max_abs_error == 0, "the same program, the same inputs, on a CPU"
        else:
            assert measured.cosine < 1 - 1e-9, "compared with the fp32 reference, not itself"
            gate = default_gate(Precision(variant.precision), Quantization(variant.quantization))
            assert judge(measured, gate).passed


@pytest.mark.parametrize("model", ["tiny-mlp", "tiny-cnn", "tiny-transformer", "tokens"])
def test_an_fp32_variants_first_call_gives_exactly_the_reference_computed_apart(
    make_config: MakeConfig,
    models_dir: Path,
    tokens_model: Path,
    tmp_path: Path,
    computed: Computed,
    model: str,
) -> None:
    """Bit for bit: the reference a pod takes from the first call is the one a call of its
    own would give, so no accuracy a result reports changes."""
    tokens = model == "tokens"
    config = _tokens_config(make_config, tokens_model) if tokens else make_config(model)
    variant = config.variants[0]
    programs = Programs(tokens_model.parent if tokens else models_dir, tmp_path)
    references = References()
    prepare_variant(config, variant, programs, references)
    assert computed == [], "taken from the first call, not computed apart"
    taken = references.held(variant)
    program = programs.program(variant.model, config.models[variant.model])
    apart = compute_reference(program, draw_inputs(variant, id_bounds(program))[0], CPU)
    assert taken is not None and taken.outputs is not None and apart.outputs is not None
    assert len(taken.outputs) == len(apart.outputs)
    for own, theirs in zip(taken.outputs, apart.outputs, strict=True):
        assert isinstance(own, torch.Tensor) and isinstance(theirs, torch.Tensor)
        assert torch.equal(own, theirs)


def test_another_models_variant_drops_the_references_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], computed: Computed
) -> None:
    """Only one model's references stay on the device; synth keeps a model's variants
    together, so a group computes each once all the same."""
    variants = (
        group_variant(0, "tiny-mlp"),
        group_variant(1, "tiny-cnn"),
        group_variant(2, "tiny-mlp", "bf16"),
    )
    pod = _run_pod(tmp_path, capsys, "0", group_config(variants, ((0, 1, 2),)))
    assert [r.status for r in pod.results] == ["ok"] * 3
    # The two fp32 variants gave theirs with their first calls; the bf16 one finds none left.
    assert computed == [(2, 64)]


def test_a_reference_that_fails_costs_no_measurement_and_says_why(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    program = load_program(path, sha256_of(path))
    reference = compute_reference(program, (torch.randn(2, 3),), CPU)
    assert reference.outputs is None and reference.error is not None
    assert reference.error.startswith("the fp32 reference failed: ")
    measured = compare(torch.zeros(2, 10), reference, [DrawnInput(dtype="float32")])
    assert measured.error == reference.error and not measured.measured
    verdict = judge(measured, default_gate(Precision.FP32, Quantization.NONE))
    assert not verdict.measured and not verdict.passed and not verdict.failed


def test_a_compacted_result_keeps_its_accuracy_summary(
    make_config: MakeConfig, models_dir: Path
) -> None:
    result = _measure(make_config("tiny-mlp", precision="bf16"), models_dir)
    assert result.accuracy is not None and result.accuracy.outputs is not None
    many = result.accuracy.outputs * 60  # a model of 60 outputs
    heavy = result.model_copy(
        update={"accuracy": result.accuracy.model_copy(update={"outputs": many})}
    )
    text = compact(heavy)
    assert len(text.encode()) <= 4096
    kept = parse_result(text)
    assert isinstance(kept, OkResult) and kept.compacted
    assert kept.accuracy == result.accuracy.model_copy(update={"outputs": None, "inputs": None})
    assert (kept.variant, kept.latency, kept.validity) == (
        result.variant,
        result.latency,
        result.validity,
    )


@pytest.mark.gpu
def test_the_reference_is_ieee_fp32_after_a_tf32_variant_and_leaves_its_mode(
    models_dir: Path,
) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    device = torch.device("cuda", 0)
    path = models_dir / "tiny-transformer.pt2"
    program = load_program(path, sha256_of(path))
    inputs = (torch.randn(4, 32, 16),)
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    ieee = compute_reference(program, inputs, device)
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    after_tf32 = compute_reference(program, inputs, device)
    assert torch.backends.cuda.matmul.fp32_precision == "tf32", "the variant's mode is back"
    assert ieee.outputs is not None and after_tf32.outputs is not None
    assert all(
        torch.equal(a, b)
        for a, b in zip(ieee.outputs, after_tf32.outputs, strict=True)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    )


class _ZeroHeadViT(torch.nn.Module):
    """A ViT shaped as torchvision builds one without trained weights: patches embedded by a
    convolution, a class token, an encoder layer, and a head initialised to zeros."""

    def __init__(self, hidden: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.patches = torch.nn.Conv2d(3, hidden, kernel_size=4, stride=4)
        self.class_token = torch.nn.Parameter(torch.randn(1, 1, hidden))
        self.encoder = torch.nn.TransformerEncoderLayer(hidden, 2, 64, batch_first=True)
        self.head = torch.nn.Linear(hidden, classes)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        patches = self.patches(images).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.class_token.expand(images.shape[0], -1, -1), patches], dim=1)
        scores: torch.Tensor = self.head(self.encoder(tokens)[:, 0])
        return scores


@pytest.fixture(scope="session")
def zero_head_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "zero-head.pt2"
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(
        _ZeroHeadViT().eval(), (torch.randn(2, 3, 16, 16),), dynamic_shapes=({0: batch},)
    )
    torch.export.save(program, path)
    return path


@pytest.mark.parametrize("quantization", ["none", "int8-dynamic", "int8-weight-only"])
def test_a_reference_of_constant_outputs_makes_every_comparison_not_meaningful(
    make_config: MakeConfig, zero_head_model: Path, quantization: str
) -> None:
    """torchvision's ViT without trained weights returns zeros for every input: each of its
    variants, int8 too, passed with cosine 1 and error 0, and nothing warned."""
    config = make_config(
        "vit",
        quantization=quantization,
        location=zero_head_model.name,
        sha256=sha256_of(zero_head_model),
    )
    variant = config.variants[0].model_copy(
        update={"inputs": (InputConfig(shape=(3, 16, 16), dtype="float32"),)}
    )
    config = config.model_copy(update={"variants": (variant,)})
    measured = _measure(config, zero_head_model.parent).accuracy
    assert measured is not None
    # The numbers are kept, and would pass any gate.
    assert (measured.cosine, measured.max_abs_error) == (1.0, 0.0)
    assert measured.not_meaningful is not None
    assert measured.not_meaningful.startswith(
        "the fp32 reference's outputs are constant (output 0 [2, 10] all 0): any variant that "
        "returns the same agrees with it, whatever it computes"
    )
    verdict = judge(measured, default_gate(Precision.FP32, Quantization(quantization)))
    assert not verdict.measured and not verdict.passed and not verdict.failed


@pytest.mark.parametrize(
    ("outputs", "said"),
    [
        ((torch.zeros(2, 10),), "output 0 [2, 10] all 0"),
        (
            (torch.full((2, 3), 0.5), torch.tensor([7, 7])),
            "output 0 [2, 3] all 0.5; output 1 [2] all 7",
        ),
        ((torch.tensor([1.0, float("nan"), 1.0]),), "output 0 [3] all 1"),
        ((torch.zeros(2, 10), torch.randn(2, 4)), None),
        ((torch.tensor([3.0]),), None),
        ((torch.randn(2, 10),), None),
        ((torch.tensor([float("nan"), float("inf")]),), None),
    ],
)
def test_a_reference_is_constant_where_every_output_of_several_elements_holds_one_value(
    outputs: tuple[torch.Tensor, ...], said: str | None
) -> None:
    """One varying output is a comparison that says something; one element says nothing
    either way; outputs with nothing finite are judged by the nonfinite count instead."""
    reference = accuracy.reference_of(outputs)
    assert reference.constant == said
    measured = compare(outputs, reference, [DrawnInput(dtype="float32")])
    assert (measured.not_meaningful is None) is (said is None)
