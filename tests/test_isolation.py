"""The test suite itself: tiny studies run on the CPU, and no test writes into the user's tracking server."""

from __future__ import annotations

import os
import subprocess
import sys

import mlflow

from tests.helpers import REPO, clean_env


def test_the_tiny_preset_trains_on_the_cpu(compose_cfg):
    assert compose_cfg().trial.device == "cpu"


def test_environment_inside_a_test(compose_cfg, tmp_path):
    """Run by the next test with MLFLOW_TRACKING_URI set, as in a user's shell."""
    assert "MLFLOW_TRACKING_URI" not in os.environ
    assert compose_cfg().tracking.uri == f"sqlite:///{tmp_path}/runs/mlflow.db"


def test_in_process_tests_never_inherit_the_users_tracking_uri(tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/users_server.db"}
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::test_environment_inside_a_test"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inner.returncode == 0, inner.stdout[-3000:]
    assert not (tmp_path / "users_server.db").exists()
    assert "MLFLOW_TRACKING_URI" not in clean_env(), "subprocess tests get a clean environment"


def test_a_test_that_sets_the_global_tracking_uri(tmp_path):
    """Run first by the next-but-one test: sets MLflow's global tracking URI, as logging a model does."""
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/left_behind.db")


def test_the_global_tracking_uri_a_test_before_left():
    """Run second by the next test."""
    assert "left_behind" not in mlflow.get_tracking_uri()


def test_a_tracking_uri_set_in_one_test_is_gone_in_the_next():
    tests = [
        f"{__file__}::{name}"
        for name in ("test_a_test_that_sets_the_global_tracking_uri", "test_the_global_tracking_uri_a_test_before_left")
    ]
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inner.returncode == 0 and "2 passed" in inner.stdout, inner.stdout[-3000:]
