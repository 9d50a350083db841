"""A study's progress for a person: the plan before any training, and after each trial "k of N" with an expected
finish, on the console and on the MLflow parent run (tag ``sweep.progress``) while the study runs.

The expected finish is the wall time per trial this process has measured so far (every trial it finished or
stopped, since this run started), times the trials left, divided by the workers sharing them: an estimate that
holds while the trials left cost what the finished ones did (a grid's larger scales or another learning rate may
not), and none is given before the first trial ends.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field

PROGRESS_TAG = "sweep.progress"  # the parent run's tag: "9 of 27 done; about 4 min left, finish ~05:52 UTC"


def plan_line(name: str, total: int, done: int, seeds: int, steps: int | None, root: str) -> str:
    """``study mnrl_scale: 27 trials (9 grid points x 3 seeds), 120 steps each; 4 done before this run; stored in
    sweep_runs/`` (``steps`` None: one pass over the training rows; ``total`` counts every seed)."""
    points = f" ({total // seeds} grid points x {seeds} seeds)" if seeds > 1 and total % seeds == 0 else ""
    each = f"{steps} steps each" if steps is not None else "one pass over the training rows each"
    already = f"; {done} done before this run" if done else ""
    return f"study {name}: {total} trials{points}, {each}{already}; stored in {root}"


def clock_time(seconds_from_now: float) -> str:
    """The wall-clock time ``seconds_from_now`` from now, as ``05:52 UTC`` in the machine's time zone (with the day
    when it is not today)."""
    now = datetime.datetime.now().astimezone()
    then = now + datetime.timedelta(seconds=seconds_from_now)
    day = "" if then.date() == now.date() else f"{then:%a} "
    return f"{day}{then:%H:%M %Z}"


def duration(seconds: float) -> str:
    """``40 s``, ``4 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class StudyProgress:
    """Counts the trials this process finished since ``started`` and turns the study's done count into a line."""

    total: int
    workers: int = 1
    started: float = field(default_factory=time.monotonic)
    finished_here: int = 0

    def line(self, done: int, finished: int = 1) -> str:
        """``9 of 27 done; about 4 min left, finish ~05:52 UTC`` after `finished` more trials of this process (of
        the study, for a process that follows the workers training it: then `workers` is 1, their rate is its)."""
        self.finished_here += finished
        done = min(done, self.total)
        left = self.total - done
        if left == 0:
            return f"{done} of {self.total} done"
        per_trial = (time.monotonic() - self.started) / self.finished_here
        seconds = per_trial * left / max(1, min(self.workers, left))
        return f"{done} of {self.total} done; about {duration(seconds)} left, finish ~{clock_time(seconds)}"
