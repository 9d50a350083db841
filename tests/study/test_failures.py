"""Failures and interruptions inside a study, in-process with a stand-in for training: Ctrl-C is not a failed
attempt, a point is never queued twice, no run is left RUNNING or mislabelled, a recurring failure stops the study."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import SimpleNamespace

import optuna
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from omegaconf import OmegaConf
from optuna.trial import TrialState

import sweep.study.run_loop as study_module
from sweep.errors import ConfigError, DivergenceError, TrackingOutage
from sweep.names import ATTR_ATTEMPT, ATTR_VALIDATION_SPEARMAN, TAG_BEST_PARAMS, TAG_END_REASON
from sweep.signals import Interrupted, StopSignals
from sweep.study.grid_queue import unresolved_points
from sweep.study.lifecycle import finish, open_sweep
from sweep.study.summary import parent_summary
from sweep.tracking import mlflow_client, study_logger
from tests.faults.harness import wait_for
from tests.helpers import point_of, run_study, trial_runs

ONE_POINT = "+study.search_space.loss.scale=[20]"


def fake_training(monkeypatch: pytest.MonkeyPatch, outcome: Callable[[], float | BaseException]) -> None:
    """Replace training with `outcome()`: a validation Spearman to return or an exception to raise."""

    def train(trial, cfg, resources, run, quiet=False, clock=None, on_trained=None):
        result = outcome()
        if isinstance(result, BaseException):
            raise result
        trial.set_user_attr(ATTR_VALIDATION_SPEARMAN, result)
        return result

    monkeypatch.setattr(study_module, "train_and_evaluate", train)


def in_state(study: optuna.Study, state: TrialState) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if t.state == state]


def test_ctrl_c_twice_on_a_point_leaves_it_queued_and_the_next_run_trains_it(compose_cfg, monkeypatch):
    fake_training(monkeypatch, KeyboardInterrupt)
    for _ in range(2):  # study.max_retries=1: a second failed attempt would not be queued again
        sweep = open_sweep(compose_cfg(ONE_POINT, "name=ctrlc"))
        with pytest.raises(KeyboardInterrupt):
            sweep.run()
        finish(sweep, interrupted="SIGINT")
        (waiting,) = in_state(sweep.study, TrialState.WAITING)
        assert waiting.user_attrs[ATTR_ATTEMPT] == 1, "an interruption is not a failed attempt"
    assert all(t.user_attrs["fail_reason"].startswith("interrupted") for t in in_state(sweep.study, TrialState.FAIL))

    fake_training(monkeypatch, lambda: 0.5)
    sweep, table = run_study(compose_cfg(ONE_POINT, "name=ctrlc"))
    assert [point_of(t) for t in in_state(sweep.study, TrialState.COMPLETE)] == [{"loss.scale": 20}]
    _, (parent,), children = trial_runs(sweep.cfg)
    assert parent.info.status == "FINISHED"
    assert sorted(r.info.status for r in children) == ["FINISHED", "KILLED", "KILLED"]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (Interrupted(signal.SIGTERM), "interrupted (SIGTERM); the point is queued again"),
        (TrackingOutage("server down"), "TrackingOutage: server down"),
    ],
)
def test_a_trial_stopped_before_its_run_exists_records_why_and_its_point_is_trained_later(
    compose_cfg, monkeypatch, error, reason
):
    """A stop signal right after Optuna's ask (seen in CI: a worker signalled while it created its MLflow run) or
    a tracking server down at the run's creation fails the trial with its reason, and its point is queued again as
    the same attempt (before, the first left no reason and the second lost the point to an AttributeError)."""
    first_run = True

    def trial_run(*args, **kwargs):
        nonlocal first_run
        if first_run:
            first_run = False
            raise error
        return real_trial_run(*args, **kwargs)

    real_trial_run = study_logger.TrialRun
    monkeypatch.setattr(study_logger, "TrialRun", trial_run)
    fake_training(monkeypatch, lambda: 0.5)
    sweep = open_sweep(compose_cfg(ONE_POINT, "name=before_run"))
    if isinstance(error, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt):
            sweep.run()
        finish(sweep, interrupted="SIGTERM")
        sweep = open_sweep(compose_cfg(ONE_POINT, "name=before_run"))
    sweep.run()
    finish(sweep)
    (failed,) = in_state(sweep.study, TrialState.FAIL)
    assert failed.user_attrs["fail_reason"] == reason
    (done,) = in_state(sweep.study, TrialState.COMPLETE)
    assert point_of(done) == {"loss.scale": 20} and done.user_attrs[ATTR_ATTEMPT] == 1


def test_a_stop_signal_inside_optunas_ask_fails_the_claimed_trial_and_queues_its_point(compose_cfg, monkeypatch):
    """A SIGTERM that lands inside Optuna's ask, just after the queued trial became RUNNING, is raised by the
    objective: before, it left the trial RUNNING without a heartbeat (never failed by Optuna), its point lost."""
    sweep = open_sweep(compose_cfg(ONE_POINT, "name=in_ask"))
    storage, handler = sweep.study._storage, StopSignals()
    set_state = storage.set_trial_state_values

    def signalled_after_the_claim(trial_id, state, values=None):
        claimed = set_state(trial_id, state, values)
        if state == TrialState.RUNNING:
            handler._handle(signal.SIGTERM, None)  # as the signal arrives
        return claimed

    monkeypatch.setattr(storage, "set_trial_state_values", signalled_after_the_claim)
    fake_training(monkeypatch, lambda: 0.5)
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    finish(sweep, interrupted="SIGTERM")
    assert not in_state(sweep.study, TrialState.RUNNING)
    (failed,) = in_state(sweep.study, TrialState.FAIL)
    assert failed.user_attrs["fail_reason"] == "interrupted (SIGTERM); the point is queued again"
    (waiting,) = in_state(sweep.study, TrialState.WAITING)
    assert point_of(waiting) == {"loss.scale": 20} and waiting.user_attrs[ATTR_ATTEMPT] == 1


def test_a_trial_claimed_by_a_worker_that_died_before_its_heartbeat_is_trained_by_another(compose_cfg, monkeypatch):
    """A worker killed right after claiming a queued trial, before its first heartbeat, leaves the trial RUNNING
    without one, which Optuna never counts as stale: the next worker fails it after the grace period and trains
    the point (before, it waited for it until study.timeout, and without one forever)."""
    cfg = compose_cfg(ONE_POINT, "name=beatless", "study.heartbeat_interval=1", "study.timeout=60")
    fake_training(monkeypatch, lambda: 0.5)
    open_sweep(cfg).study.ask()  # the claim; its worker dies before the heartbeat thread starts
    survivor = open_sweep(cfg)
    survivor.run()
    (claimed,) = in_state(survivor.study, TrialState.FAIL)
    assert claimed.number == 0, "the claim was failed, then its point trained"
    (complete,) = in_state(survivor.study, TrialState.COMPLETE)
    assert point_of(complete) == {"loss.scale": 20} and complete.user_attrs[ATTR_ATTEMPT] == 2
    assert not in_state(survivor.study, TrialState.RUNNING)


def test_a_point_killed_between_its_requeue_and_its_fail_is_queued_once(compose_cfg, monkeypatch):
    cfg = compose_cfg(ONE_POINT, "name=window", "study.heartbeat_interval=1")
    fake_training(monkeypatch, lambda: RuntimeError("boom"))
    victim = open_sweep(cfg)
    requeue = victim.requeue

    def requeue_then_die(*args, **kwargs):
        requeue(*args, **kwargs)
        raise SystemExit("killed")  # Optuna never records the FAIL: the trial stays RUNNING without heartbeats

    monkeypatch.setattr(victim, "requeue", requeue_then_die)
    with pytest.raises(SystemExit):
        victim.run()
    storage, study_id = victim.study._storage, victim.study._study_id  # Optuna's stale check has no public form
    wait_for(lambda: storage._get_stale_trial_ids(study_id), "the grace period (3 heartbeat intervals)", every_s=0.1)
    fake_training(monkeypatch, lambda: 0.5)
    survivor = open_sweep(compose_cfg(ONE_POINT, "name=window", "study.heartbeat_interval=1"))
    assert len(in_state(survivor.study, TrialState.WAITING)) == 1, "the heartbeat path did not queue it again"
    survivor.run()
    assert len(in_state(survivor.study, TrialState.COMPLETE)) == 1, "the point trained once"
    _, _, children = trial_runs(cfg)
    assert sorted(r.info.status for r in children) == ["FINISHED", "KILLED"]


def test_a_failing_log_params_ends_the_trial_run_failed_with_its_reason(compose_cfg, monkeypatch):
    fake_training(monkeypatch, lambda: 0.5)

    def refuse(self, params):
        raise MlflowException("param value too long")

    monkeypatch.setattr(mlflow_client.TrialRun, "log_params", refuse)
    cfg = compose_cfg(ONE_POINT, "name=params", "study.max_retries=0")
    run_study(cfg)
    _, _, (child,) = trial_runs(cfg)
    assert child.info.status == "FAILED" and "param value too long" in child.data.tags[TAG_END_REASON]


def test_the_parent_logs_the_objective_under_its_own_name_and_the_best_follows_the_direction():
    study = optuna.create_study(direction="minimize")
    for value in (0.3, 0.1, 0.2):
        study.add_trial(
            optuna.trial.create_trial(
                value=value,
                params={"loss.scale": value * 100},
                distributions={"loss.scale": optuna.distributions.FloatDistribution(0, 100)},
            )
        )
    summary, best = parent_summary(study, "stsb_validation_spearman", "grid_mean")
    assert summary == {"best_objective": 0.1, "n_complete_trials": 3} and "10.0" in best[TAG_BEST_PARAMS]
    summary, _ = parent_summary(study, "stsb_validation_spearman", "full")
    assert summary["best_stsb_validation_spearman"] == summary["best_objective"] == 0.1


def test_the_printed_summary_picks_the_best_by_the_study_direction():
    from sweep.study_command import summary

    table = pd.DataFrame(
        {
            "trial": [0, 1],
            "scale": [10.0, 20.0],
            "objective": [0.7, 0.2],
            "stsb_val": [0.5, 0.6],
            "stsb_test": [0.5, 0.6],
            "state": ["COMPLETE", "COMPLETE"],
        }
    )
    cfg = OmegaConf.create(
        {
            "study": {"name": "x", "direction": "minimize", "storage": "sqlite:///x.db"},
            "paths": {"root": "/nonexistent"},
            "trial": {"save_model": "none"},
            "eval": {"objective": "grid_mean"},
            "stats": {"paired": {"level": 0.95}},
            "tracking": {"uri": "sqlite:///m.db", "experiment_name": "x", "registered_model_name": None},
        }
    )
    sweep = SimpleNamespace(
        cfg=cfg, study=SimpleNamespace(study_name="x"), parent_run_id="p", experiment_id="1", race=None
    )
    assert "best single trial by objective (grid_mean): trial 1 (scale 20.0)" in summary(sweep, table)


def test_a_failure_that_recurs_stops_a_study_without_a_grid(compose_cfg, monkeypatch):
    calls = []

    def fail_six_times() -> float | BaseException:  # then succeed, so that the old code ends too
        calls.append(1)
        return RuntimeError("optimizer not_an_optimizer is not supported") if len(calls) <= 6 else 0.5

    fake_training(monkeypatch, fail_six_times)
    space = "+study.search_space.loss.scale={type:float,low:1,high:50}"
    cfg = compose_cfg(space, "study.n_trials=3", "name=recur")
    sweep, table = run_study(cfg)
    assert sweep.stopped_reason and "not_an_optimizer" in sweep.stopped_reason
    assert len(calls) == 2 and list(table.state) == ["FAIL", "FAIL"]
    _, (parent,), _ = trial_runs(cfg)
    assert parent.info.status == "FAILED" and "not_an_optimizer" in parent.data.tags[TAG_END_REASON]


def test_a_config_error_inside_a_trial_stops_the_study_and_is_not_retried(compose_cfg, monkeypatch):
    fake_training(monkeypatch, lambda: ConfigError("data.train.columns", ["a"], "file.csv has no column 'a'"))
    sweep, _ = run_study(compose_cfg("+study.search_space.loss.scale=[0,20]", "name=cfgerr"))
    assert sweep.stopped_reason and "data.train.columns" in sweep.stopped_reason
    assert len(in_state(sweep.study, TrialState.FAIL)) == 1
    assert len(in_state(sweep.study, TrialState.WAITING)) == 1, "the other point, not the failed one again"


def test_a_point_that_failed_on_a_config_error_is_trained_by_the_rerun_after_the_fix(compose_cfg, monkeypatch):
    """A data error found only inside a trial stops the study; once the user fixes the file, the rerun trains that
    point (before, it stayed FAIL for good and the rerun exited 0 with no answer)."""
    fake_training(monkeypatch, lambda: ConfigError("data.train.columns", "anchor", "train.csv row 7 is empty"))
    first, _ = run_study(compose_cfg(ONE_POINT, "name=fixed"))
    assert first.stopped_reason and "row 7" in first.stopped_reason

    fake_training(monkeypatch, lambda: 0.5)  # the file was fixed
    second, table = run_study(compose_cfg(ONE_POINT, "name=fixed"))
    (complete,) = in_state(second.study, TrialState.COMPLETE)
    assert point_of(complete) == {"loss.scale": 20} and complete.user_attrs[ATTR_ATTEMPT] == 1
    assert list(table.state) == ["FAIL", "COMPLETE"] and not second.stopped_reason


def test_a_point_that_failed_every_attempt_is_trained_by_the_next_run(compose_cfg, monkeypatch):
    """Retries are bounded within a run; rerunning the command tries a point whose attempts ran out again (before,
    the rerun said 'nothing to train' while a grid point had no result)."""
    fake_training(monkeypatch, lambda: OSError(28, "No space left on device"))
    first, _ = run_study(compose_cfg(ONE_POINT, "name=exhausted"))  # study.max_retries=1: two attempts
    assert [t.user_attrs[ATTR_ATTEMPT] for t in in_state(first.study, TrialState.FAIL)] == [1, 2]
    assert not in_state(first.study, TrialState.WAITING)

    fake_training(monkeypatch, lambda: 0.5)  # the disk was freed
    second, table = run_study(compose_cfg(ONE_POINT, "name=exhausted"))
    (complete,) = in_state(second.study, TrialState.COMPLETE)
    assert point_of(complete) == {"loss.scale": 20} and complete.user_attrs[ATTR_ATTEMPT] == 1
    assert list(table.state) == ["FAIL", "FAIL", "COMPLETE"]
    third, _ = run_study(compose_cfg(ONE_POINT, "name=exhausted"))
    assert len(third.study.trials) == 3, "a done point is not queued again"


def test_a_diverged_point_is_not_queued_again_by_the_next_run(compose_cfg, monkeypatch):
    fake_training(monkeypatch, lambda: DivergenceError("training loss became NaN/inf at step 3"))
    run_study(compose_cfg(ONE_POINT, "name=diverged"))
    fake_training(monkeypatch, lambda: 0.5)
    sweep, _ = run_study(compose_cfg(ONE_POINT, "name=diverged"))
    (failed,) = sweep.study.trials
    assert failed.state == TrialState.FAIL and failed.user_attrs["fail_reason"].startswith("diverged")
    (unresolved,) = unresolved_points(sweep.study)  # named at the end of the run: the answer leaves it out
    assert unresolved == ({"loss.scale": 20}, failed.user_attrs["fail_reason"])


def test_a_point_queued_twice_trains_once(compose_cfg, monkeypatch):
    """Two processes that queue the same point at once (two reruns starting together) leave two copies: only the
    lowest-numbered one trains, the other is discarded without a run."""
    trained = []

    def count() -> float:
        trained.append(1)
        return 0.5

    fake_training(monkeypatch, count)
    cfg = compose_cfg(ONE_POINT, "name=twice")
    sweep = open_sweep(cfg)
    (queued,) = in_state(sweep.study, TrialState.WAITING)
    sweep.study.enqueue_trial(point_of(queued), user_attrs=dict(queued.user_attrs))
    sweep.run()
    table = finish(sweep)
    assert len(trained) == 1 and list(table.state) == ["COMPLETE"]
    (complete,) = in_state(sweep.study, TrialState.COMPLETE)
    assert complete.number == 0
    _, _, children = trial_runs(cfg)
    assert len(children) == 1


def test_a_stop_signal_just_after_the_trial_run_exists_ends_that_run_killed(compose_cfg, monkeypatch):
    """A signal while the trial records its device and run id, after its MLflow run was created and before training,
    ends that run KILLED as interrupted (seen in a loop of the interrupt test: the run was left RUNNING, and the
    study's clean-up ended it FAILED as if the trial had failed)."""
    records = study_module.trial_records

    def signalled(device):
        records(device)
        raise Interrupted(signal.SIGTERM)  # as the signal arrives while the trial records where it runs

    monkeypatch.setattr(study_module, "trial_records", signalled)
    fake_training(monkeypatch, lambda: 0.5)
    sweep = open_sweep(compose_cfg(ONE_POINT, "name=after_run"))
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    finish(sweep, interrupted="SIGTERM")
    _, _, (child,) = trial_runs(sweep.cfg)
    assert child.info.status == "KILLED" and child.data.tags[TAG_END_REASON].startswith("interrupted (SIGTERM)")
    (waiting,) = in_state(sweep.study, TrialState.WAITING)
    assert point_of(waiting) == {"loss.scale": 20} and waiting.user_attrs[ATTR_ATTEMPT] == 1
