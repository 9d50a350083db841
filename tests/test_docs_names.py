"""Every test the README or a docs page names as proof (the fault matrix, the reliability notes) exists under that
name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?(?:\[[^\]]*\])?`")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def functions_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test")}


def test_every_test_the_docs_name_exists():
    named = {(page.name, *found) for page in PAGES for found in NAMED.findall(page.read_text())}
    assert sum(page == "long-sweeps.md" for page, _, _ in named) >= 15, "the fault matrix names its tests"
    missing = [
        f"{page}: {file}::{name}"
        for page, file, name in sorted(named)
        if not (REPO / file).is_file() or (name and name not in functions_in(REPO / file))
    ]
    assert not missing, missing
