"""`collector report --format html` writes one self-contained file where --output says, and
refuses a folder rather than filling it."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from collector.cli import HTML_REPORT, cli
from collector.store import open_store
from contract.options import DEFAULT_DATABASE
from tests.collector.stored import JOB, NOW, failed, succeeded


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(JOB, [succeeded(0, p50_ms=1.5), succeeded(1, p50_ms=2.5), failed(2)], NOW)
    return tmp_path


def report(repo: Path, *arguments: str) -> tuple[int, str]:
    done = CliRunner().invoke(
        cli, ["--root", str(repo), "report", "--workflow", "cpu-smoke", *arguments]
    )
    return done.exit_code, done.output


def test_the_page_is_one_file_at_the_repository_root_by_default(repo: Path) -> None:
    code, output = report(repo, "--format", "html")
    assert code == 0, output
    page = repo / HTML_REPORT
    assert f"wrote {page}" in output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
    assert [path.name for path in repo.iterdir() if path.suffix == ".png"] == []


def test_the_page_goes_where_output_names_it(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "weekly.html"
    target.parent.mkdir()
    code, output = report(repo, "--format", "html", "--output", str(target))
    assert code == 0, output
    assert "Failed (1)" in target.read_text(encoding="utf-8")


def test_a_folder_as_output_is_refused_and_left_alone(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "report.html"
    folder.mkdir()
    code, output = report(repo, "--format", "html", "--output", str(folder))
    assert code == 1
    assert f"--output {folder} is a folder; name the file to write" in output
    assert list(folder.iterdir()) == []
