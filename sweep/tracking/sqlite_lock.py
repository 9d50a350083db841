"""The file lock beside a SQLite database (Optuna's or MLflow's) while its schema may be created."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def sqlite_init_lock(url: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a SQLite database while its schema may be created: processes that
    start together would otherwise run the same schema migration at once and corrupt it. Server databases
    (PostgreSQL, an MLflow server) serialise this themselves."""
    if not url.startswith("sqlite:///"):
        yield
        return
    lock_path = Path(url.removeprefix("sqlite:///") + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
