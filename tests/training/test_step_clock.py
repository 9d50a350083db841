"""A trial's wall time in three parts: before the first training step, in the steps, after the last."""

from __future__ import annotations

import pytest

from sweep.training.step_clock import AFTER, BEFORE, OUTSIDE_SHARE, STEPS, StepClock


def test_parts_add_up_to_the_wall_time_and_the_share_is_outside_the_steps() -> None:
    clock = StepClock()
    clock.started, clock.first_step, clock.last_step = 100.0, 101.5, 109.5
    phases = clock.phases(10.0)
    assert phases == {BEFORE: 1.5, STEPS: 8.0, AFTER: 0.5, OUTSIDE_SHARE: pytest.approx(0.2)}


def test_the_trainer_marks_the_first_step_once_and_the_last_at_each_step() -> None:
    clock = StepClock()
    for _ in range(3):
        clock.on_step_begin(None, None, None)
        first = clock.first_step
        clock.on_step_end(None, None, None)
    assert first is not None and clock.first_step == first and clock.last_step is not None
    assert clock.last_step > clock.first_step


def test_a_trial_that_ended_before_any_step_spent_it_all_outside() -> None:
    phases = StepClock().phases(2.0)
    assert phases == {BEFORE: 2.0, STEPS: 0.0, AFTER: 0.0, OUTSIDE_SHARE: 1.0}
