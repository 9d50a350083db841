"""The statistics' tests catch the mutations they are written against: `tools/mutations.py --fast` (every mutation
but the slow end-to-end one; about 2 minutes) breaks the verdict engine, the resampler or the interaction test one way
at a time and expects the named tests to fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.mutations
def test_every_fast_mutation_of_the_statistics_is_caught_by_its_tests() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "mutations.py"), "--fast"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "| NO" not in result.stdout and "caught? |" in result.stdout
