"""What a trial trains on: statistics never change it (defect 1); the seed changes what a replicate should vary
(defect 5: initialisation where random and batch order, not the held-out draw or the data subset)."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from sweep.study.lifecycle import finish, open_sweep


def train_losses(cfg) -> list[float]:
    sweep = open_sweep(cfg)
    sweep.run()
    finish(sweep)
    client = MlflowClient(cfg.tracking.uri)
    (run,) = [
        r
        for r in client.search_runs([sweep.experiment_id])
        if r.data.tags.get("sweep.role") == "trial" and r.data.tags.get("mlflow.parentRunId") == sweep.parent_run_id
    ]
    return [m.value for m in sorted(client.get_metric_history(run.info.run_id, "train_loss"), key=lambda m: m.step)]


@pytest.mark.slow
def test_statistics_on_or_off_train_the_same_batches(compose_cfg):
    on = train_losses(compose_cfg("stats.enabled=true", "name=stats_on"))
    off = train_losses(compose_cfg("stats.enabled=false", "name=stats_off"))
    assert len(on) == 4 and on == off


@pytest.mark.slow
def test_two_seeds_train_on_different_batches(compose_cfg):
    first = train_losses(compose_cfg("trial.seed=0", "stats.enabled=false", "name=seed0"))
    second = train_losses(compose_cfg("trial.seed=1", "stats.enabled=false", "name=seed1"))
    assert first != second


def test_null_max_steps_trains_exactly_one_pass_over_the_rows(compose_cfg):
    """trial.max_steps=null: rows // batch_size steps, so a data-size axis repeats no row (issue 23's one pass).
    64 training rows at batch 8 are 8 full batches (the held-out pairs come from the file's other rows)."""
    losses = train_losses(
        compose_cfg("trial.max_steps=null", "trial.logging_steps=1", "stats.enabled=false", "name=one_pass")
    )
    assert len(losses) == 64 // 8
