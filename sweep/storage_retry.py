"""Optuna's RDB storage that survives its database server restarting (PostgreSQL restarted, a network blip): every
storage call that loses its connection is retried, on a fresh connection, until `study.outage_timeout_s`.

SQLAlchemy's ``pool_pre_ping`` (set for server databases in `study_setup.open_storage`) replaces connections that
died while idle in the pool; a call caught mid-way by the restart still fails once, and an outage longer than the
restart fails every call. Optuna does not retry: a failed heartbeat ends the heartbeat thread (the trial then looks
dead and is trained again by another worker) and a failed ``tell`` leaves the trial RUNNING. So the calls are
retried here, in every thread (the heartbeat thread included). A retried write is safe: Optuna's writes are
upserts or checked state changes; a state change whose first try was committed but not acknowledged is seen as
done (below). One window stays: a worker's claim of a queued trial committed but not acknowledged reads as
"another worker took it", and that trial waits RUNNING without a heartbeat; nothing trains twice.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import TrialState
from sqlalchemy import exc as sqlalchemy_exc

from sweep.signals import deferred

log = logging.getLogger(__name__)

RETRY_EVERY_S = (0.5, 10.0)  # the wait between tries grows from the first to the second value
# The RDBStorage methods that talk to the database.
RETRIED = (
    "create_new_study",
    "set_study_user_attr",
    "set_study_system_attr",
    "get_study_id_from_name",
    "get_study_name_from_id",
    "get_study_directions",
    "get_study_user_attrs",
    "get_study_system_attrs",
    "get_trial_user_attrs",
    "get_trial_system_attrs",
    "get_all_studies",
    "create_new_trial",
    "set_trial_param",
    "get_trial_param",
    "set_trial_state_values",
    "set_trial_intermediate_value",
    "set_trial_user_attr",
    "set_trial_system_attr",
    "get_trial_id_from_study_id_trial_number",
    "get_trial",
    "get_all_trials",
    "get_best_trial",
    "record_heartbeat",
    "_get_stale_trial_ids",
)


def is_connection_error(error: BaseException) -> bool:
    """Whether `error` (or the SQLAlchemy error Optuna wrapped in StorageInternalError) is a lost or refused
    connection, not a wrong query."""
    cause = error.__cause__ if isinstance(error, optuna.exceptions.StorageInternalError) else error
    if isinstance(cause, sqlalchemy_exc.DBAPIError) and cause.connection_invalidated:
        return True
    return isinstance(cause, (sqlalchemy_exc.OperationalError, sqlalchemy_exc.InterfaceError))


class RetryingRDBStorage(optuna.storages.RDBStorage):
    """RDBStorage whose database calls are retried while the connection is lost, up to `outage_timeout_s`."""

    outage_timeout_s: float = 300.0

    def _retry(self, name: str, call: Callable[[], Any], args: tuple[Any, ...]) -> Any:
        started, tries = time.monotonic(), 0
        while True:
            try:
                with deferred():
                    result = call()
            except optuna.exceptions.UpdateFinishedTrialError:
                if tries and name == "set_trial_state_values" and self._already_set(*args):
                    return True  # the try that lost its connection had committed
                raise
            except (optuna.exceptions.StorageInternalError, sqlalchemy_exc.SQLAlchemyError) as error:
                waited = time.monotonic() - started
                if not is_connection_error(error) or waited > self.outage_timeout_s:
                    raise
                if not tries:
                    log.warning("storage connection lost (%s); retrying up to %g s", name, self.outage_timeout_s)
                tries += 1
                time.sleep(min(RETRY_EVERY_S[1], RETRY_EVERY_S[0] * 2 ** min(tries, 10)))
                continue
            if tries:
                log.warning("storage answers again (%s after %d tries)", name, tries)
            return result

    def _already_set(self, trial_id: int, state: TrialState, values: Any = None) -> bool:
        return optuna.storages.RDBStorage.get_trial(self, trial_id).state == state


def _retrying(name: str) -> Callable[..., Any]:
    method = getattr(optuna.storages.RDBStorage, name)

    @functools.wraps(method)
    def call(self: RetryingRDBStorage, *args: Any, **kwargs: Any) -> Any:
        return self._retry(name, lambda: method(self, *args, **kwargs), args)

    return call


for _name in RETRIED:
    setattr(RetryingRDBStorage, _name, _retrying(_name))
