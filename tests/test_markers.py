"""The default `python -m pytest` leaves out the slow kinds of test by their markers (`addopts` in pyproject.toml), so
each slow kind must carry its marker where it lives: every module of `tests/faults/` is marked `faults`, and every test
that builds a fresh virtualenv (the `installed_python` and `editable_checkout` fixtures of `tests/test_install.py`) is
marked `install`. Before, neither was: the README said the default run left them out while it ran them all."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
VIRTUALENV_FIXTURES = {"installed_python", "editable_checkout"}


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The names of the ``pytest.mark.NAME`` decorators (called or not) in `decorators`."""
    names = set()
    for decorator in decorators:
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "pytest.mark":
            names.add(node.attr)
    return names


def module_marks(source: str) -> set[str]:
    """The marks of a module's ``pytestmark = pytest.mark.NAME`` (or a list of them)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            return _marks(list(values))
    return set()


def unmarked_virtualenv_tests(source: str) -> list[str]:
    """The test functions of `source` that take a virtualenv fixture without the `install` mark."""
    return [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and VIRTUALENV_FIXTURES & {arg.arg for arg in node.args.args}
        and "install" not in _marks(node.decorator_list)
    ]


def test_every_fault_module_is_marked_faults():
    modules = sorted((TESTS / "faults").glob("test_*.py"))
    assert modules, "the fault tests moved: update this test"
    assert [m.name for m in modules if "faults" not in module_marks(m.read_text())] == []


def test_every_test_that_builds_a_virtualenv_is_marked_install():
    source = (TESTS / "test_install.py").read_text()
    assert any(fixture in source for fixture in VIRTUALENV_FIXTURES), "the fixtures were renamed: update this test"
    assert unmarked_virtualenv_tests(source) == []


def test_the_scans_see_a_missing_mark():
    assert module_marks("import pytest\npytestmark = [pytest.mark.faults, pytest.mark.slow]\n") == {"faults", "slow"}
    assert module_marks("import pytest\n") == set()
    source = "@pytest.mark.e2e\ndef test_a(installed_python): ...\n"
    source += "@pytest.mark.install\ndef test_b(installed_python): ...\n"
    assert unmarked_virtualenv_tests(source) == ["test_a"]
