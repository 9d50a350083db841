"""What sweep relies on past Optuna's and MLflow's public APIs (`sweep.study.optuna_access`, `storage_retry`,
`sweep.tracking.system_metrics`) is still there, with the signatures used, and the installed versions lie in the
ranges pyproject.toml pins to the tested ones: an upgrade that moves any of it fails here, saying what to re-check,
instead of inside a study (a heartbeat thread that dies, a system-metrics thread that stops)."""

from __future__ import annotations

import inspect
import re
import threading
from importlib.metadata import version
from pathlib import Path

import mlflow
import optuna
import pytest
from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor
from packaging.requirements import Requirement
from packaging.version import Version

from sweep.study import optuna_access
from sweep.study.storage_retry import RETRIED, RetryingRDBStorage
from sweep.tracking.system_metrics import TrialMonitor

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
RECHECK = {
    "optuna": "sweep/study/optuna_access.py's private names and storage_retry.py's overrides",
    "mlflow": "sweep/tracking/system_metrics.py's use of SystemMetricsMonitor",
}


def pinned(package: str) -> Requirement:
    """`package`'s line of pyproject.toml's dependencies (read as text: tomllib needs Python 3.11)."""
    line = re.search(rf'^\s*"({package}[<>=!~,.\d]*)",', PYPROJECT.read_text(), re.MULTILINE)
    assert line is not None, f"pyproject.toml lists no {package} dependency"
    return Requirement(line[1])


@pytest.mark.parametrize("package", sorted(RECHECK))
def test_the_installed_version_is_within_the_tested_range(package):
    requirement = pinned(package)
    assert requirement.specifier.contains(version(package)), (
        f"{package} {version(package)} is outside the tested range {requirement.specifier} (pyproject.toml): "
        f"re-check {RECHECK[package]} (this module's tests), then widen the pin and the modules' docstrings"
    )
    installed = Version(version(package))
    untested = Version(f"{installed.major}.{installed.minor + 1}")  # the next minor release: not tested yet
    caps = [Version(spec.version) for spec in requirement.specifier if spec.operator == "<"]
    assert caps and min(caps) <= untested, (
        f"pyproject.toml's {requirement} admits {package} releases after {untested} that no test ran: cap it below "
        f"the next minor release ({package}<{untested})"
    )


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning", "ignore:Heartbeat of storage")
def test_optunas_private_names_used_by_optuna_access_are_there(tmp_path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'o.db'}", heartbeat_interval=60)
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    assert isinstance(optuna_access.storage_of(study), optuna.storages.BaseStorage)
    assert isinstance(trial._trial_id, int)
    assert optuna_access.stored_trial(study, trial).number == trial.number
    optuna_access.record_heartbeat(optuna_access.storage_of(study), trial)  # as the packer beats for its members
    with optuna_access.rdb_session(storage.scoped_session) as session:
        beating = session.query(optuna_access.rdb_models.TrialModel).filter(
            optuna_access.rdb_models.TrialModel.heartbeats.any()
        )
        assert [row.trial_id for row in beating] == [trial._trial_id]
    asked: list[int] = []
    original = study.ask
    optuna_access.wrap_ask(study, lambda ask: lambda *a, **k: asked.append(1) or ask(*a, **k))
    study.optimize(lambda t: 0.0, n_trials=1)
    assert asked == [1] and study.ask is not original, "optimize asks through study.ask"


def test_the_rdb_storage_methods_storage_retry_overrides_keep_their_signatures():
    base = optuna.storages.RDBStorage
    missing = [name for name in RETRIED if not callable(getattr(base, name, None))]
    assert not missing, f"RDBStorage lost {missing}: re-check sweep/study/storage_retry.py's RETRIED"
    assert list(inspect.signature(base._get_stale_trial_ids).parameters) == ["self", "study_id"]
    assert {"heartbeat_interval", "grace_period", "engine_kwargs"} <= set(inspect.signature(base).parameters)
    assert RetryingRDBStorage._get_stale_trial_ids is not base._get_stale_trial_ids


def test_mlflows_monitor_has_what_trial_monitor_relies_on():
    parameters = inspect.signature(SystemMetricsMonitor.__init__).parameters
    assert {"run_id", "sampling_interval", "tracking_uri"} <= set(parameters), (
        f"mlflow {mlflow.__version__}: SystemMetricsMonitor takes {list(parameters)}; re-check TrialMonitor.__init__"
    )
    monitor = SystemMetricsMonitor("0" * 32, sampling_interval=1, tracking_uri="sqlite:///:memory:")
    assert isinstance(monitor._shutdown_event, threading.Event)
    assert monitor._logging_step == 0 and monitor.monitors and monitor.sampling_interval == 1
    for name in ("collect_metrics", "aggregate_metrics", "publish_metrics", "monitor", "start", "finish"):
        assert callable(getattr(monitor, name)), f"SystemMetricsMonitor lost {name}: re-check TrialMonitor"
    assert list(inspect.signature(SystemMetricsMonitor.publish_metrics).parameters) == ["self", "metrics"]
    assert TrialMonitor.monitor is not SystemMetricsMonitor.monitor  # the loop sweep replaces is still a method
