"""Writes to the MLflow tracking store that survive a tracking server restarting: a bounded, ordered buffer of the
writes that found the server unreachable, flushed on the next write and waited for at the end of a trial, and the
limit (`tracking.outage_timeout_s`) past which the study stops with one line saying why.

Why a buffer and not only MLflow's own HTTP retries (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``..._BACKOFF_FACTOR``,
``..._TIMEOUT``): those retry each request inside the call, so with the defaults (7 retries, factor 2) every metric
logged during an outage blocks training for about 4 minutes and then raises, and the trial fails anyway. Here a
write that finds the server down returns at once (we default MLflow to no retries for HTTP stores), training goes
on, and the writes are replayed in order (metrics keep the timestamp and step they were logged with) once the
server answers. The buffer is bounded (`MAX_BUFFERED` writes): past it a write waits for the server, so memory
stays bounded however long a trial is; and the outage limit is one number, the same for every call.

The writer is shared by threads (a trial's system-metrics monitor, the members of a pack): a lock keeps the buffer
in order. A background thread only `defer`s its writes, which the trial's own next write (or its end) delivers, so
an error in a write the trial queued is raised in the trial, never in the monitor's thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

import requests
from mlflow.exceptions import MlflowException

from sweep.errors import TrackingOutage
from sweep.signals import deferred

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_BUFFERED = 10_000
RETRY_EVERY_S = (0.5, 10.0)  # the wait between tries during an outage grows from the first to the second value
# MLflow's HTTP retry settings for this process, unless the user set them: fail fast into the buffer.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}
UNAVAILABLE_CODES = ("TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED", "SERVICE_UNDER_MAINTENANCE")


def use_http_defaults() -> None:
    """Set MLflow's HTTP retry settings to fail fast (the buffer retries), leaving any the user set alone."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)


def is_unreachable(error: BaseException) -> bool:
    """Whether `error` says the tracking server could not be reached (worth retrying), not that a write was wrong."""
    if isinstance(error, (requests.exceptions.ConnectionError, requests.exceptions.Timeout, ConnectionError)):
        return True
    if isinstance(error, MlflowException):
        # mlflow.utils.rest_utils.http_request wraps every transport failure (refused, reset, timeout, 5xx after
        # its retries) as "API request to <url> failed ..."
        return error.error_code in UNAVAILABLE_CODES or str(error).startswith("API request to ")
    return False


class BufferedWriter:
    """Runs tracking writes in order; while the server is unreachable they wait in a bounded buffer."""

    def __init__(self, uri: str, outage_timeout_s: float, max_buffered: int = MAX_BUFFERED) -> None:
        self.uri = uri
        self.outage_timeout_s = outage_timeout_s
        self.max_buffered = max_buffered
        self.pending: deque[tuple[str, Callable[[], object]]] = deque()
        self.down_since: float | None = None
        self.next_try = 0.0
        self.failed_tries = 0
        self.gave_up: str | None = None  # the reason, once the outage outlasted the limit
        self.outages = 0  # outages survived (the server answered again)
        self._lock = threading.RLock()

    def write(self, what: str, call: Callable[[], object]) -> None:
        """Run `call` now, or after the writes still waiting, or later when the server is unreachable."""
        with self._lock:
            self.pending.append((what, call))
            self._drain(wait=len(self.pending) > self.max_buffered)

    def defer(self, what: str, call: Callable[[], object]) -> None:
        """Queue `call` behind the waiting writes without running any: delivered by the next `write` or `flush`."""
        with self._lock:
            self.pending.append((what, call))

    def read(self, what: str, call: Callable[[], T]) -> T:
        """A call whose answer is needed now (creating a run, reading one): waits for the server, up to the limit."""
        with self._lock:
            self.flush()
            while True:
                try:
                    with deferred():
                        result = call()
                except Exception as error:  # noqa: BLE001 - is_unreachable decides; other errors are raised
                    if not self._failed(what, error, wait=True):
                        raise TrackingOutage(self.gave_up) from None
                    continue
                self._answered()
                return result

    def flush(self) -> None:
        """Deliver every waiting write, waiting for the server up to the limit (once given up: one try)."""
        with self._lock:
            self._drain(wait=self.gave_up is None)

    def _drain(self, wait: bool) -> None:
        while self.pending:
            if not wait and time.monotonic() < self.next_try:
                return
            what, call = self.pending[0]
            try:
                with deferred():
                    call()
            except Exception as error:  # is_unreachable decides; other errors are raised
                if not is_unreachable(error):
                    self.pending.popleft()
                    raise
                if not self._failed(what, error, wait):
                    return
                continue
            self.pending.popleft()
            self._answered()

    def _failed(self, what: str, error: BaseException, wait: bool) -> bool:
        """Record a failed try; True when the caller should try again now (after waiting), False when it should
        leave the write in the buffer. Past the limit the writer gives up (`gave_up` says why) and waits no more."""
        if not is_unreachable(error):
            raise error
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
            log.warning("MLflow tracking server %s unreachable (%s); buffering writes", self.uri, what)
        self.failed_tries += 1
        delay = min(RETRY_EVERY_S[1], RETRY_EVERY_S[0] * 2 ** min(self.failed_tries, 10))
        delay = min(delay, max(0.1, self.down_since + self.outage_timeout_s - now + 0.1))  # wake up for the limit
        self.next_try = now + delay
        if self.gave_up is None and now - self.down_since > self.outage_timeout_s:
            self.gave_up = (
                f"MLflow tracking server {self.uri} unreachable for more than {self.outage_timeout_s:g} s "
                f"(tracking.outage_timeout_s)"
            )
            log.error("%s; %d writes waiting", self.gave_up, len(self.pending))
        if self.gave_up is not None or not wait:
            return False
        time.sleep(delay)
        return True

    def _answered(self) -> None:
        if self.down_since is not None:
            log.warning("MLflow tracking server %s answers again", self.uri)
            self.outages += 1
        self.down_since = None
        self.failed_tries = 0
        self.next_try = 0.0
