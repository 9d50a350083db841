"""trial.early_stopping_patience: training stops once STSB validation Spearman has not improved for N evaluations in a
row (transformers' EarlyStoppingCallback), and the trial records how many steps it trained (issue 23, study 6)."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from sweep.errors import ConfigError
from sweep.study.lifecycle import finish, open_sweep


def trial_history(cfg) -> tuple[list[tuple[int, float]], float]:
    """(step, validation Spearman) at every evaluation during training of the study's one trial (not the untrained
    model's score at step 0), and its `trained_steps`."""
    sweep = open_sweep(cfg)
    sweep.run()
    finish(sweep)
    client = MlflowClient(cfg.tracking.uri)
    (run,) = [r for r in client.search_runs([sweep.experiment_id]) if r.data.tags.get("sweep.role") == "trial"]
    history = client.get_metric_history(run.info.run_id, "stsb_validation_spearman")
    return sorted((m.step, m.value) for m in history if m.step > 0), run.data.metrics["trained_steps"]


def stop_step(history: list[tuple[int, float]], patience: int) -> int | None:
    """The evaluation step at which `patience` evaluations in a row brought no new best (the rule, written out)."""
    best, waited = None, 0
    for step, value in history:
        if best is None or value > best:
            best, waited = value, 0
        else:
            waited += 1
            if waited >= patience:
                return step
    return None


def test_a_model_that_cannot_improve_stops_after_patience_evaluations(compose_cfg):
    """Scale 0 has exactly zero gradient, so validation Spearman never changes: with patience 2 and an evaluation
    every 2 steps, the first evaluation sets the best and the next two bring none, so training ends at step 6 of 40."""
    cfg = compose_cfg(
        "loss.scale=0",
        "trial.max_steps=40",
        "trial.eval_steps=2",
        "trial.early_stopping_patience=2",
        "stats.enabled=false",
        "name=stops",
    )
    history, trained = trial_history(cfg)
    assert trained == 6
    assert [step for step, _ in history] == [2, 4, 6]


def test_a_learning_model_stops_where_the_rule_says_or_trains_to_the_cap(compose_cfg):
    cfg = compose_cfg(
        "loss.scale=20",
        "trial.max_steps=24",
        "trial.eval_steps=2",
        "trial.early_stopping_patience=1",
        "stats.enabled=false",
        "name=learns",
    )
    history, trained = trial_history(cfg)
    expected = stop_step(history, patience=1)
    assert trained == (expected if expected is not None else 24)


def test_without_patience_every_step_is_trained(compose_cfg):
    history, trained = trial_history(compose_cfg("loss.scale=0", "stats.enabled=false", "name=no_patience"))
    assert trained == 4 and [step for step, _ in history] == [2, 4]


def test_a_patience_below_one_is_refused_before_training(compose_cfg):
    with pytest.raises(ConfigError, match=r"trial\.early_stopping_patience.*or null to train all trial\.max_steps"):
        open_sweep(compose_cfg("trial.early_stopping_patience=0", "name=refused"))
