"""The import graph the design promises: the runner stays free of cluster libraries and the
collector free of torch, so each image and install stays small; the report reads what the
collector stored and follows no cluster, so it reports from a fresh clone. And the packages
stand on floors (docs/architecture.md): each imports only from the floors below it, so no
two packages and no two modules import each other."""

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

from tests.conftest import REPO_ROOT

FORBIDDEN = {
    "runner": {"cdk8s", "kubernetes", "constructs", "synth", "collector"},
    "collector": {"torch", "cdk8s", "constructs", "synth"},
    "synth": {"torch", "kubernetes", "collector", "report", "exporter"},
    "store": {"torch", "cdk8s", "constructs", "kubernetes", "synth", "runner", "collector"},
    "report": {
        "torch",
        "cdk8s",
        "constructs",
        "kubernetes",
        "synth",
        "runner",
        "localrun",
        "collector",
    },
    "review": {"torch"},
}
REPORT_COMMAND: Final = "collector/cli.py"
"""The one module of the collector that imports the report: `collector report`'s command."""
FLOORS: Final = (
    {"contract"},
    {"synth"},
    {"runner"},
    {"store"},
    {"report"},
    {"collector"},
    {"localrun"},
    {"localcluster", "standin", "exporter", "review"},
    {"benchfleet", "models"},
    {"tests"},
    {"bench"},
)
"""The repository's packages, bottom floor first, as results flow: the contract; the specs
synth turns into dist/; the runner measuring what dist/ says; the store holding what was
measured; the report reading the store; the collector filling it (whose `collector report`
serves the report); runs on this machine, stored as the collector stores them; the local
cluster and the stand-in API server, the exporter and the review, each built on those; the
commands put together (benchfleet) and the example models exported by the exporter; the
tests; the benchmarks. A package imports only from floors below its own."""


def floor_of(package: str) -> int:
    """The floor `package` stands on (KeyError: a package no floor holds)."""
    return next(number for number, floor in enumerate(FLOORS) if package in floor)


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
        # The store's client loads only when a command builds one.
        ("import contract.objectstore", {"boto3", "botocore", "s3transfer"}),
        ("import collector.cli", {"torch", "cdk8s", "constructs", "matplotlib", "synth"}),
        ("import benchfleet.collector", {"torch", "cdk8s", "constructs", "matplotlib"}),
        (
            "import store.database, store.history",
            {"torch", "cdk8s", "constructs", "kubernetes", "synth", "collector", "report"},
        ),
        (
            "import report.model, report.formats, report.trend_render, report.notes",
            {"torch", "cdk8s", "constructs", "kubernetes", "synth", "collector", "matplotlib"},
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


def own_modules() -> dict[str, Path]:
    """Every module of the repository's own packages, by its dotted name."""
    found = {}
    for package in sorted(p for p in REPO_ROOT.iterdir() if (p / "__init__.py").is_file()):
        for path in package.rglob("*.py"):
            parts = path.relative_to(REPO_ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def own_imports(name: str, path: Path, modules: Mapping[str, Path]) -> Iterator[str]:
    """The repository's modules that module `name` imports: each `import`, at the top, in a
    function or under `if TYPE_CHECKING:`, by the module it loads (a name imported from a
    package is its submodule where one is called so)."""

    def own(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*above, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            module = own(target)
            if module is not None and module != name:
                yield module


@functools.cache
def module_graph() -> dict[str, set[str]]:
    """Each of the repository's modules, with the repository's modules it imports."""
    modules = own_modules()
    return {name: set(own_imports(name, path, modules)) for name, path in modules.items()}


def package_graph(modules: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Each top-level package, with the other top-level packages its modules import."""
    packages: dict[str, set[str]] = {}
    for name, imported in modules.items():
        top = name.split(".")[0]
        packages.setdefault(top, set()).update({m.split(".")[0] for m in imported} - {top})
    return packages


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected part of `graph` of more than one node (Tarjan's algorithm):
    the nodes that reach each other through their imports."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            part: list[str] = []
            while not part or part[-1] != node:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_every_package_stands_on_a_floor() -> None:
    assert set(package_graph(module_graph())) == set().union(*FLOORS)


def test_no_module_imports_up_a_floor_or_across_one() -> None:
    """A module imports only from its own package and the floors below: an import of a
    package above (or beside, on the same floor) is how a loop between packages starts."""
    offending = sorted(
        f"{name} imports {module}"
        for name, imported in module_graph().items()
        for module in imported
        if (top := name.split(".")[0]) != (other := module.split(".")[0])
        and floor_of(other) >= floor_of(top)
    )
    assert offending == []


def test_no_two_packages_import_each_other() -> None:
    assert cycles(package_graph(module_graph())) == []


def test_no_modules_import_each_other() -> None:
    """Also where one side imports only for its type hints: the two are one module in truth."""
    assert cycles(module_graph()) == []
