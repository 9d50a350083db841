"""Where a trial's wall time goes: before its first training step, in its training steps, after its last one.

A trial's steps are the work the user asked for; everything else is what the framework spends around them: before
the first step (its MLflow run, parameters and datasets, the model copy, the untrained model's scores and
statistics, the trainer) and after the last (the final validation, test and statistics, predictions, the kept model,
the run's end). The validations at the trial's evaluation steps count as steps, the one at the last step included:
the user chose their frequency (``trial.eval_steps``).

Each trial logs its three parts and, within them, the spans the trial names (`SPANS`: preparing, the final scoring,
keeping the model), as MLflow metrics ``time_*`` and the Optuna user attribute ``time_phases``, so that a user sees
what share of a study went around the training, on their hardware; the benchmark's item 11 reads them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from transformers import TrainerCallback

BEFORE = "time_before_steps_s"
STEPS = "time_steps_s"
AFTER = "time_after_steps_s"
OUTSIDE_SHARE = "time_outside_steps_share"
# Spans within the parts: the data, model copy and untrained scores before the steps (preparing); the final
# validation, test, statistics and predictions (final_scoring) and saving the model (keeping) after them.
SPANS = ("preparing", "final_scoring", "keeping")


def span_metric(name: str) -> str:
    """The metric of span `name`: ``time_<name>_s``."""
    return f"time_{name}_s"


class StepClock(TrainerCallback):
    """Started with the trial; the trainer marks its first step's start and the end of its last step (or of the
    validation that follows it)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first_step: float | None = None
        self.last_step: float | None = None
        self.spans = dict.fromkeys(SPANS, 0.0)

    @contextmanager
    def span(self, name: str) -> Iterator[None]:
        """Add the seconds of the `with` block to span `name` (one of `SPANS`)."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.spans[name] += time.perf_counter() - began

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.first_step is None:
            self.first_step = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last_step = time.perf_counter()

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last_step = time.perf_counter()  # a validation at an evaluation step, the last one's too

    def elapsed(self) -> float:
        """Seconds since the trial started."""
        return time.perf_counter() - self.started

    def phases(self, wall: float) -> dict[str, float]:
        """The trial's `wall` seconds in three parts, the share of `wall` outside the training steps (1 when the
        trial ended before its first step ended) and the spans."""
        if self.first_step is None or self.last_step is None:
            before, steps = wall, 0.0
        else:
            before, steps = self.first_step - self.started, self.last_step - self.first_step
        after = max(0.0, wall - before - steps)
        share = (before + after) / wall if wall > 0 else 1.0
        spans = {span_metric(name): seconds for name, seconds in self.spans.items()}
        return {BEFORE: before, STEPS: steps, AFTER: after, OUTSIDE_SHARE: share, **spans}
