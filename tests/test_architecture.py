"""Dependencies inside the package run one way: no import cycle (module-level or inside functions), a bottom layer
(`sweep.names`, `sweep.config`) that imports nothing above it, and the CLI (`sweep.app`) imported by no module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "sweep"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of ``from <node.module> import ...``, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str) -> set[str]:
    """Every `sweep.*` module that `module` imports anywhere in its source: at module level, inside functions,
    under ``if TYPE_CHECKING``. ``from a import b`` counts as importing ``a.b`` when that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imports_of(module) for module in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_walk_sees_the_package_and_its_imports():
    assert {"sweep.config", "sweep.names", "sweep.app", "sweep.losses", "sweep.losses.mnrl"} <= set(MODULES)
    assert "sweep.study" in GRAPH["sweep.app"] and "sweep.losses.spec" in GRAPH["sweep.losses.mnrl"]


def test_find_cycle_reports_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(("module", "allowed"), [("sweep.names", set()), ("sweep.config", {"sweep.names"})])
def test_the_bottom_layer_imports_nothing_above_it(module, allowed):
    assert GRAPH[module] <= allowed, f"{module} imports {sorted(GRAPH[module] - allowed)}"


def test_only_the_entry_point_imports_the_cli():
    importers = sorted(module for module, targets in GRAPH.items() if "sweep.app" in targets)
    assert importers == ["sweep.__main__"], importers
