"""A trial's wall time in three parts: before the first training step, in the steps, after the last."""

from __future__ import annotations

import pytest

from sweep.training.step_clock import AFTER, BEFORE, OUTSIDE_SHARE, SPANS, STEPS, StepClock, span_metric


def test_parts_add_up_to_the_wall_time_and_the_share_is_outside_the_steps() -> None:
    clock = StepClock()
    clock.started, clock.first_step, clock.last_step = 100.0, 101.5, 109.5
    clock.spans["keeping"] = 0.25
    phases = clock.phases(10.0)
    spans = {span_metric(name): 0.25 if name == "keeping" else 0.0 for name in SPANS}
    assert phases == {BEFORE: 1.5, STEPS: 8.0, AFTER: 0.5, OUTSIDE_SHARE: pytest.approx(0.2), **spans}


def test_the_trainer_marks_the_first_step_once_and_the_last_at_each_step() -> None:
    clock = StepClock()
    for _ in range(3):
        clock.on_step_begin(None, None, None)
        first = clock.first_step
        clock.on_step_end(None, None, None)
    assert first is not None and clock.first_step == first and clock.last_step is not None
    assert clock.last_step > clock.first_step
    stepped = clock.last_step
    clock.on_evaluate(None, None, None)  # the validation at the last step counts with the steps
    assert clock.last_step > stepped


def test_a_trial_that_ended_before_any_step_spent_it_all_outside() -> None:
    phases = StepClock().phases(2.0)
    assert phases[BEFORE] == 2.0 and phases[STEPS] == phases[AFTER] == 0.0 and phases[OUTSIDE_SHARE] == 1.0


def test_a_span_adds_up_its_blocks_even_when_one_raises() -> None:
    clock = StepClock()
    with clock.span("keeping"):
        pass
    with pytest.raises(RuntimeError), clock.span("keeping"):
        raise RuntimeError("saving failed")
    assert clock.spans["keeping"] > 0 and clock.spans["preparing"] == 0.0
