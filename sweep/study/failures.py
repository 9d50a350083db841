"""When failed trials stop a study: `study.max_failures` in all, `study.max_repeated_failures` in a row with the same
reason (a failure that will recur: a bad optimizer name, a wrong CSV, a missing device), or one
config error raised inside a trial. Divergence is a property of its point, so it never counts as a repeat."""

from __future__ import annotations

from dataclasses import dataclass

from optuna.trial import FrozenTrial

from sweep.names import ATTR_CONFIG_ERROR, ATTR_FAIL_REASON

DIVERGED = "diverged:"


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
