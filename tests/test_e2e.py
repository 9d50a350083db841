"""The real command line, `python -m sweep +experiment=mnrl_scale`, with tiny overrides on the real offline data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from sweep.names import ROLE_STUDY, ROLE_TRIAL, TAG_ROLE
from tests.conftest import TINY
from tests.helpers import REPO, clean_env

pytestmark = pytest.mark.e2e


def sweep_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args],
        cwd=REPO,
        env=clean_env(SWEEP_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mnrl_scale_end_to_end_and_rerun_trains_nothing(tmp_path):
    args = ["+experiment=mnrl_scale", *TINY, "study.seeds=[0]", "study.search_space.loss.scale=[0,1,20,50]"]
    first = sweep_cli(*args, home=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    out = first.stdout
    assert "study mnrl_scale: 4 complete trials" in out
    for column in ("scale", "temperature", "stsb_val", "stsb_test", "wall_s"):
        assert column in out
    db = tmp_path / "mlflow.db"
    assert f"mlflow ui --backend-store-uri sqlite:///{db}" in out
    assert f"sqlite:///{tmp_path / 'optuna.db'}" in out

    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("mnrl_scale")
    runs = client.search_runs([experiment.experiment_id])
    assert sum(r.data.tags.get(TAG_ROLE) == ROLE_STUDY for r in runs) == 1
    assert sorted(float(r.data.params["loss.scale"]) for r in runs if r.data.tags.get(TAG_ROLE) == ROLE_TRIAL) == [
        0,
        1,
        20,
        50,
    ]

    second = sweep_cli(*args, home=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "nothing to train" in second.stderr + second.stdout
    assert len(client.search_runs([experiment.experiment_id])) == 5


def test_bad_value_exits_with_one_line_naming_the_key(tmp_path):
    result = sweep_cli("+experiment=mnrl_scale", "study.search_space.loss.scale=[0,-2]", home=tmp_path)
    assert result.returncode == 2
    assert "sweep: invalid config: loss.scale=-2" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "optuna.db").exists(), "refused before the study (or any training) started"
