"""Helpers of the fault tests (tests/test_faults_*.py): a real `mlflow server` to kill and restart, polling study
state instead of sleeping, and the figures every fault test asserts (trials lost, trained twice, runs RUNNING)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import optuna
import pytest
from mlflow.tracking import MlflowClient

T = TypeVar("T")
DEADLINE_S = 300  # only to fail a test that hangs; no assertion is about time
REPO = Path(__file__).resolve().parents[2]


class Sweep:
    """`python -m sweep` on the tiny MNRL grid in a subprocess, its output in a file that can be read while it runs."""

    def __init__(self, *args: str, home: Path, log: str = "sweep.log") -> None:
        from tests.conftest import TINY
        from tests.helpers import clean_env

        self.log = home / log
        env = clean_env(SWEEP_HOME=str(home))
        # one seed: the figures count grid points, not replicates (mnrl_scale itself runs 3 seeds)
        command = [
            sys.executable,
            "-m",
            "sweep",
            "+experiment=mnrl_scale",
            *TINY,
            "stats.enabled=false",
            "study.seeds=[0]",
        ]
        command += args
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text()

    def finish(self) -> tuple[int, str]:
        """Wait for the process; its exit code and output."""
        return self.process.wait(timeout=DEADLINE_S * 2), self.output()


def wait_for(condition: Callable[[], T], what: str, deadline_s: float = DEADLINE_S, every_s: float = 0.2) -> T:
    """Poll `condition` until it returns something truthy (returned); fail the test after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # noqa: BLE001 - the state is not there yet (no study, no database)
            value = None
        if value:
            return value
        time.sleep(every_s)
    pytest.fail(f"timed out waiting for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class MlflowServer:
    """`mlflow server` on 127.0.0.1 with a SQLite backend and local artifacts, killed and restarted at will."""

    root: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        mlflow = shutil.which("mlflow") or str(Path(sys.executable).parent / "mlflow")
        command = [
            mlflow,
            "server",
            "--backend-store-uri",
            f"sqlite:///{self.root}/server.db",
            "--artifacts-destination",
            str(self.root / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no background job runner: less CPU
        # the server writes to its own copy of the descriptor, which outlives this one (closed: no ResourceWarning)
        with (self.root / "server.log").open("a") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        wait_for(self._healthy, f"mlflow server on port {self.port} (log: {self.root / 'server.log'})", every_s=0.5)

    def _healthy(self) -> bool:
        assert self.process is not None and self.process.poll() is None, (self.root / "server.log").read_text()
        with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as response:
            return response.status == 200

    def kill(self) -> None:
        """SIGKILL the server and its workers (a crash, not a shutdown)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def running_trials(storage: str, name: str) -> list[optuna.trial.FrozenTrial]:
    study = optuna.load_study(study_name=name, storage=storage)
    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))


@dataclass
class Figures:
    """What a fault cost, over the grid points of a study and its MLflow runs."""

    lost: int  # grid points without a COMPLETE trial
    trained_twice: int  # COMPLETE trials beyond one per grid point
    runs_running: int  # MLflow runs (parent and trials) still RUNNING


def figures(storage: str, name: str, grid: list[float], tracking_uri: str) -> Figures:
    study = optuna.load_study(study_name=name, storage=storage)
    complete = Counter(t.params["loss.scale"] for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE)
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(name)
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    return Figures(
        lost=sum(1 for point in grid if complete[point] == 0),
        trained_twice=sum(count - 1 for count in complete.values() if count > 1),
        runs_running=sum(1 for run in runs if run.info.status == "RUNNING"),
    )
