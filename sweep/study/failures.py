"""Failed trials: why each failed and whether its point is tried again (`record_failure`), and when failures stop a
study: `study.max_failures` in all, `study.max_repeated_failures` in a row with the same reason (a failure that will
recur: a bad optimizer name, a wrong CSV, a missing device), or one config error raised inside a trial. Divergence is
a property of its point, so it never counts as a repeat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial

from sweep.errors import ConfigError, DivergenceError, TrackingOutage
from sweep.names import ATTR_CONFIG_ERROR, ATTR_FAIL_REASON, ATTR_NOT_RETRIED
from sweep.signals import signal_name

DIVERGED = "diverged:"
Requeue = Callable[[optuna.Trial | FrozenTrial, bool], None]  # (trial, next_attempt): queue its grid point again


def failure_reason(error: BaseException) -> str:
    """The one-line reason a trial records for `error`."""
    if isinstance(error, KeyboardInterrupt):
        return f"interrupted ({signal_name(error)}); the point is queued again"
    if isinstance(error, DivergenceError):
        return f"{DIVERGED} {error}"
    return f"{type(error).__name__}: {error}"


def record_failure(trial: optuna.Trial, error: BaseException, requeue: Requeue) -> str:
    """Record why `trial` failed (user attr ``fail_reason``) and queue its grid point again where a retry can help:
    after an interruption or a tracking outage as the same attempt (it was not the point's fault), after another
    error as the next attempt; never after a divergence (deterministic) or a wrong config (the study stops).
    Recorded once: a second call returns the first reason."""
    if ATTR_FAIL_REASON in trial.user_attrs:
        return str(trial.user_attrs[ATTR_FAIL_REASON])
    reason = failure_reason(error)
    trial.set_user_attr(ATTR_FAIL_REASON, reason)
    if isinstance(error, ConfigError):
        trial.set_user_attr(ATTR_CONFIG_ERROR, True)
    if isinstance(error, (ConfigError, DivergenceError)):
        trial.set_user_attr(ATTR_NOT_RETRIED, True)
    else:
        requeue(trial, not isinstance(error, (KeyboardInterrupt, TrackingOutage)))
    return reason


@dataclass
class FailureWatch:
    """The failures of this process's trials since the last success."""

    max_failures: int | None
    max_repeated: int | None
    reason: str | None = None
    repeats: int = 0

    def succeeded(self) -> None:
        self.reason, self.repeats = None, 0

    def stop_reason(self, trial: FrozenTrial, failures: int) -> str | None:
        """Why the study should stop after this failed trial (its `failures`-th), or None to go on."""
        reason = str(trial.user_attrs.get(ATTR_FAIL_REASON, "unknown"))
        if trial.user_attrs.get(ATTR_CONFIG_ERROR):
            return f"invalid config found by trial {trial.number} (not retried): {reason}"
        if reason.startswith(DIVERGED):
            self.succeeded()
        elif reason != self.reason:
            self.reason, self.repeats = reason, 1
        else:
            self.repeats += 1
        if self.max_repeated and self.repeats >= self.max_repeated:
            return (
                f"{self.repeats} trials in a row failed the same way (study.max_repeated_failures="
                f"{self.max_repeated}), it will recur: {reason}"
            )
        if self.max_failures and failures >= self.max_failures:
            return f"{failures} trials failed (study.max_failures={self.max_failures})"
        return None
