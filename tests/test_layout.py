"""The import graph the design promises: the runner stays free of cluster libraries and the
collector free of torch, so each image and install stays small."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

FORBIDDEN = {
    "runner": {"cdk8s", "kubernetes", "constructs", "synth", "collector"},
    "collector": {"torch", "cdk8s", "constructs"},
    "synth": {"torch", "kubernetes", "collector"},
    "review": {"torch"},
}


def imported_modules(package: str) -> dict[str, str]:
    """Top-level modules each file of `package` imports, by the file that imports it."""
    found: dict[str, str] = {}
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(REPO_ROOT)))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_libraries(package: str) -> None:
    imports = imported_modules(package)
    offending = {name: imports[name] for name in FORBIDDEN[package] if name in imports}
    assert offending == {}


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
        ("import collector.cli", {"torch", "cdk8s", "constructs"}),
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
