"""Helpers that several test files share: a clean environment for subprocesses, `python -m sweep` as a process,
running a study in-process, and reading a study back from Optuna and MLflow."""

from __future__ import annotations

import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, NoReturn

import optuna
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from sweep.names import ATTR_MLFLOW_RUN_ID, ROLE_STUDY, ROLE_TRIAL, TAG_ROLE, TAG_WORKER

REPO = Path(__file__).resolve().parents[1]
# Environment variables of the user's shell that would send a test's runs or state somewhere real.
USER_STATE_VARIABLES = ("MLFLOW_TRACKING_URI", "SWEEP_HOME", "SWEEP_TRACKING_URI", "SWEEP_EXPERIMENT")


def clear_user_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset `USER_STATE_VARIABLES` for the life of ``monkeypatch``: in-process studies then log under their own
    config, never into the user's MLflow server or state folder."""
    for variable in USER_STATE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def cannot_set_up(reason: str) -> NoReturn:
    """A test whose fault or server cannot be set up here: skipped on a developer's machine, failed with `reason`
    under CI (``CI=true``), where a skip would let the fault go untested while CI stays green."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test, but {reason}")
    pytest.skip(reason)


def require_postgres_driver() -> None:
    """The PostgreSQL tests need psycopg (the `postgres` extra, pulled by `dev`): CI fails without it, a checkout
    installed without it skips them."""
    if importlib.util.find_spec("psycopg") is None:
        cannot_set_up("psycopg is not installed: pip install -e '.[dev,postgres]'")


def require_postgres_url() -> str:
    """SWEEP_TEST_POSTGRES_URL, the PostgreSQL server of the multi-worker and restart tests (.ci/run starts one)."""
    url = os.environ.get("SWEEP_TEST_POSTGRES_URL")
    if not url:
        cannot_set_up("SWEEP_TEST_POSTGRES_URL is not set (CI starts PostgreSQL; locally: bash .ci/postgres)")
    require_postgres_driver()
    return url


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without the user's tracking URI and state folder, plus `extra`: for every subprocess test."""
    return {**{k: v for k, v in os.environ.items() if k not in USER_STATE_VARIABLES}, **extra}


def run_sweep(*args: str, home: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """`python -m sweep ARGS` from the repository with state under `home`, to the end: its exit code and output."""
    command = [sys.executable, "-m", "sweep", *args]
    env = clean_env(SWEEP_HOME=str(home))
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def run_sweep_from(
    folder: Path, *args: str, env: dict[str, str], timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    """`python -m sweep ARGS` run from ``folder`` (a user's own project, or the repository) with ``env``, to the end."""
    command = [sys.executable, "-m", "sweep", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def sweep_process(*args: str, home: Path, experiment: str = "mnrl_scale", **env: str) -> subprocess.Popen[str]:
    """`python -m sweep +experiment=EXPERIMENT TINY... ARGS` with its state under `home` (stdout+stderr piped)."""
    from tests.conftest import TINY

    return subprocess.Popen(
        # one seed: the tests count grid points, not replicates (mnrl_scale itself runs 3 seeds)
        [
            sys.executable,
            "-m",
            "sweep",
            f"+experiment={experiment}",
            *TINY,
            "stats.enabled=false",
            "study.seeds=[0]",
            *args,
        ],
        cwd=REPO,
        env=clean_env(SWEEP_HOME=str(home), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_study(cfg: DictConfig) -> tuple[Any, pd.DataFrame]:
    """Open, run and finish a study in this process: (its `sweep.study.run_loop.StudyRunner`, its results table)."""
    from sweep.study.lifecycle import finish, open_sweep  # torch and the trainer: only for tests that train

    sweep = open_sweep(cfg)
    sweep.run()
    return sweep, finish(sweep)


def mlflow_runs(tracking_uri: str, experiment_name: str) -> tuple[MlflowClient, list, list]:
    """The client, the parent (study) runs and the child (trial) runs of an experiment."""
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(experiment_name)
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    parents = [r for r in runs if r.data.tags.get(TAG_ROLE) == ROLE_STUDY]
    children = [r for r in runs if r.data.tags.get(TAG_ROLE) == ROLE_TRIAL]
    return client, parents, children


def trial_runs(cfg: DictConfig) -> tuple[MlflowClient, list, list]:
    """`mlflow_runs` of a composed config."""
    return mlflow_runs(cfg.tracking.uri, cfg.tracking.experiment_name)


def child_runs(tracking_uri: str, name: str = "mnrl_scale") -> list:
    return mlflow_runs(tracking_uri, name)[2]


def load_trials(storage: str, name: str = "mnrl_scale") -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=name, storage=storage).trials


def completed_points(storage: str, name: str = "mnrl_scale") -> Counter:
    """How many times each `loss.scale` grid point completed."""
    return Counter(t.params["loss.scale"] for t in load_trials(storage, name) if t.state.name == "COMPLETE")


def point_of(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A trial's grid point: its params, or the fixed params of a queued (WAITING) trial."""
    return trial.params or trial.system_attrs.get("fixed_params", {})


def wait_for_training(process: subprocess.Popen, storage: str, name: str = "mnrl_scale", timeout: float = 300) -> None:
    """Wait until a trial of `name` is RUNNING with its MLflow run (raises if the process ends or time runs out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the process ended before training: {process.communicate()[0][-3000:]}")
        time.sleep(0.5)
        try:
            trials = load_trials(storage, name)
        except Exception:  # noqa: BLE001 - the study does not exist yet
            continue
        if any(t.state.name == "RUNNING" and ATTR_MLFLOW_RUN_ID in t.user_attrs for t in trials):
            return
    process.kill()
    raise AssertionError("no trial started")


def worker_pid(run: Any) -> int:
    """The process that trained an MLflow trial run (its `TAG_WORKER` tag, hostname:pid)."""
    return int(run.data.tags[TAG_WORKER].rsplit(":", 1)[1])


def training_pids(storage: str, tracking_uri: str, name: str = "mnrl_scale") -> set[int]:
    """The processes training a trial of `name` now: the worker of each RUNNING trial that has its MLflow run."""
    client = MlflowClient(tracking_uri)
    running = [t.user_attrs.get(ATTR_MLFLOW_RUN_ID) for t in load_trials(storage, name) if t.state.name == "RUNNING"]
    return {worker_pid(client.get_run(run_id)) for run_id in running if run_id}


def train_in_two_processes(
    storage: str, tracking_uri: str, databases: list[Path], pause_s: float, name: str = "mnrl_scale"
) -> int:
    """Make two worker processes of study `name` each train: pause the first one that trains (SIGSTOP, between
    calls to the SQLite `databases`) until another process trains too, then let it go on; the paused one's pid.
    However fast one worker would have covered the grid alone, both then train at least one trial. The pause lasts
    at most `pause_s` (then the test fails), which must be shorter than the workers' heartbeat grace (3 x
    study.heartbeat_interval), or the paused trial would be failed and trained again."""
    from tests.faults.harness import wait_for

    first = min(wait_for(lambda: training_pids(storage, tracking_uri, name), "a trial to train"))
    pause_between_database_calls(first, databases)
    try:
        wait_for(lambda: training_pids(storage, tracking_uri, name) - {first}, "a second process to train", pause_s)
    finally:
        os.kill(first, signal.SIGCONT)
    return first


def child_pids(pid: int) -> list[int]:
    """The direct children of process `pid` (Linux /proc)."""
    pids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        pids += [int(p) for p in task.read_text().split()]
    return pids


def pause_between_database_calls(pid: int, databases: list[Path], attempts: int = 200) -> None:
    """SIGSTOP process `pid` at a moment it holds no lock on any of the SQLite `databases`. Paused in the middle of
    a call, it would lock every other process out of that database for as long as it stays paused (SQLite locks the
    whole file), which the stores wait for only up to their outage limit. Once every thread has stopped, each
    database must take an exclusive lock at once; if one does not, the process is let go briefly and paused again."""
    for _ in range(attempts):
        os.kill(pid, signal.SIGSTOP)
        while not all(_stopped(stat) for stat in Path(f"/proc/{pid}/task").glob("*/stat")):
            time.sleep(0.01)
        if all(_unlocked(database) for database in databases):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError(f"process {pid} held a lock on {databases} each of {attempts} times it was paused")


def _stopped(stat: Path) -> bool:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X")
    except OSError:  # the thread ended
        return True


def _unlocked(database: Path) -> bool:
    """Whether no other connection holds `database` locked now (a missing database is not locked)."""
    if not database.exists():
        return True
    connection = sqlite3.connect(database, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()


def is_alive(pid: int) -> bool:
    """Whether process `pid` is still running (a zombie counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def build_trial_loss(model: Any, cfg: DictConfig) -> Any:
    """`build_loss` for a whole test config: its `loss` section and its base model as config (`model`, `trial.seed`)."""
    from sweep.losses import BaseModel, build_loss  # torch and sentence-transformers: only for tests that build one

    return build_loss(model, cfg.loss, BaseModel(cfg.model, cfg.trial.seed))


def keeping(cfg: DictConfig) -> Any:
    """What a test study's kept models depend on (`Keeping.of` the sections of its whole config)."""
    from sweep.training.kept_models import Keeping  # torch and sentence-transformers: only for tests that keep models

    return Keeping.of(cfg.paths.root, cfg.study, cfg.trial.save_model, cfg.tracking)
