"""The `models` extra installs torchvision and transformers beside the pinned torch, never in
place of it."""

import re
import tomllib

from tests.conftest import REPO_ROOT


def _extras() -> dict[str, list[str]]:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras: dict[str, list[str]] = pyproject["project"]["optional-dependencies"]
    return extras


def _pin(requirements: list[str], name: str) -> str:
    (version,) = [r.split("==")[1] for r in requirements if r.startswith(f"{name}==")]
    return version


def test_torchvision_is_the_release_built_for_the_runners_torch() -> None:
    """torchvision 0.N requires torch 2.(N-15) exactly: any other pin would have pip replace
    the runner's torch, or refuse to install."""
    extras = _extras()
    torch_minor = int(_pin(extras["runner"], "torch").split(".")[1])
    vision = re.fullmatch(r"0\.(\d+)\.\d+", _pin(extras["models"], "torchvision"))
    assert vision is not None
    assert int(vision.group(1)) == torch_minor + 15


def test_model_libraries_stay_out_of_the_runner_and_the_install() -> None:
    """The runner image and `make install` carry no model library: the runner loads .pt2
    programs, never a model's code."""
    extras = _extras()
    installed = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert "models" not in re.findall(r"-e '\.\[([a-z,]+)\]'", installed)[0].split(",")
    for requirement in extras["runner"]:
        assert not requirement.startswith(("torchvision", "transformers"))
