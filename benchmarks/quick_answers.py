"""Item 12: the commands that train nothing answer fast, against the cost of starting Python with the package.

Three commands a user meets in the first hour, each run `Settings.answer_repeats` times as a fresh process:
`python -m sweep --help`, a refused config (`study.timeout=-5`: one line, exit 2) and the rerun of a finished study
(a tiny grid trained once here first; the rerun says there is nothing to train). The baseline is
``python -c "import sweep"``, run as often, alternating with them so that a load change on the machine falls on
both. The goal (issue 53) is an absolute one, at most `GOAL_S` seconds each, so the verdict reads each command's
median seconds on this machine; the ratio to the baseline is what stays comparable across machines.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.runners import run_framework, run_timed
from benchmarks.settings import Settings
from benchmarks.table import Row, Stat

GOAL_S = 5.0
BASELINE = [sys.executable, "-c", "import sweep"]


def _timed(command: list[str], data_dir: str, timeout_s: int, expected_code: int) -> float:
    """The wall time of `command`, which must end with `expected_code` (a refusal's 2 is its success here)."""
    return run_timed("answer", command, data_dir, timeout_s, expected_code=expected_code)[1]


def answer_row(label: str, ours: Sequence[float], baseline: Sequence[float]) -> Row:
    """One command's row: its seconds against the baseline's, the verdict from its median against `GOAL_S`."""
    row = Row.compare("12", label, ours, baseline, "s", goal="", note=f"goal: <= {GOAL_S:g} s (median, this machine)")
    return replace(row, status="met" if Stat.of(ours).median <= GOAL_S else "not met")


def measure_quick_answers(s: Settings, data_dir: str, work: Path, log: Callable[[str], None]) -> list[Row]:
    """Item 12's rows (see the module docstring)."""
    root = work / "quick_answers"
    finished = run_framework(root, s.answer_overrides, data_dir, s.timeout_s)
    log(f"  the study to rerun: {len(finished.trials)} trials, {finished.wall_s:.0f} s")
    commands = {
        "`python -m sweep --help`": ([sys.executable, "-m", "sweep", "--help"], 0),
        "a refused config (`study.timeout=-5`)": ([*finished.command, "study.timeout=-5"], 2),
        "a rerun of a finished study (nothing to train)": (finished.command, 0),
    }
    ours: dict[str, list[float]] = {label: [] for label in commands}
    baseline: list[float] = []
    for _ in range(s.answer_repeats):
        baseline.append(_timed(BASELINE, data_dir, s.timeout_s, 0))
        for label, (command, code) in commands.items():
            ours[label].append(_timed(command, data_dir, s.timeout_s, code))
    for label, seconds in ours.items():
        log(f"  {label}: {Stat.of(seconds).fmt('s')} (import sweep: {Stat.of(baseline).fmt('s')})")
    return [answer_row(label, seconds, baseline) for label, seconds in ours.items()]
