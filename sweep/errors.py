"""The exceptions sweep raises, all under `SweepError`: catch that to handle any of them; each says what went wrong in
one line (the CLI prints it and exits 2, except a study's own trial failures, which the study records)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "ConfigErrors",
    "DivergenceError",
    "MissingInput",
    "QuestionsError",
    "Refused",
    "SweepError",
    "TrackingOutage",
]


class SweepError(Exception):
    """Base class for sweep's own errors: a config that cannot run, a trial that diverged, a tracking server gone past
    its limit, results that a report cannot read. Each subclass also derives from the built-in error it used to be
    (``ValueError`` or ``RuntimeError``), so code that catches those still does."""


class ConfigError(SweepError, ValueError):
    """A config value that cannot run; the message names the key, the value and what is allowed."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value!r}: {allowed}")


class ConfigErrors(ConfigError):
    """Every `ConfigError` one validation pass found, one line each (the first's key, value and fix as its own, so a
    caller that reads one error reads the first)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        first = errors[0]
        super().__init__(first.key, first.value, first.allowed)
        self.errors = list(errors)
        self.args = ("\n".join(str(error) for error in self.errors),)

    def __str__(self) -> str:
        return self.args[0]


class DivergenceError(SweepError, RuntimeError):
    """The training loss became NaN or infinite."""


class TrackingOutage(SweepError, RuntimeError):
    """A call that needs an answer (creating a run) found the server unreachable past `tracking.outage_timeout_s`."""


class Refused(SweepError, ValueError):
    """Folders the command cannot compare: one missing, a column missing, or trials that cannot be paired by seed."""


class MissingInput(SweepError, ValueError):
    """A folder, a metric or a scale that the command was asked for and the results lack."""


class QuestionsError(SweepError, ValueError):
    """A findings page's file of questions that cannot be answered: one line naming the key and the fix."""
