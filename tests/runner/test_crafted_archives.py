"""A model file must never run code in the runner, whatever torch's loader would do with it."""

import contextlib
import re
from pathlib import Path

import pytest
import torch

from contract.archive import Program
from contract.errors import ExitCode
from contract.result import ErrorResult, parse_result_line
from runner.errors import ModelLoadError
from runner.loading import load_program
from tests.crafted_archives import ATTACKS, BASE_INPUT_SHAPE, BOMBS, Attack, Bomb, inflating_program
from tests.runner.conftest import MakeConfig, python_m_runner, sha256_of
from tests.runner.test_main import write_config

BY_NAME = {attack.name: attack for attack in ATTACKS}


def crafted(attack: Attack, folder: Path) -> tuple[Path, Path]:
    """The crafted archive as `tiny-mlp.pt2` in `folder`, and the marker its payload creates."""
    marker = folder / "marker"
    path = folder / "tiny-mlp.pt2"
    path.write_bytes(attack.build(marker))
    return path, marker


@pytest.mark.parametrize(
    "attack", [a for a in ATTACKS if a.runs_in_torch], ids=lambda attack: attack.name
)
def test_each_crafted_archive_runs_code_in_torch_itself(attack: Attack, tmp_path: Path) -> None:
    """The attacks are real: torch 2.13, unguarded, runs each payload while loading the archive
    or building and calling its module. Were one not, its refusal below would prove nothing."""
    path, marker = crafted(attack, tmp_path)
    with contextlib.suppress(Exception):  # what torch raises after the payload ran is no matter
        torch.export.load(path).module()(torch.randn(*BASE_INPUT_SHAPE))
    assert marker.exists()


@pytest.mark.usefixtures("export_load_forbidden")
@pytest.mark.parametrize("attack", ATTACKS, ids=lambda attack: attack.name)
def test_the_runner_refuses_each_crafted_archive_before_torch_reads_it(
    attack: Attack, tmp_path: Path
) -> None:
    path, marker = crafted(attack, tmp_path)
    with pytest.raises(ModelLoadError, match=attack.refusal) as raised:
        load_program(path, sha256_of(path))
    assert "is refused before torch reads it" in str(raised.value)
    assert not marker.exists()


@pytest.mark.usefixtures("export_load_forbidden")
@pytest.mark.parametrize("bomb", BOMBS, ids=lambda bomb: bomb.name)
def test_the_runner_refuses_each_container_bomb_before_torch_reads_it(
    bomb: Bomb, tmp_path: Path
) -> None:
    path = tmp_path / "tiny-mlp.pt2"
    path.write_bytes(bomb.build())
    with pytest.raises(ModelLoadError, match=bomb.refusal) as raised:
        load_program(path, sha256_of(path))
    assert "is refused before torch reads it" in str(raised.value)


@pytest.mark.parametrize("name", ["pickled-weight", "pickled-constant", "pickled-sample-inputs"])
def test_torch_unpickles_only_tensors_even_if_the_archive_check_missed_a_pickle(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second wall: inside load_program every torch.load is weights_only, whatever torch's
    loader asks for."""
    monkeypatch.setattr("runner.loading.check_archive", lambda source: Program((), None, None))
    path, marker = crafted(BY_NAME[name], tmp_path)
    with pytest.raises(ModelLoadError, match=r"torch\.export\.load cannot read"):
        load_program(path, sha256_of(path))
    assert not marker.exists()


def _run_runner(models: Path, sha256: str, make_config: MakeConfig, tmp_path: Path) -> ErrorResult:
    """`python -m runner` on a model in `models`: its result, after checking it exited 8,
    model_refused, which fails the index at once: the same bytes are refused every time."""
    config = make_config(sha256=sha256)
    env = {
        "CONFIG_PATH": str(write_config(config, tmp_path)),
        "MODEL_PATH": str(models),
        "TERMINATION_LOG": str(tmp_path / "log"),
        "PATH": "/usr/bin:/bin",
    }
    done = python_m_runner(env)
    assert done.returncode == ExitCode.MODEL_REFUSED, done.stderr
    result = parse_result_line(done.stdout)
    assert isinstance(result, ErrorResult) and result.error.type == "model_refused"
    return result


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pickled-weight", "symbolic-expression"])
def test_python_m_runner_exits_8_with_a_model_refused_result_and_runs_nothing(
    name: str, make_config: MakeConfig, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    path, marker = crafted(BY_NAME[name], models)
    result = _run_runner(models, sha256_of(path), make_config, tmp_path)
    assert re.search(BY_NAME[name].refusal, result.error.message)
    assert not marker.exists()


@pytest.mark.slow
def test_python_m_runner_exits_8_for_an_inflating_program_instead_of_running_out_of_memory(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """Before the bounds, the check itself inflated model.json and parsed it: gigabytes and
    a pod killed at its memory limit, or a MemoryError reported as out_of_memory (exit 4),
    which blames the variant for the model file."""
    models = tmp_path / "models"
    models.mkdir()
    path = models / "tiny-mlp.pt2"
    path.write_bytes(inflating_program())
    result = _run_runner(models, sha256_of(path), make_config, tmp_path)
    assert "models/model.json is compressed" in result.error.message
