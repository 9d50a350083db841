"""What the validation pass asks of the `loss` section: its checks (`validate_loss`: the rules of its `loss.name`,
its schedule, its wrapper, `trial.weight_decay` against it) and the keys it derives (`loss_values`), read from the
rules registry (`sweep.losses.rules.RULES`) without importing a loss class."""

from __future__ import annotations

from typing import Any

from sweep.config import LossConfig, ModelConfig, Problems, TrialConfig, require_choice
from sweep.errors import ConfigError
from sweep.losses.rules import RULES, LossRules
from sweep.losses.scale_schedule import schedule_of, schedule_values
from sweep.losses.wrapper_checks import validate_wrapper


def _schedule_values(loss: LossConfig, rules: LossRules) -> dict[str, Any]:
    """`schedule_values`, for a loss whose scale a schedule can set (a loss without one: only a constant at
    `loss.scale`)."""
    schedule = schedule_of(loss)
    if not rules.schedulable and schedule.initial_scale() is not None:
        key = "spec" if loss.scale_schedule.spec is not None else "kind"
        scheduled = ", ".join(name for name, other in RULES.items() if other.schedulable)
        raise ConfigError(
            f"loss.scale_schedule.{key}",
            getattr(loss.scale_schedule, key),
            f"loss {loss.name} has no single fixed scale to schedule: use kind=constant (schedules: {scheduled})",
        )
    return schedule_values(loss)


def loss_values(loss: LossConfig) -> dict[str, Any]:
    """The derived keys of the `loss` section ({dotted key: value}) that make logged params show what trains, a
    schedule's included (before validation: an unknown `loss.name` is left to `validate_loss`)."""
    if loss.name not in RULES:
        return {}
    rules = RULES[loss.name]
    return {**rules.resolve(loss), **_schedule_values(loss, rules)}


def validate_loss(loss: LossConfig, model: ModelConfig, trial: TrialConfig, columns: list[str]) -> None:
    """Check the loss name (of the `loss` section), that the training columns (`data.train.columns`) and the `model`
    section fit it, its parameters, its schedule and its wrapper, and `trial.weight_decay` against it."""
    name = loss.name
    require_choice("loss.name", name, RULES)
    rules = RULES[name]
    problems = Problems()
    if not rules.columns.accepts(columns):
        problems.add(ConfigError("data.train.columns", columns, f"loss {name} needs {rules.columns.description}"))
    if rules.transformer_only and model.kind != "transformer":
        problems.add(ConfigError("model.kind", model.kind, f"loss {name} needs model.kind=transformer"))
    problems.check(rules.check, loss)
    if rules.weight_decay is not None and trial.weight_decay > 0:
        problems.add(ConfigError("trial.weight_decay", trial.weight_decay, rules.weight_decay))
    problems.check(_schedule_values, loss, rules)
    problems.check(validate_wrapper, loss, model, rules.gradient_cache)
    if loss.get("scale") == 0 and trial.weight_decay > 0:
        problems.add(
            ConfigError(
                "trial.weight_decay",
                trial.weight_decay,
                "must be 0 when loss.scale=0: with zero gradient, decay alone would still move the weights",
            )
        )
    problems.raise_any()
