"""Every test the README names as proof (the fault matrix, the reliability notes) exists under that name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?(?:\[[^\]]*\])?`")


def functions_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test")}


def test_every_test_the_readme_names_exists():
    named = NAMED.findall((REPO / "README.md").read_text())
    assert len(named) >= 15, "the fault matrix names its tests"
    missing = [
        f"{file}::{name}"
        for file, name in named
        if not (REPO / file).is_file() or (name and name not in functions_in(REPO / file))
    ]
    assert not missing, missing
