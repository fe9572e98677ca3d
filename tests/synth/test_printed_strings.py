"""No file name, spec value or dist/ object can forge a line of its own where benchfleet
prints it (a GitHub Actions command such as `::error ...::` in CI's log, a terminal escape, a
code fence in the pull request's comment): the loader refuses file names that hold such
characters, and every printer of a user string shows it escaped (contract.text.shown)."""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from contract.layout import DIST
from synth.cli import cli
from synth.main import synth
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")

FORGED_NAMES = [
    "a\n::error file=clusters.yaml,line=1::forged.yaml",
    "a\r::warning::forged.yaml",
    "a\x1b[2K\x1b[1Gforged.yaml",
    "a\u2028::error::forged.yaml",
    "a\x85::error::forged.yaml",
    "a\u202elmay.yaml",
]


def forged_lines(output: str) -> list[str]:
    """Lines a log viewer would take for a command, or that hide what they hold."""
    return [line for line in output.splitlines() if line.startswith("::") or not line.isprintable()]


@pytest.mark.parametrize("name", FORGED_NAMES, ids=range(len(FORGED_NAMES)))
def test_a_spec_file_named_to_forge_a_line_is_refused_and_its_name_printed_escaped(
    name: str, spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec(name, MINIMAL)
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "validate"])
    assert result.exit_code == 1
    assert forged_lines(result.stderr) == []
    assert "the file's name holds U+" in result.stderr
    assert result.stderr.rstrip().endswith("Error: 1 problem in the specs")


def test_a_stray_file_named_to_forge_a_line_is_printed_escaped(spec_repo: Path) -> None:
    (spec_repo / "specs" / "notes\n::error::forged.txt").write_text("", encoding="utf-8")
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "validate"])
    assert result.exit_code == 1
    assert forged_lines(result.stderr) == []
    assert "specs/notes\\n::error::forged.txt:1:1: synth does not read this file" in result.stderr


def test_a_job_renamed_by_hand_in_dist_is_planned_on_lines_of_its_own(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("valid-minimal.yaml", MINIMAL)
    synth(spec_repo)
    (workload,) = (spec_repo / DIST).glob("*/workloads/valid-minimal.yaml")
    documents = list(yaml.safe_load_all(workload.read_text(encoding="utf-8")))
    job = next(document for document in documents if document and document["kind"] == "Job")
    job["metadata"]["name"] += "\n::error file=specs/clusters.yaml,line=1::forged"
    header = workload.read_text(encoding="utf-8").split("\n", 1)[0] + "\n"
    workload.write_text(header + yaml.safe_dump_all(documents), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert forged_lines(result.output) == []
    assert "\\n::error file=specs/clusters.yaml" in result.output
