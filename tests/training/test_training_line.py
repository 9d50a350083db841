"""A trial's first training line says truthfully when the validation set is scored."""

from __future__ import annotations

import logging

from sweep.training.trainer import ProgressLines


class _State:
    max_steps = 20


class _Args:
    eval_steps = 40


def test_fewer_steps_than_eval_steps_says_validation_at_the_end_only(caplog):
    """Before, max_steps=20 with eval_steps=40 printed "training 20 steps, validation every 40": no step 40 comes,
    and the only validation is the trained model's, at the end."""
    with caplog.at_level(logging.INFO, logger="sweep.training.trainer"):
        ProgressLines(3).on_train_begin(_Args(), _State(), None)
    assert caplog.messages == [
        "trial 3: training 20 steps, validation at the end only (trial.eval_steps=40 is more than the steps)"
    ]


def test_the_line_of_a_trial_that_validates_during_training_is_unchanged():
    from sweep.training.trainer import training_line

    assert training_line(120, 40) == "training 120 steps, validation every 40"
    assert training_line(40, 40) == "training 40 steps, validation every 40"
