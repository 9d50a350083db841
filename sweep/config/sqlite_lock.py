"""SQLite's locks (Optuna's or MLflow's database): the file lock beside it while its schema may be created, and
waiting out another process's lock on it while a store opens."""

from __future__ import annotations

import fcntl
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
BUSY_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED")  # sqlite3.Error.sqlite_errorname of "database is locked"
WAIT_BETWEEN_TRIES_S = 1.0  # each try itself first waits the driver's busy timeout


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


def is_sqlite_busy(error: BaseException) -> bool:
    """Whether `error`, or one it was raised from (SQLAlchemy's OperationalError, MLflow's MlflowException), is
    SQLite's "database is locked": another connection holds the database, and a later try gets past it."""
    seen: BaseException | None = error
    for _ in range(10):  # a chain is short; the bound guards against a cycle
        if seen is None:
            return False
        if getattr(seen, "sqlite_errorname", None) in BUSY_ERRORS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def wait_while_locked(call: Callable[[], T], url: str, limit_s: float, key: str) -> T:
    """`call()`, tried again for up to `limit_s` seconds (`key`) while `url`'s SQLite database is locked by another
    process. Opening a store waits out another worker's write, or a worker suspended mid-write (SLURM suspends jobs
    with SIGSTOP), as the calls of a running study do, instead of stopping as an unreachable store; other errors are
    raised at once."""
    started, warned = time.monotonic(), False
    while True:
        try:
            return call()
        except Exception as error:  # is_sqlite_busy decides; other errors are raised
            if not is_sqlite_busy(error) or time.monotonic() - started > limit_s:
                raise
            if not warned:
                log.warning("%s is locked by another process; waiting up to %g s (%s)", url, limit_s, key)
                warned = True
            time.sleep(WAIT_BETWEEN_TRIES_S)
