"""Model URLs and image references go into dist/ as written: a credential in a URL would be
published to everyone who can read the repository, and a malformed image reference fails
only at pull time, on the cluster. Both are located errors at validation."""

from pathlib import Path

import pytest

from synth.load import load_specs
from synth.problems import SpecProblems
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")
SHA = "a" * 64


def problems(root: Path) -> list[str]:
    with pytest.raises(SpecProblems) as raised:
        load_specs(root)
    return [str(problem) for problem in raised.value.problems]


def with_url(url: str) -> str:
    return MINIMAL.replace(
        "    file: models/examples/tiny-mlp.pt2", f"    url: '{url}'\n    sha256: {SHA}"
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://models.example.com/m.pt2", "must use https"),
        ("https://user:hunter2@models.example.com/m.pt2", "the url carries credentials"),
        ("https://models.example.com/m.pt2?token=abc", "looks like a credential (token)"),
        ("https://models.example.com/m.pt2?X-Amz-Signature=1", "(X-Amz-Signature)"),
        ("https:///m.pt2", "has no valid host"),
        ("https://models.example.com:99999/m.pt2", "its port 99999 is no TCP port"),
        ("http://user:hunter2@models.example.com/m.pt2", "'http://***@models.example.com"),
        ("https://models.example.com:0/m.pt2", "its port 0 is no TCP port"),
        ("https://models.example.com:8443/m.pt2", "names port 8443"),
        ("https://models.example.com/a b.pt2", "spaces or control characters"),
    ],
)
def test_a_url_that_would_leak_or_cannot_work_is_located(
    spec_repo: Path, write_spec: WriteSpec, url: str, message: str
) -> None:
    write_spec("a.yaml", with_url(url))
    (found,) = problems(spec_repo)
    assert found.startswith("specs/workflows/a.yaml:7:10: models[0].url: ")
    assert message in found
    assert "hunter2" not in found, "a password is never echoed into CI logs"


def test_a_plain_https_url_with_a_harmless_query_is_accepted(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("a.yaml", with_url("https://models.example.com:443/m.pt2?revision=3"))
    assert load_specs(spec_repo).workflows[0].workflow.models[0].url is not None


@pytest.mark.parametrize(
    "image",
    [
        " registry.example.com/runner:1",
        "registry.example.com/Runner:1",
        "registry.example.com/runner@sha256:abc",
        "registry.example.com/runner:",
    ],
)
def test_an_image_reference_the_kubelet_would_refuse_is_located(
    spec_repo: Path, write_spec: WriteSpec, image: str
) -> None:
    write_spec("a.yaml", MINIMAL.replace("owner: tests\n", f"owner: tests\nimage: '{image}'\n"))
    (found,) = problems(spec_repo)
    assert found.startswith("specs/workflows/a.yaml:4:8: image: ")


@pytest.mark.parametrize(
    "image",
    [
        "runner",
        "localhost:5000/benchfleet/runner:dev",
        "registry.example.com/benchfleet/runner@sha256:" + "1" * 64,
        "registry.example.com/team_a/runner:v1.2-rc.3@sha256:" + "1" * 64,
    ],
)
def test_image_references_of_every_usual_shape_are_accepted(
    spec_repo: Path, write_spec: WriteSpec, image: str
) -> None:
    write_spec("a.yaml", MINIMAL.replace("owner: tests\n", f"owner: tests\nimage: '{image}'\n"))
    assert load_specs(spec_repo).workflows[0].workflow.image == image
