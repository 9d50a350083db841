"""Study-level progress (sweep.study.progress): the plan line and "k of N" with an expected finish."""

from __future__ import annotations

import re

import pytest

from sweep.study import progress
from sweep.study.progress import StudyProgress, duration, plan_line


def test_the_plan_names_trials_seeds_steps_what_is_done_and_where_it_lives():
    assert plan_line("mnrl_scale", 27, 0, 3, 120, "sweep_runs") == (
        "study mnrl_scale: 27 trials (9 grid points x 3 seeds), 120 steps each; stored in sweep_runs"
    )
    assert plan_line("mine", 4, 1, 1, None, "/x") == (
        "study mine: 4 trials, one pass over the training rows each; 1 done before this run; stored in /x"
    )


@pytest.mark.parametrize(("workers", "left"), [(1, "80 s"), (2, "40 s"), (8, "10 s")])
def test_the_finish_is_the_time_per_trial_so_far_times_the_trials_left_over_the_workers(monkeypatch, workers, left):
    monkeypatch.setattr(progress.time, "monotonic", lambda: 20.0)
    timing = StudyProgress(total=10, workers=workers, started=0.0)
    timing.finished_here = 1  # a trial before this one; this one ends at 20 s: 10 s a trial
    text = timing.line(done=2)
    assert re.fullmatch(rf"2 of 10 done; about {left} left, finish ~(\w{{3}} )?\d\d:\d\d \S+", text), text


def test_the_last_trial_says_only_that_all_are_done_and_a_resumed_count_never_passes_the_total(monkeypatch):
    monkeypatch.setattr(progress.time, "monotonic", lambda: 5.0)
    assert StudyProgress(total=3, started=0.0).line(done=3) == "3 of 3 done"
    assert StudyProgress(total=3, started=0.0).line(done=7) == "3 of 3 done"


def test_durations_read_as_a_person_says_them():
    assert [duration(s) for s in (40, 240, 9000)] == ["40 s", "4 min", "2.5 h"]


def test_a_coordinator_counts_every_trial_its_workers_finished_since_it_started(monkeypatch):
    """`study.devices`: the process that follows the workers sees several trials done between two looks; the study's
    rate is theirs together (4 trials in 20 s: 5 s a trial, 6 left: 30 s)."""
    monkeypatch.setattr(progress.time, "monotonic", lambda: 20.0)
    text = StudyProgress(total=10, started=0.0).line(done=4, finished=4)
    assert text.startswith("4 of 10 done; about 30 s left"), text
