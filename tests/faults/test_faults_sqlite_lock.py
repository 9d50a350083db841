"""Fault: another process holds a store's SQLite database locked while a worker opens it (a write in progress, or a
worker suspended in the middle of one: SLURM suspends jobs with SIGSTOP).

Opening the MLflow store or the Optuna storage waits for the lock, up to the store's outage limit, with one warning
naming the database and the key; past the limit it stops with the key named. A locked database is recognised by
SQLite's own error code through every wrapper (SQLAlchemy's, MLflow's); other database errors are not waited for."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf
from sqlalchemy import create_engine, text
from sqlalchemy import exc as sqlalchemy_exc

from sweep.config.sqlite_lock import is_sqlite_busy
from sweep.errors import ConfigError
from sweep.study import setup
from sweep.study.setup import open_storage
from sweep.tracking.mlflow_client import open_tracking

pytestmark = pytest.mark.faults  # injected faults: left out of the default run, run by CI (-m "")

MLFLOW_BUSY_TIMEOUT_S = 5  # sqlite3's default, which MLflow's engine keeps


@contextmanager
def locked(database: Path, release_after: float | None = None) -> Iterator[None]:
    """Hold `database` exclusively locked (no other connection reads or writes it): until the block ends, or, with
    `release_after`, for that many seconds from another thread while the block goes on."""
    connection = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    connection.execute("BEGIN EXCLUSIVE")
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            connection.execute("ROLLBACK")

    timer = threading.Timer(release_after, release) if release_after is not None else None
    if timer:
        timer.start()
    try:
        yield
    finally:
        if timer:
            timer.cancel()
        release()
        connection.close()


def open_mlflow(database: Path, limit_s: float) -> Callable[[], Any]:
    tracking = OmegaConf.create({"uri": f"sqlite:///{database}", "outage_timeout_s": limit_s})
    return lambda: open_tracking(tracking)


def open_optuna(database: Path, limit_s: float) -> Callable[[], Any]:
    cfg = {"storage": f"sqlite:///{database}", "outage_timeout_s": limit_s, "heartbeat_interval": 20}
    return lambda: open_storage(OmegaConf.create(cfg), on_stale=lambda study, trial: None)


@pytest.fixture
def short_optuna_busy_timeout(monkeypatch):
    """Each SQLite call of the Optuna storage waits 1 s for a lock (60 s in a study), so a lock of a few seconds
    outlasts one call as a suspended worker's outlasts 60 s."""
    monkeypatch.setattr(setup, "SQLITE_BUSY_TIMEOUT_S", 1)


@pytest.mark.parametrize(
    ("opener", "lock_s", "key", "tables"),
    [
        (open_mlflow, MLFLOW_BUSY_TIMEOUT_S + 3, "tracking.outage_timeout_s", {"experiments", "runs"}),
        (open_optuna, 3, "study.outage_timeout_s", {"studies", "trials"}),
    ],
    ids=["mlflow", "optuna"],
)
def test_a_store_locked_by_another_process_is_waited_for(
    tmp_path, caplog, short_optuna_busy_timeout, opener, lock_s, key, tables
):
    database = tmp_path / "store.db"
    with caplog.at_level(logging.WARNING), locked(database, release_after=lock_s):
        opener(database, limit_s=120)()
    assert f"sqlite:///{database} is locked by another process; waiting up to 120 s ({key})" in caplog.text
    schema = {name for (name,) in sqlite3.connect(database).execute("SELECT name FROM sqlite_master")}
    assert tables <= schema, "the store was created once the lock was released"


@pytest.mark.parametrize(
    ("opener", "key"), [(open_mlflow, "tracking.uri"), (open_optuna, "study.storage")], ids=["mlflow", "optuna"]
)
def test_a_store_locked_past_the_limit_stops_with_its_key(tmp_path, short_optuna_busy_timeout, opener, key):
    database = tmp_path / "store.db"
    with locked(database), pytest.raises(ConfigError) as refusal:
        opener(database, limit_s=0.5)()
    assert str(refusal.value).startswith(f"{key}='sqlite:///{database}'")
    assert "database is locked" in str(refusal.value)


def test_a_locked_database_is_told_apart_from_other_database_errors(tmp_path):
    database = tmp_path / "store.db"
    MlflowClient(f"sqlite:///{database}").search_experiments()  # the schema
    engine = create_engine(f"sqlite:///{database}", connect_args={"timeout": 0})
    with locked(database):
        with pytest.raises(MlflowException) as through_mlflow:
            MlflowClient(f"sqlite:///{database}").search_experiments()  # MLflow's wrapper (its engine waits 5 s)
        with pytest.raises(sqlalchemy_exc.OperationalError) as through_sqlalchemy, engine.connect() as connection:
            connection.execute(text("SELECT * FROM experiments"))
        with pytest.raises(sqlite3.OperationalError) as through_sqlite:
            sqlite3.connect(database, timeout=0).execute("SELECT * FROM experiments")
    assert all(is_sqlite_busy(caught.value) for caught in (through_mlflow, through_sqlalchemy, through_sqlite))
    with pytest.raises(sqlalchemy_exc.OperationalError) as wrong_query, engine.connect() as connection:
        connection.execute(text("SELECT * FROM no_such_table"))
    assert not is_sqlite_busy(wrong_query.value), "a wrong query is raised at once, not waited for"
    assert not is_sqlite_busy(ConnectionRefusedError()), "a server outage is the outage buffer's"
