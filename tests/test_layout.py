"""The import graph the design promises: the runner stays free of cluster libraries and the
collector free of torch, so each image and install stays small; the report reads what the
collector stored and follows no cluster, so it reports from a fresh clone."""

import ast
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.conftest import REPO_ROOT

FORBIDDEN = {
    "runner": {"cdk8s", "kubernetes", "constructs", "synth", "collector"},
    "collector": {"torch", "cdk8s", "constructs"},
    "synth": {"torch", "kubernetes", "collector", "report"},
    "report": {"torch", "cdk8s", "constructs", "kubernetes", "synth", "runner", "localrun"},
    "review": {"torch"},
}
READS_THE_STORE: Final = {"collector.store", "collector.history"}
"""What of the collector the report may import: the database and the records in git."""
REPORT_COMMAND: Final = "collector/cli.py"
"""The one module of the collector that imports the report: `collector report`'s command."""


def imports_of(path: Path) -> set[str]:
    """The modules `path` imports, by their full dotted names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def imported_modules(package: str) -> dict[str, str]:
    """Top-level modules each file of `package` imports, by the file that imports it."""
    found: dict[str, str] = {}
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        for name in sorted(imports_of(path)):
            found.setdefault(name.split(".")[0], str(path.relative_to(REPO_ROOT)))
    return found


def importers(package: str, prefix: str) -> dict[str, set[str]]:
    """The modules under `prefix` (a package) that each file of `package` imports, by file."""
    found = {}
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        named = {m for m in imports_of(path) if m == prefix or m.startswith(f"{prefix}.")}
        if named:
            found[str(path.relative_to(REPO_ROOT))] = named
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_libraries(package: str) -> None:
    imports = imported_modules(package)
    offending = {name: imports[name] for name in FORBIDDEN[package] if name in imports}
    assert offending == {}


def test_the_report_reads_only_the_store_and_the_records_of_the_collector() -> None:
    """The report follows no cluster: gather, kube and the rest stay the collector's."""
    offending = {
        path: named - READS_THE_STORE
        for path, named in importers("report", "collector").items()
        if named - READS_THE_STORE
    }
    assert offending == {}


def test_only_the_report_command_of_the_collector_imports_the_report() -> None:
    """What gather needs (the price of 1,000 inferences, say) lives in contract/, so that
    following a cluster never depends on how a report is drawn."""
    assert set(importers("collector", "report")) <= {REPORT_COMMAND}


def test_specs_folder_holds_only_spec_files() -> None:
    allowed = {".yaml", ".json"}
    assert {p.suffix for p in Path(REPO_ROOT / "specs").rglob("*") if p.is_file()} <= allowed


def _loaded_by(statement: str) -> set[str]:
    """Top-level modules a fresh interpreter has loaded after running `statement`."""
    listing = "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"import sys; {statement}; {listing}"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    ("statement", "never"),
    [
        (
            "import contract.config, contract.result, contract.layout, contract.dist",
            {"torch", "cdk8s", "kubernetes"},
        ),
        ("import collector.cli", {"torch", "cdk8s", "constructs", "matplotlib"}),
        (
            "import report.model, report.formats, report.trend_render, report.notes",
            {"torch", "cdk8s", "constructs", "kubernetes", "synth", "matplotlib"},
        ),
        ("import review.comment", {"torch"}),
        (
            "import runner.run, runner.__main__",
            {"cdk8s", "constructs", "kubernetes", "synth", "collector"},
        ),
    ],
)
def test_what_each_package_really_loads(statement: str, never: set[str]) -> None:
    """Transitively, not just by direct import: one stray import in a shared module would pull
    torch into the collector's install, or the cluster libraries into the runner's image."""
    assert never & _loaded_by(statement) == set()
