"""Trials and studies on a tiny model over the real offline data, checked through Optuna and MlflowClient."""

from __future__ import annotations

import math

import optuna
import pytest

from sweep.names import (
    SCALE_ZERO_MODE,
    TAG_END_REASON,
    TAG_OPTUNA_STATE,
    TAG_PARENT_RUN_ID,
    TAG_SCALE_ZERO,
    TAG_STUDY_NAME,
)
from sweep.study.lifecycle import open_sweep
from sweep.tracking.study_logger import SWEPT
from tests.helpers import run_study, trial_runs

GRID = "+study.search_space.loss.scale=[0,20]"


def test_grid_study_logs_parent_and_one_child_per_trial(compose_cfg):
    cfg = compose_cfg(GRID, "name=grid_test")
    sweep, table = run_study(cfg)

    assert sorted(table.scale) == [0.0, 20.0]
    assert (table.state == "COMPLETE").all()
    assert all(math.isfinite(v) for v in table.stsb_val) and all(math.isfinite(v) for v in table.stsb_test)
    assert table.objective.equals(table.stsb_val), "eval.objective=full: the objective is the STSB validation"

    client, parents, children = trial_runs(cfg)
    assert len(parents) == 1 and len(children) == 2
    parent = parents[0]
    assert parent.info.status == "FINISHED" and parent.info.run_id == sweep.parent_run_id
    # the parent does not show a base scale no trial trained with; trial runs are named by what varies first
    assert parent.data.params["loss.scale"] == parent.data.params["loss.temperature"] == SWEPT
    expected = {f"scale={t.params['loss.scale']} #{t.number:03d}" for t in sweep.study.trials}
    assert {c.info.run_name for c in children} == expected and {n.split()[0] for n in expected} == {
        "scale=0",
        "scale=20",
    }
    for child in children:
        tags, params, metrics = child.data.tags, child.data.params, child.data.metrics
        assert tags[TAG_PARENT_RUN_ID] == parent.info.run_id
        assert tags[TAG_STUDY_NAME] == "grid_test" and tags[TAG_OPTUNA_STATE] == "COMPLETE"
        assert child.info.status == "FINISHED"
        assert float(params["loss.scale"]) in (0.0, 20.0)
        assert params["loss.temperature"] in ("inf", "0.05")
        assert params["version.sentence-transformers"] and params["trial.seed"] == "0"
        for key in (
            "stsb_validation_spearman",
            "stsb_test_spearman",
            "trial_wall_time_s",
            "train_samples_per_second",
            "train_loss",
        ):
            assert math.isfinite(metrics[key]), key
        history = client.get_metric_history(child.info.run_id, "stsb_validation_spearman")
        assert sorted(m.step for m in history) == [0, 2, 4], "step 0 (untrained) and every eval_steps"
        assert len(client.get_metric_history(child.info.run_id, "train_loss")) == 4
        # similarity-concentration statistics before (_init) and after training
        for key in (
            "sim_rand_mean",
            "sim_rand_mean_init",
            "sim_pos_mean",
            "sim_neg_q95",
            "sim_alignment",
            "sim_uniformity",
            "sim_effective_rank",
            "sim_softmax_pos_prob",
            "sim_softmax_entropy_init",
            "sim_gap",
        ):
            assert math.isfinite(metrics[key]), key
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id, "concentration")}
        assert {"concentration/init.json", "concentration/step4.json"} <= artifacts


def test_scale_zero_trains_with_zero_gradient(compose_cfg):
    cfg = compose_cfg("+study.search_space.loss.scale=[0]", "name=zero")
    _, table = run_study(cfg)
    assert table.state.tolist() == ["COMPLETE"]
    _, _, (child,) = trial_runs(cfg)
    assert child.data.tags[TAG_SCALE_ZERO] == SCALE_ZERO_MODE
    assert child.data.metrics["max_weight_change"] == 0.0
    # ln(candidates): batch 8 anchors against 8 positives + 8 negatives
    assert child.data.metrics["train_loss"] == pytest.approx(math.log(16), abs=1e-5)
    # the statistics see the loss's 16 candidates too (they saw only the 8 positives before: defect 2)
    assert child.data.metrics["sim_softmax_entropy"] == pytest.approx(math.log(16), abs=1e-9)
    assert child.data.metrics["sim_loss_at_scale_0"] == pytest.approx(math.log(16), abs=1e-9)


@pytest.mark.slow
def test_rerun_continues_the_study_without_retraining(compose_cfg):
    cfg = compose_cfg(GRID, "name=resume")
    run_study(cfg)
    sweep, table = run_study(compose_cfg(GRID, "name=resume"))
    assert len(sweep.study.trials) == 2, "no new trial on rerun"
    _, parents, children = trial_runs(cfg)
    assert len(parents) == 1 and len(children) == 2

    wider = compose_cfg("+study.search_space.loss.scale=[0,20,50]", "name=resume")
    with pytest.raises(ValueError, match="study.search_space"):
        open_sweep(wider)


def fail_first_trial(monkeypatch):
    import sweep.study.run_loop as study_module

    real = study_module.train_and_evaluate
    calls = {"n": 0}

    def fail_once(trial, cfg, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        return real(trial, cfg, *args, **kwargs)

    monkeypatch.setattr(study_module, "train_and_evaluate", fail_once)


def test_a_failed_grid_point_is_queued_again_once(compose_cfg, monkeypatch):
    fail_first_trial(monkeypatch)
    cfg = compose_cfg(GRID, "name=retry")
    sweep, table = run_study(cfg)
    assert sorted(table.state) == ["COMPLETE", "COMPLETE", "FAIL"]
    complete = [t for t in sweep.study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert sorted(t.params["loss.scale"] for t in complete) == [0, 20], "every grid point done exactly once"
    _, _, children = trial_runs(cfg)
    failed = [c for c in children if c.data.tags[TAG_OPTUNA_STATE] == "FAIL"]
    assert failed[0].info.status == "FAILED" and "boom" in failed[0].data.tags[TAG_END_REASON]

    sweep, _ = run_study(compose_cfg(GRID, "name=retry"))
    assert len(sweep.study.trials) == 3, "a rerun trains nothing"


def test_without_retries_a_failed_point_stays_failed(compose_cfg, monkeypatch):
    fail_first_trial(monkeypatch)
    sweep, table = run_study(compose_cfg(GRID, "name=noretry", "study.max_retries=0"))
    assert sorted(table.state) == ["COMPLETE", "FAIL"]


def test_temperature_search_space_logs_both(compose_cfg):
    cfg = compose_cfg("+study.search_space.loss.temperature=[0.05,0.1]", "name=temps", "stats.enabled=false")
    _, table = run_study(cfg)
    assert sorted(table.scale) == pytest.approx([10.0, 20.0])
    _, _, children = trial_runs(cfg)
    assert sorted(float(c.data.params["loss.temperature"]) for c in children) == [0.05, 0.1]


@pytest.mark.slow
def test_random_sampler_runs_n_trials_over_a_distribution(compose_cfg):
    cfg = compose_cfg(
        "+study.search_space.loss.scale={type:float,low:1,high:50,log:true}",
        "study.n_trials=2",
        "study.sampler.name=random",
        "name=dist",
        "stats.enabled=false",
    )
    sweep, table = run_study(cfg)
    assert len(table) == 2 and all(1 <= s <= 50 for s in table.scale)
    assert isinstance(sweep.study.sampler, optuna.samplers.RandomSampler)


def test_parent_run_writes_retry_a_concurrent_insert_collision():
    """Two workers finishing at once both write the parent run's summary; MLflow's SQL store can then raise an
    IntegrityError on the tag's unique key, which a retry (now an update) resolves. Other errors are raised."""
    from mlflow.exceptions import MlflowException

    from sweep.tracking.mlflow_client import write_shared

    calls = []

    def collides_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: tags.key, tags.run_uuid")

    write_shared(collides_once)
    assert len(calls) == 2
    with pytest.raises(MlflowException, match="no such run"):
        write_shared(lambda: (_ for _ in ()).throw(MlflowException("no such run")))
