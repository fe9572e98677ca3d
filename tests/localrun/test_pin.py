"""`make pin-image` changes the `image:` value of specs/clusters.yaml and not one other byte,
and refuses references a node could not pull."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from localrun.pin import PinError, main, pin_file, pin_text
from localrun.reference import BadReference, parse_pinned, parse_reference, parse_registry
from synth.main import synth
from tests.conftest import REPO_ROOT

DIGEST = "sha256:" + "0123456789abcdef" * 4
PINNED = f"127.0.0.1:5000/benchfleet/runner@{DIGEST}"
FLEET = (REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8")
OLD_IMAGE = yaml.safe_load(FLEET)["image"]


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_only_the_image_line_of_the_real_file_changes() -> None:
    edited = pin_text(FLEET, parse_pinned(PINNED))
    assert changed_lines(FLEET, edited) == [(f"image: {OLD_IMAGE}\n", f"image: {PINNED}\n")]
    assert yaml.safe_load(edited)["image"] == PINNED


def test_every_comment_survives() -> None:
    comments = [line for line in FLEET.splitlines() if line.lstrip().startswith("#")]
    assert comments, "the real file has comments to keep"
    edited = pin_text(FLEET, parse_pinned(PINNED)).splitlines()
    assert [line for line in edited if line.lstrip().startswith("#")] == comments


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("image: 'reg.io/a/runner:1'\n", f"image: {PINNED}\n"),
        ('image: "reg.io/a/runner:1"\n', f"image: {PINNED}\n"),
        ("image:   reg.io/a/runner:1   # the runner\n", f"image:   {PINNED}   # the runner\n"),
    ],
    ids=["single-quoted", "double-quoted", "trailing-comment"],
)
def test_quotes_and_a_trailing_comment_are_handled(line: str, expected: str) -> None:
    text = f"# head\n{line}clusters: []\n"
    assert pin_text(text, parse_pinned(PINNED)) == f"# head\n{expected}clusters: []\n"


def test_crlf_line_ends_are_kept(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "clusters.yaml"
    path.write_bytes(b"# a\r\nimage: reg.io/a/runner:1\r\nclusters: []\r\n")
    pin_file(tmp_path, parse_pinned(PINNED))
    assert path.read_bytes() == f"# a\r\nimage: {PINNED}\r\nclusters: []\r\n".encode()


def test_an_image_nested_under_another_key_is_not_touched() -> None:
    text = "clusters:\n  - image: reg.io/x/y:1\nimage: reg.io/a/runner:1\n"
    assert pin_text(text, parse_pinned(PINNED)) == (
        f"clusters:\n  - image: reg.io/x/y:1\nimage: {PINNED}\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clusters: []\n", "0 top-level 'image:' keys"),
        ("image: a.io/b:1\nimage: a.io/c:1\n", "2 top-level 'image:' keys"),
        ("image:\n  - a.io/b:1\n", "not a string"),
        ("image:\n", "not a string"),
        ("image: >\n  a.io/b:1\n", "spans several lines"),
        ("image: a.io/b\n  :1\n", "spans several lines"),
        ("- a\n", "not a mapping"),
        ("image: [\n", "not valid YAML"),
    ],
    ids=["missing", "twice", "list", "empty", "folded", "continued", "list-file", "broken"],
)
def test_files_that_cannot_be_edited_safely_are_refused(text: str, message: str) -> None:
    with pytest.raises(PinError, match=message):
        pin_text(text, parse_pinned(PINNED))


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("", "no image reference"),
        (f"benchfleet/runner@{DIGEST}", "names no registry"),
        (f"runner@{DIGEST}", "names no registry"),
        (f"localhost/benchfleet-runner@{DIGEST}", "podman's name for an image on this machine"),
        ("reg.io/benchfleet/runner:0.1.0", "not pinned by digest"),
        ("reg.io/benchfleet/runner", "not pinned by digest"),
        ("reg.io/benchfleet/runner@sha256:abc", "not sha256:<64 lowercase hex digits>"),
        (f"reg.io/benchfleet/runner@{DIGEST.upper()}", "not sha256"),
        ("reg.io/benchfleet/runner@sha512:" + "ab" * 64, "not sha256"),
        (f"reg.io/Benchfleet/runner@{DIGEST}", "repository 'Benchfleet/runner' is not valid"),
        (f"reg.io/bench fleet/runner@{DIGEST}", "is not valid"),
        (f"reg.io/benchfleet/runner:-x@{DIGEST}", "tag '-x' is not a valid tag"),
        (f"reg_io:5000/runner@{DIGEST}", "not a valid registry host"),
        (f"reg.io/@{DIGEST}", "names a registry but no repository"),
    ],
)
def test_references_a_node_could_not_pull_are_refused(reference: str, message: str) -> None:
    with pytest.raises(BadReference, match=message):
        parse_pinned(reference)


def test_a_valid_reference_is_split_as_the_registry_protocol_splits_it() -> None:
    reference = parse_reference(f"[::1]:5000/a/b-c__d.e:v1.2@{DIGEST}")
    assert (reference.registry, reference.repository) == ("[::1]:5000", "a/b-c__d.e")
    assert (reference.tag, reference.digest) == ("v1.2", DIGEST)
    assert reference.is_loopback
    assert not parse_reference("reg.io/a:1").is_loopback


@pytest.mark.parametrize("registry", ["", "benchfleet", "localhost/x", "reg.io/UPPER"])
def test_push_registries_a_node_could_not_pull_from_are_refused(registry: str) -> None:
    with pytest.raises(BadReference):
        parse_registry(registry)


def test_pin_then_synth_writes_the_digest_into_every_job(tmp_path: Path) -> None:
    """What `make pin-image && make synth` does to dist/, on a copy of the repository."""
    for folder in ("specs", "dist", "clusters", "models"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder)
    pin_file(tmp_path, parse_pinned(PINNED))
    synth(tmp_path)
    images = {
        container["image"]
        for path in (tmp_path / "dist").glob("*/workloads/*.yaml")
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if document and document["kind"] == "Job"
        for container in document["spec"]["template"]["spec"]["containers"]
    }
    assert images == {PINNED}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    return tmp_path


@pytest.mark.slow
def test_cli_pins_what_the_last_push_recorded(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = root / "pushed.json"
    image, digest = PINNED.split("@")
    record.write_text(json.dumps({"image": image, "digest": digest}), encoding="utf-8")
    arguments = ["--root", str(root), "--record", str(record), "--no-registry-check"]
    assert main(arguments) == 0
    assert yaml.safe_load((root / "specs" / "clusters.yaml").read_text())["image"] == PINNED
    assert "now run `make synth`" in capsys.readouterr().out


def test_cli_without_a_push_says_how_to_get_one(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["--root", str(root), "--record", str(root / "none.json")]
    assert main(arguments) == 1
    assert "run `make push REGISTRY=host:port/path` first" in capsys.readouterr().err
    assert (root / "specs" / "clusters.yaml").read_text(encoding="utf-8") == FLEET


@pytest.mark.slow
def test_cli_refuses_a_bad_reference_and_leaves_the_file_alone(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(root), "--image", "benchfleet/runner:latest"]) == 1
    assert "names no registry" in capsys.readouterr().err
    assert (root / "specs" / "clusters.yaml").read_text(encoding="utf-8") == FLEET


@pytest.mark.slow
def test_cli_refuses_a_digest_the_registry_cannot_confirm(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing listens on port 9 (discard) of loopback here: the registry cannot be asked.
    assert main(["--root", str(root), "--image", f"127.0.0.1:9/runner@{DIGEST}"]) == 1
    assert "--no-registry-check" in capsys.readouterr().err
    assert (root / "specs" / "clusters.yaml").read_text(encoding="utf-8") == FLEET
