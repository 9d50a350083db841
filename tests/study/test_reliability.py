"""Crash-safe resume, concurrent workers (SQLite and PostgreSQL), divergence, failure cap, determinism."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from sweep.names import ATTR_MLFLOW_RUN_ID, TAG_END_REASON, TAG_PARENT_RUN_ID
from sweep.study.lifecycle import finish, open_sweep
from tests.helpers import child_runs, completed_points, require_postgres_url, sweep_process, wait_for_training


def test_sigkill_mid_trial_then_rerun_finishes_every_point_once(tmp_path):
    args = [
        "study.search_space.loss.scale=[0,1,20]",
        "trial.max_steps=60",
        "trial.eval_steps=30",
        "study.heartbeat_interval=1",
    ]
    storage = f"sqlite:///{tmp_path}/optuna.db"
    victim = sweep_process(*args, home=tmp_path)
    wait_for_training(victim, storage)
    time.sleep(1.0)
    victim.send_signal(signal.SIGKILL)
    victim.wait()

    started = time.monotonic()
    resumed = sweep_process(*args, home=tmp_path)
    output, _ = resumed.communicate(timeout=600)
    resume_seconds = time.monotonic() - started
    assert resumed.returncode == 0, output[-3000:]
    print(f"resume after SIGKILL took {resume_seconds:.1f} s")

    assert completed_points(storage) == {0: 1, 1: 1, 20: 1}, "every grid point finished exactly once"
    study = optuna.load_study(study_name="mnrl_scale", storage=storage)
    states = Counter(t.state for t in study.trials)
    assert states[optuna.trial.TrialState.RUNNING] == 0 and states[optuna.trial.TrialState.FAIL] == 1
    runs = child_runs(f"sqlite:///{tmp_path}/mlflow.db")
    statuses = Counter(r.info.status for r in runs)
    assert statuses == {"FINISHED": 3, "KILLED": 1}
    killed = next(r for r in runs if r.info.status == "KILLED")
    assert "heartbeat" in killed.data.tags[TAG_END_REASON]


def two_workers_cover_the_grid_once(tmp_path: Path, storage: str) -> None:
    grid = "study.search_space.loss.scale=[0,1,2,5,10,20]"
    workers = [sweep_process(grid, f"study.storage={storage}", home=tmp_path) for _ in range(2)]
    outputs = [w.communicate(timeout=600)[0] for w in workers]
    assert all(w.returncode == 0 for w in workers), "\n".join(o[-2000:] for o in outputs)
    assert completed_points(storage) == {s: 1 for s in (0, 1, 2, 5, 10, 20)}
    runs = child_runs(f"sqlite:///{tmp_path}/mlflow.db")
    assert len(runs) == 6 and len({r.data.tags[TAG_PARENT_RUN_ID] for r in runs}) == 1
    trained_by = Counter(r.data.params["trial.torch_threads"] for r in runs)
    assert sum(trained_by.values()) == 6


def test_two_processes_on_sqlite_cover_a_grid_exactly_once(tmp_path):
    two_workers_cover_the_grid_once(tmp_path, f"sqlite:///{tmp_path}/optuna.db")


def test_two_processes_on_postgresql_cover_a_grid_exactly_once(tmp_path):
    server = require_postgres_url().rsplit("/", 1)[0]
    database = f"sweep_test_{os.getpid()}_{int(time.time())}"
    subprocess.run(["psql", f"{server}/postgres", "-c", f"CREATE DATABASE {database}"], check=True, capture_output=True)
    two_workers_cover_the_grid_once(tmp_path, f"{server}/{database}")


def test_n_workers_runs_trials_in_separate_processes(tmp_path):
    process = sweep_process("study.search_space.loss.scale=[0,1,20,50]", "study.n_workers=2", home=tmp_path)
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    assert completed_points(f"sqlite:///{tmp_path}/optuna.db") == {0: 1, 1: 1, 20: 1, 50: 1}
    assert {r.data.params["trial.torch_threads"] for r in child_runs(f"sqlite:///{tmp_path}/mlflow.db")} == {
        str(max(1, (os.cpu_count() or 1) // 2))
    }


def test_diverging_trial_fails_with_its_reason_and_the_study_goes_on(compose_cfg):
    cfg = compose_cfg("+study.search_space.loss.scale=[20,1e40]", "name=diverge", "stats.enabled=false")
    sweep = open_sweep(cfg)
    sweep.run()
    table = finish(sweep)
    by_scale = dict(zip(table.scale, table.state, strict=True))
    assert by_scale == {20.0: "COMPLETE", 1e40: "FAIL"}, "diverged once, not retried"
    failed = next(t for t in sweep.study.trials if t.state == optuna.trial.TrialState.FAIL)
    assert failed.user_attrs["fail_reason"].startswith("diverged: training loss became NaN/inf at step 1")
    client = MlflowClient(cfg.tracking.uri)
    run = client.get_run(failed.user_attrs[ATTR_MLFLOW_RUN_ID])
    assert run.info.status == "FAILED" and "diverged" in run.data.tags[TAG_END_REASON]


def test_failure_cap_stops_a_study_that_fails_everywhere(compose_cfg):
    cfg = compose_cfg(
        "+study.search_space.loss.scale=[1e40,2e40,3e40]", "name=cap", "study.max_failures=2", "stats.enabled=false"
    )
    sweep = open_sweep(cfg)
    sweep.run()
    assert sweep.stopped_reason and "study.max_failures=2" in sweep.stopped_reason
    assert len([t for t in sweep.study.trials if t.state == optuna.trial.TrialState.FAIL]) == 2
    assert finish(sweep).shape[0] == 2
    assert MlflowClient(cfg.tracking.uri).get_run(sweep.parent_run_id).info.status == "FAILED"


def test_same_config_and_seed_give_the_same_spearman(compose_cfg):
    values = []
    for name in ("det_a", "det_b"):
        sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[20]", f"name={name}", "stats.enabled=false"))
        sweep.run()
        values.append(sweep.study.best_value)
    assert math.isfinite(values[0]) and values[0] == pytest.approx(values[1], abs=1e-6)
