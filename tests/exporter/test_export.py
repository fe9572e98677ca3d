"""`benchfleet export`: a user's factory to a .pt2 that synth and the runner accept, and its
`models:` entry; each hurdle users meet refused with where and what to change, leaving the
output file as it was."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchfleet.cli import cli
from contract.archive import check_archive
from contract.inputs import Dimension
from exporter.entry import OCI_PLACEHOLDER
from synth.digests import file_sha256
from synth.load import load_specs
from synth.problems import SpecProblems
from tests.conftest import REPO_ROOT, TEST_DATA
from tests.exporter.factories import CHATTER, VOCABULARY

FACTORIES = "tests.exporter.factories"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A repository with the tests' fleet and no workflow yet."""
    (tmp_path / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(TEST_DATA / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    return tmp_path


def export(root: Path, factory: str, *arguments: str) -> Result:
    return CliRunner().invoke(
        cli, ["--root", str(root), "export", f"{FACTORIES}:{factory}", *arguments]
    )


def workflow_with(entry: str) -> str:
    return f"""\
id: mine
description: my own model
owner: me@example.com
clusters: [alpha]
models:
{entry}benchmark:
  batch_size: 4
targets:
  - gpu_type: cpu
"""


def test_a_torchvision_style_factory_gives_a_file_entry_that_validates(root: Path) -> None:
    out = root / "models" / "classifier.pt2"
    run = export(root, "classifier", "--arg", "classes=10", "--input", "3,32,32", "--out", str(out))
    assert run.exit_code == 0, run.output
    assert run.stdout == (
        "  - name: classifier\n"
        "    file: models/classifier.pt2\n"
        f"    sha256: {file_sha256(out)}\n"
        "    inputs: [{shape: [3, 32, 32]}]\n"
        "    layers: {linear: {10x8: 1}, parameters: 330}\n"
    )
    (declared,) = check_archive(out).inputs
    assert declared.dimensions == (
        Dimension(1, 1024), Dimension(3, 3), Dimension(32, 32), Dimension(32, 32)
    )  # fmt: skip
    assert "outputs: output [2, 10] float32" in run.stderr
    (root / "specs" / "workflows" / "mine.yaml").write_text(workflow_with(run.stdout))
    (loaded,) = load_specs(root).workflows
    assert [variant.batch_size for variant in loaded.variants] == [4]


def test_a_hugging_face_style_class_is_built_from_its_config_and_its_output_unwrapped(
    root: Path,
) -> None:
    """ModelOutput exported as-is names a type the runner cannot rebuild; flattened, the
    archive's output is a tuple, and the inputs carry forward's names."""
    out = root / "models" / "encoder.pt2"
    run = export(
        root, "Encoder", "--arg", "hidden_size=32", "--input", f"16:int64:{VOCABULARY}",
        "--input", "attention_mask=16:int64", "--out", str(out),
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "inputs: [{shape: [16], dtype: int64}, {shape: [16], dtype: int64}]" in run.stdout
    assert "outputs: last_hidden_state [2, 16, 32] float32; pooler_output [2, 32] float32" in (
        run.stderr
    )
    assert [(i.name, i.dtype) for i in check_archive(out).inputs] == [
        ("input_ids", "int64"),
        ("attention_mask", "int64"),
    ]


def test_the_same_factory_exports_the_same_bytes(root: Path) -> None:
    first, second = root / "a.pt2", root / "b.pt2"
    for out in (first, second):
        run = export(root, "classifier", "--input", "3,8,8", "--out", str(out))
        assert run.exit_code == 0, run.output
    assert first.read_bytes() == second.read_bytes()


def test_a_static_batch_export_takes_its_batch_only(root: Path) -> None:
    out = root / "static.pt2"
    run = export(root, "StaticBatch", "--input", "8", "--static-batch", "--out", str(out))
    assert run.exit_code == 0, run.output
    (declared,) = check_archive(out).inputs
    assert declared.dimensions[0] == Dimension(2, 2)
    assert "batch 2..2" in run.stderr
    assert "exported for batch 2 only: the spec's batch sizes must be 2" in run.stderr


@pytest.mark.parametrize(
    ("factory", "arguments", "message", "hint"),
    [
        (
            "StaticBatch", ["--input", "8"],
            "the model's code fixes the batch size (torch.export found it specialized to 2)",
            "--static-batch",
        ),
        (
            "ValueBranch", ["--input", "8"],
            "control flow depends on its input values, which an exported graph cannot hold "
            "(at ",
            "torch.where",
        ),
        ("Encoder", ["--input", "16", "--input", "16"], "the model fails on the example", "int64"),
        (
            "Encoder", ["--input", "16:int64:5000", "--input", "16:int64"],
            "IndexError: index out of range in self", "vocabulary size",
        ),
        (
            "TextOutput", ["--input", "8"],
            "the model's output 1 is a str, not a tensor", "return tensors",
        ),
        ("AlwaysDropout", ["--input", "8"], "exported in training mode", None),
        ("Noisy", ["--input", "8"], "output 0 is not the model's on the same inputs", "random"),
        (
            "broken", ["--arg", "depth=3", "--input", "8"],
            "the factory failed (called with depth=3): ValueError: no model of depth 3 (at ",
            "--arg NAME=VALUE",
        ),
        ("not_a_module", ["--input", "8"], "returned a int, not a torch.nn.Module", None),
        # Issue #31: sys.exit(0) in the user's code ended export with 0, no file, no entry.
        ("exits", ["--input", "8"], "the factory failed: it called sys.exit(0) (at ", None),
        (
            "ExitsInForward", ["--input", "8"],
            "the model fails on the example inputs: it called sys.exit(0) (at ", None,
        ),
        ("clasifier", ["--input", "8"], "has no attribute 'clasifier'", "'classifier'"),
    ],
)  # fmt: skip
def test_a_hurdle_is_refused_with_its_fix_and_leaves_the_output_file(
    root: Path, factory: str, arguments: list[str], message: str, hint: str | None
) -> None:
    out = root / "model.pt2"
    out.write_bytes(b"the earlier export")
    run = export(root, factory, *arguments, "--out", str(out))
    assert run.exit_code == 1, run.output
    assert message in run.stderr
    if hint is not None:
        assert "hint:" in run.stderr and hint in run.stderr.split("hint:", 1)[1]
    assert "Traceback" not in run.output
    assert out.read_bytes() == b"the earlier export"
    assert sorted(path.name for path in root.iterdir()) == ["model.pt2", "specs"]


def test_the_place_of_a_failure_is_the_users_own_line(root: Path) -> None:
    run = export(root, "ValueBranch", "--input", "8", "--out", str(root / "m.pt2"))
    assert "factories.py:" in run.stderr
    assert "in forward: return out if x.sum() > 0 else -out)" in run.stderr


def test_a_module_that_exits_as_it_is_imported_is_refused(root: Path) -> None:
    out = root / "m.pt2"
    run = CliRunner().invoke(
        cli, ["export", "tests.exporter.exits_on_import:build", "--input", "8", "--out", str(out)]
    )
    assert run.exit_code == 1, run.output
    assert "cannot import tests.exporter.exits_on_import: it called sys.exit(0) (at " in run.stderr
    assert not out.exists() and run.stdout == ""


def test_a_module_that_cannot_be_imported_is_named(root: Path) -> None:
    run = CliRunner().invoke(
        cli, ["export", "no_such_module:build", "--input", "8", "--out", str(root / "m.pt2")]
    )
    assert run.exit_code == 1
    assert "cannot import no_such_module: ModuleNotFoundError" in run.stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("3,x", "is not a shape of sizes above 0"),
        ("8:int8", "dtype 'int8' is not one of"),
        ("8:float32:5", "a bound is for integer inputs"),
        ("8:int64:0", "is not a whole number above 0"),
        ("for=8", "'for' is not a Python argument name"),
        ("99999,99999", "more than 268,435,456"),
    ],
)
def test_an_input_that_cannot_be_read_is_a_usage_error(
    root: Path, value: str, message: str
) -> None:
    run = export(root, "classifier", "--input", value, "--out", str(root / "m.pt2"))
    assert run.exit_code == 2
    assert message in run.stderr


def test_a_model_over_a_configmap_is_pointed_at_push_model_or_a_url(root: Path) -> None:
    out = root / "wide.pt2"
    run = export(root, "wide", "--input", "600", "--out", str(out))
    assert run.exit_code == 0, run.output
    assert OCI_PLACEHOLDER in run.stdout
    assert f"make push-model MODEL={out} REGISTRY=" in run.stderr
    # And how to try it on this machine before it is pushed anywhere.
    assert "--image-file /opt/models/<file>=<this file>" in " ".join(run.stderr.split())
    served = export(
        root,
        "wide",
        "--input",
        "600",
        "--out",
        str(out),
        "--url",
        "https://models.example.com/w.pt2",
    )
    assert served.exit_code == 0, served.output
    assert (
        f"    url: https://models.example.com/w.pt2\n    size: {out.stat().st_size}\n"
        f"    sha256: {file_sha256(out)}\n"
    ) in served.stdout


@pytest.mark.slow
def test_validating_and_synthesizing_specs_never_import_the_exporters_torch_side() -> None:
    """The command runs the user's code; what reads pull requests must not reach it."""
    probe = (
        "import sys, benchfleet.cli; from synth.load import load_specs; from pathlib import Path; "
        "load_specs(Path('.')); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('exporter.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert done.stdout.split() == ["['exporter.cli',", "'exporter.inputs']"]


def test_what_the_libraries_say_is_hidden_and_counted_unless_verbose(
    root: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """torchao's import printed a warning per enum between the command's own lines."""
    out = root / "chatty.pt2"
    quiet = export(root, "chatty", "--input", "8", "--out", str(out))
    assert quiet.exit_code == 0, quiet.output
    assert not any(said in quiet.output for said in CHATTER)
    assert "note: 2 warnings of torch and the libraries the model uses hidden; --verbose " in (
        quiet.stderr
    )
    assert not any(said in capfd.readouterr().err for said in CHATTER)
    caplog.clear()
    with pytest.warns(DeprecationWarning, match=CHATTER[0]):
        loud = export(root, "chatty", "--input", "8", "--out", str(out), "--verbose")
    assert loud.exit_code == 0, loud.output
    assert CHATTER[1] in caplog.text
    assert CHATTER[2] in capfd.readouterr().err
    assert "hidden" not in loud.stderr


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_the_exported_file_is_made_as_any_file_the_user_writes(
    root: Path, umask: int, mode: int
) -> None:
    """It was 0600, tempfile's mode, whatever the umask: unreadable to the team's group."""
    out = root / "classifier.pt2"
    before = os.umask(umask)
    try:
        run = export(root, "classifier", "--input", "3,8,8", "--out", str(out))
    finally:
        os.umask(before)
    assert run.exit_code == 0, run.output
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_a_url_model_is_judged_by_the_layers_its_export_recorded(root: Path) -> None:
    """synth cannot read a url or oci model: its entry's layers: line says what the runner
    would find, so a quantization that reaches none of its layers fails review, not a pod."""
    out = root / "served.pt2"
    url = "https://models.example.com/served.pt2"
    run = export(
        root,
        "classifier",
        "--arg",
        "classes=10",
        "--input",
        "3,8,8",
        "--out",
        str(out),
        "--url",
        url,
    )
    assert run.exit_code == 0, run.output
    assert "    layers: {linear: {10x8: 1}, parameters: 330}\n" in run.stdout
    # The names a recording of its inputs uses, as synth and the runner read them.
    assert "inputs by name: input (a recording of inputs names its samples" in run.stderr
    assert (
        "note: of its 1 Linear layer, each quantization takes: int8-dynamic 1; "
        "int8-weight-only 1; int4-weight-only 0; fp8-dynamic 0 (synth refuses one that takes "
        "none)\n"
    ) in run.stderr
    spec = root / "specs" / "workflows" / "mine.yaml"
    spec.write_text(
        workflow_with(run.stdout) + "sweep:\n  matrix:\n    quantization: [int8-dynamic]\n"
    )
    (loaded,) = load_specs(root).workflows
    assert [str(variant.quantization) for variant in loaded.variants] == ["int8-dynamic"]
    spec.write_text(spec.read_text().replace("int8-dynamic", "int4-weight-only"))
    with pytest.raises(SpecProblems) as raised:
        load_specs(root)
    (problem,) = raised.value.problems
    assert problem.path == "sweep.matrix.quantization[0]"
    assert problem.message.startswith("int4-weight-only takes no linear layer of model 'served'")
    assert problem.message.endswith(
        "the model's are 10x8 (out x in features, as its layers: records)"
    )


def test_a_model_whose_outputs_are_constant_is_said_at_export(root: Path) -> None:
    """Its variants' accuracy would mean nothing: said before it is pushed or committed."""
    run = export(root, "zero_head", "--input", "8", "--out", str(root / "zero.pt2"))
    assert run.exit_code == 0, run.output
    assert (
        "note: the runner's accuracy pass: not meaningful: the fp32 reference's outputs are "
        "constant (output 0 [1, 10] all 0)"
    ) in run.stderr
