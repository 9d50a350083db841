"""Crash-safe resume, concurrent workers (SQLite and PostgreSQL), divergence, failure cap, determinism."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from sweep.names import ATTR_MLFLOW_RUN_ID, TAG_END_REASON, TAG_PARENT_RUN_ID
from sweep.study.lifecycle import finish, open_sweep
from tests.faults.harness import wait_for
from tests.helpers import (
    child_pids,
    child_runs,
    completed_points,
    is_alive,
    load_trials,
    pause_between_database_calls,
    require_postgres_url,
    sweep_process,
    train_in_two_processes,
    wait_for_training,
    worker_pid,
)


def heartbeats(database: Path, trial_number: int) -> int:
    """How many heartbeats Optuna holds for trial `trial_number` (0 or 1: it keeps the latest)."""
    with closing(sqlite3.connect(database, timeout=60)) as connection:
        query = "SELECT COUNT(*) FROM trial_heartbeats JOIN trials USING (trial_id) WHERE trials.number = ?"
        return connection.execute(query, (trial_number,)).fetchone()[0]


def kill_mid_trial(victim: subprocess.Popen, home: Path, attempts: int = 20, members: int = 1) -> None:
    """SIGKILL `victim` (state under `home`) in the middle of a trial (of a pack of `members`): exactly that many
    trials RUNNING, each with its MLflow run RUNNING and a heartbeat recorded. The victim is paused (between database
    calls) before the state is read for the last time, so the kill lands in the state that was read, never a step
    later between two trials."""
    storage, client = f"sqlite:///{home}/optuna.db", MlflowClient(f"sqlite:///{home}/mlflow.db")
    databases = [home / "optuna.db", home / "mlflow.db"]

    def mid_trial() -> bool:
        running = [t for t in load_trials(storage) if t.state.name == "RUNNING"]
        if len(running) != members or any(ATTR_MLFLOW_RUN_ID not in t.user_attrs for t in running):
            return False
        runs = [client.get_run(t.user_attrs[ATTR_MLFLOW_RUN_ID]) for t in running]
        return all(r.info.status == "RUNNING" for r in runs) and all(
            heartbeats(databases[0], t.number) == 1 for t in running
        )

    for _ in range(attempts):
        wait_for(mid_trial, "a trial with its run and a heartbeat")
        pause_between_database_calls(victim.pid, databases)
        if mid_trial():
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            return
        os.kill(victim.pid, signal.SIGCONT)  # the trial ended before the pause: wait for the next one
    raise AssertionError(f"the victim was never paused mid-trial in {attempts} tries")


@pytest.mark.slow
def test_sigkill_mid_trial_then_rerun_finishes_every_point_once(tmp_path):
    args = [
        "study.search_space.loss.scale=[0,1,20]",
        "trial.max_steps=20",  # long enough to be caught training; the pause, not the length, times the kill
        "trial.eval_steps=10",
        "study.heartbeat_interval=1",
    ]
    storage = f"sqlite:///{tmp_path}/optuna.db"
    victim = sweep_process(*args, home=tmp_path)
    kill_mid_trial(victim, tmp_path)

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


# heartbeat 60 s: a worker paused by train_in_two_processes keeps its trial for the 180 s grace, longer than the pause
# may last (a worker with no point left to claim also waits one heartbeat between looks: longer would slow the end)
PAUSABLE, PAUSE_S = "study.heartbeat_interval=60", 170


def two_workers_cover_the_grid_once(tmp_path: Path, storage: str) -> None:
    grid = "study.search_space.loss.scale=[0,1,2,5,10,20]"
    workers = [sweep_process(grid, f"study.storage={storage}", PAUSABLE, home=tmp_path) for _ in range(2)]
    tracking = f"sqlite:///{tmp_path}/mlflow.db"
    databases = [tmp_path / "mlflow.db", *([tmp_path / "optuna.db"] if storage.startswith("sqlite") else [])]
    try:
        with ThreadPoolExecutor(len(workers)) as pool:  # their output is read meanwhile: a full pipe would block them
            ends = [pool.submit(w.communicate, timeout=600) for w in workers]
            train_in_two_processes(storage, tracking, databases, PAUSE_S)
            outputs = [end.result()[0] for end in ends]
    finally:
        for worker in workers:
            worker.kill()
    assert all(w.returncode == 0 for w in workers), "\n".join(o[-2000:] for o in outputs)
    assert completed_points(storage) == {s: 1 for s in (0, 1, 2, 5, 10, 20)}
    runs = child_runs(tracking)
    assert len(runs) == 6 and len({r.data.tags[TAG_PARENT_RUN_ID] for r in runs}) == 1
    trained_by = Counter(worker_pid(r) for r in runs)
    assert set(trained_by) == {w.pid for w in workers}, f"each worker process trained: {trained_by}"


@pytest.mark.slow
def test_two_processes_on_sqlite_cover_a_grid_exactly_once(tmp_path):
    two_workers_cover_the_grid_once(tmp_path, f"sqlite:///{tmp_path}/optuna.db")


def test_two_processes_on_postgresql_cover_a_grid_exactly_once(tmp_path):
    server = require_postgres_url().rsplit("/", 1)[0]
    database = f"sweep_test_{os.getpid()}_{int(time.time())}"
    subprocess.run(["psql", f"{server}/postgres", "-c", f"CREATE DATABASE {database}"], check=True, capture_output=True)
    two_workers_cover_the_grid_once(tmp_path, f"{server}/{database}")


@pytest.mark.slow
def test_n_workers_runs_trials_in_separate_processes(tmp_path):
    process = sweep_process("study.search_space.loss.scale=[0,1,20,50]", "study.n_workers=2", PAUSABLE, home=tmp_path)
    storage, tracking = f"sqlite:///{tmp_path}/optuna.db", f"sqlite:///{tmp_path}/mlflow.db"
    workers: list[int] = []
    try:
        wait_for_training(process, storage)  # the extra worker is started before any trial
        workers = [p for p in child_pids(process.pid) if "sweep" in Path(f"/proc/{p}/cmdline").read_text()]
        with ThreadPoolExecutor(1) as pool:  # its output is read meanwhile: a full pipe would block the workers
            end = pool.submit(process.communicate, timeout=600)
            train_in_two_processes(storage, tracking, [tmp_path / "optuna.db", tmp_path / "mlflow.db"], PAUSE_S)
            output = end.result()[0]
    finally:
        for pid in [process.pid, *workers]:
            if is_alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == 0, output[-3000:]
    assert len(workers) == 1, "study.n_workers=2: the command and one worker process it started"
    assert completed_points(storage) == {0: 1, 1: 1, 20: 1, 50: 1}
    runs = child_runs(tracking)
    assert {worker_pid(r) for r in runs} == {process.pid, *workers}, "each of the two processes trained"
    assert {r.data.params["trial.torch_threads"] for r in runs} == {str(max(1, (os.cpu_count() or 1) // 2))}


@pytest.mark.usefixtures("diverging_scales")
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


@pytest.mark.slow
@pytest.mark.usefixtures("diverging_scales")
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


@pytest.mark.slow
def test_same_config_and_seed_give_the_same_spearman(compose_cfg):
    values = []
    for name in ("det_a", "det_b"):
        sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[20]", f"name={name}", "stats.enabled=false"))
        sweep.run()
        values.append(sweep.study.best_value)
    assert math.isfinite(values[0]) and values[0] == pytest.approx(values[1], abs=1e-6)


@pytest.mark.slow
def test_sigkill_mid_fused_pack_then_rerun_finishes_every_point_once(tmp_path):
    args = [
        "model=static_minilm",
        "model.static_init=random",
        "model.embedding_dim=16",
        "trial.learning_rate=0.05",
        "study.search_space.loss.scale=[1,5,20]",
        "study.pack=3",
        "trial.max_steps=8",  # one pass of the tiny data (64 rows in batches of 8): the pack fuses
        "study.heartbeat_interval=1",
    ]
    storage = f"sqlite:///{tmp_path}/optuna.db"
    victim = sweep_process(*args, home=tmp_path)
    kill_mid_trial(victim, tmp_path, members=3)
    resumed = sweep_process(*args, home=tmp_path)
    output, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, output[-3000:]
    assert "train as one fused pack of 3" in output
    assert completed_points(storage) == {1: 1, 5: 1, 20: 1}, "every grid point finished exactly once"
    states = Counter(t.state for t in optuna.load_study(study_name="mnrl_scale", storage=storage).trials)
    assert states[optuna.trial.TrialState.RUNNING] == 0 and states[optuna.trial.TrialState.FAIL] == 3
    statuses = Counter(r.info.status for r in child_runs(f"sqlite:///{tmp_path}/mlflow.db"))
    assert statuses == {"FINISHED": 3, "KILLED": 3}
