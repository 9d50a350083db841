"""The README's table of test times is drawn from a recorded run (`tools/test_times.py`), never typed: the recorder sums
each module's tests by kind, and the README's block is the one the record draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.test_times import (
    DEFAULT,
    KINDS,
    README,
    ROOT,
    TIMES,
    Recorder,
    kind_of,
    read_rows,
    redraw,
    render,
    write_rows,
)

pytest_plugins = ["pytester"]


def test_the_recorder_sums_each_module_by_the_kind_its_marker_gives(pytester: pytest.Pytester, tmp_path: Path):
    pytester.makeini("[pytest]\nmarkers =\n    slow: a slow one\n    faults: a fault\n")
    pytester.makepyfile(
        test_mixed="""
        import time
        import pytest

        def test_plain():
            pass

        @pytest.mark.slow
        def test_slow():
            time.sleep(0.2)

        @pytest.mark.slow
        @pytest.mark.faults
        def test_slow_fault():
            pass
        """
    )
    record = tmp_path / "times.csv"
    pytester.runpytest_inprocess(plugins=[Recorder(record)]).assert_outcomes(passed=3)
    rows, measured = read_rows(record)
    assert measured is None
    by_kind = {kind: (tests, seconds) for module, kind, tests, seconds in rows if module == "test_mixed.py"}
    assert set(by_kind) == {DEFAULT, "slow"}  # `slow` comes first in KINDS, so the slow fault is counted as slow
    assert by_kind[DEFAULT][0] == 1 and by_kind["slow"][0] == 2
    assert by_kind["slow"][1] >= 0.2  # the sleep's time is in its kind's sum


def test_the_block_adds_up_each_kind_and_the_whole_run(tmp_path: Path):
    record = tmp_path / "times.csv"
    rows = [("tests/a.py", DEFAULT, 3, 60.0), ("tests/b.py", DEFAULT, 1, 30.0), ("tests/c.py", "faults", 2, 600.0)]
    assert kind_of("research/tests/test_x.py::test_y", {"research"}) == "research/tests", "a folder run when named"
    assert kind_of("tests/test_x.py::test_y", {"research", "slow"}) == "slow", "the first of KINDS"
    write_rows(record, rows, "here, today")
    block = render(*read_rows(record))
    assert "| `python -m pytest` (the default run) | every test of `tests/` without a marker below | 4 | 1.5 |" in block
    assert "| `python -m pytest -m faults` | `faults` | 2 | 10.0 |" in block
    assert "| all of the above | | 6 | 11.5 |" in block
    assert "in one recorded run: here, today." in block
    assert "`tests/a.py` (60 s), `tests/b.py` (30 s)" in block


def test_the_readme_block_is_the_one_the_committed_record_draws():
    readme = README.read_text()
    assert redraw(readme, render(*read_rows(TIMES))) == readme, "run tools/test_times.py on a new record"


def test_the_kinds_are_the_markers_the_default_run_leaves_out():
    pyproject = (ROOT / "pyproject.toml").read_text()  # as text: tomllib needs Python 3.11
    left_out = re.search(r"^addopts = .*-m 'not \((.*)\)'", pyproject, re.MULTILINE)
    assert left_out is not None, "pyproject.toml's addopts leaves out no marker"
    assert left_out.group(1).split(" or ") == list(KINDS)
