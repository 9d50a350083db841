"""Fault: the PostgreSQL server behind the Optuna storage stops and starts again mid-study (`pg_ctlcluster`).

Two workers (`study.n_workers=2`) lose their connections; their storage calls (the heartbeat thread's included) are
retried until the database answers, training goes on, and every grid point is trained exactly once."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import Counter
from urllib.parse import urlparse

import optuna
import pytest

from tests.faults.harness import Sweep, figures, running_trials, wait_for
from tests.helpers import cannot_set_up, require_postgres_url

pytestmark = pytest.mark.faults  # injected faults: left out of the default run, run by CI (-m "")

GRID = [1, 5, 20, 50]
ARGS = ["study.search_space.loss.scale=[1,5,20,50]", "trial.max_steps=6", "trial.eval_steps=2", "study.n_workers=2"]


def local_cluster(url: str) -> tuple[str, str] | None:
    """(version, name) of the Debian PostgreSQL cluster serving `url` on this machine, if we may restart it."""
    parsed = urlparse(url)
    if parsed.hostname not in ("127.0.0.1", "localhost") or not shutil.which("pg_lsclusters") or os.geteuid() != 0:
        return None
    for line in subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True).stdout.splitlines():
        version, name, port = line.split()[:3]
        if int(port) == (parsed.port or 5432):
            return version, name
    return None


def test_postgresql_restarted_mid_study_workers_reconnect_and_nothing_trains_twice(tmp_path):
    url = require_postgres_url()
    cluster = local_cluster(url)
    if cluster is None:
        cannot_set_up("SWEEP_TEST_POSTGRES_URL is not served by a Debian cluster of this machine that root may restart")
    database = f"sweep_fault_{os.getpid()}_{int(time.time())}"
    server = url.rsplit("/", 1)[0]
    subprocess.run(["psql", f"{server}/postgres", "-c", f"CREATE DATABASE {database}"], check=True, capture_output=True)
    storage = f"{server}/{database}"

    study = Sweep(*ARGS, f"study.storage={storage}", home=tmp_path)
    wait_for(lambda: any(t.intermediate_values == {} for t in running_trials(storage, "mnrl_scale")), "a trial")
    subprocess.run(["pg_ctlcluster", *cluster, "stop"], check=True)
    try:
        wait_for(lambda: "storage connection lost" in study.output(), "a storage call to fail while the server is down")
    finally:
        subprocess.run(["pg_ctlcluster", *cluster, "start"], check=True)
    code, output = study.finish()
    assert code == 0, output[-3000:]
    assert "storage answers again" in output, "a call was retried after the restart"

    result = figures(storage, "mnrl_scale", GRID, f"sqlite:///{tmp_path}/mlflow.db")
    print(f"PostgreSQL restart: 1 fault, {result}")
    assert (result.lost, result.trained_twice, result.runs_running) == (0, 0, 0)
    states = Counter(t.state.name for t in optuna.load_study(study_name="mnrl_scale", storage=storage).trials)
    assert states == {"COMPLETE": 4}, "no trial failed for the outage"
