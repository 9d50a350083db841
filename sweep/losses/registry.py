"""The loss registry: `loss.name` -> the `LossSpec` its module declares (checks, construction, training columns),
and what a trial and the validation pass ask of it (build, check, derived keys, callbacks, learning rates)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweep.config.checks import Problems, require_choice
from sweep.config.schema import LossConfig, ModelConfig, TrialConfig
from sweep.errors import ConfigError
from sweep.losses import angle, angle_composite, cached_mnrl, cosent, gist, learnable_scale, mnrl, uniformity
from sweep.losses.learnable_scale import ScaleClampCallback, learnable_scales
from sweep.losses.scale_schedule import schedule_of, schedule_values
from sweep.losses.scheduled_scale_callback import ScaleScheduleCallback
from sweep.losses.spec import BaseModel, LossSpec
from sweep.losses.wrappers import validate_wrapper, wrap

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import nn
    from transformers import TrainerCallback


LOSSES: dict[str, LossSpec] = {
    "mnrl": mnrl.SPEC,
    "mnrl_uniformity": uniformity.SPEC,
    "cached_mnrl": cached_mnrl.SPEC,
    "learnable_scale": learnable_scale.SPEC,
    "gist": gist.SPEC,
    "cosent": cosent.SPEC,
    "angle": angle.SPEC,
    "angle_composite": angle_composite.SPEC,
}


def build_loss(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> nn.Module:
    """The loss of `loss.name` (``loss``: the `loss` section; ``base``: the trial's base model as config), inside
    `loss.wrapper` when one is set."""
    return wrap(model, LOSSES[loss.name].from_config(model, loss, base), loss.wrapper)


def training_callbacks(loss: nn.Module) -> list[TrainerCallback]:
    """Trainer callbacks a loss needs: the learnable scale's clamp after each optimizer step."""
    return [ScaleClampCallback(loss)] if learnable_scales(loss) else []


def schedule_callback(loss: nn.Module, section: LossConfig) -> ScaleScheduleCallback | None:
    """The callback that sets the scale of `loss` by `loss.scale_schedule` (``section``: the `loss` section) before
    each step (None: a constant)."""
    schedule = schedule_of(section)
    holder = LOSSES[section.name].scheduled
    if schedule.kind == "constant" or holder is None:  # validate_loss refuses a schedule of a loss without one
        return None
    return ScaleScheduleCallback(schedule, [module for module in loss.modules() if isinstance(module, holder)])


def _schedule_values(loss: LossConfig, spec: LossSpec) -> dict[str, Any]:
    """`schedule_values`, for a loss whose scale a schedule can set (a loss without one: only a constant at
    `loss.scale`)."""
    schedule = schedule_of(loss)
    if spec.scheduled is None and schedule.initial_scale() is not None:
        key = "spec" if loss.scale_schedule.spec is not None else "kind"
        scheduled = ", ".join(name for name, other in LOSSES.items() if other.scheduled is not None)
        raise ConfigError(
            f"loss.scale_schedule.{key}",
            getattr(loss.scale_schedule, key),
            f"loss {loss.name} has no single fixed scale to schedule: use kind=constant (schedules: {scheduled})",
        )
    return schedule_values(loss)


def loss_values(loss: LossConfig) -> dict[str, Any]:
    """The derived keys of the `loss` section ({dotted key: value}) that make logged params show what trains, a
    schedule's included (before validation: an unknown `loss.name` is left to `validate_loss`)."""
    if loss.name not in LOSSES:
        return {}
    spec = LOSSES[loss.name]
    return {**spec.resolve(loss), **_schedule_values(loss, spec)}


def learning_rate_mapping(loss: LossConfig) -> dict[str, float]:
    """Per-parameter learning rates of the loss (``loss``: the `loss` section), for
    SentenceTransformerTrainingArguments(learning_rate_mapping=...)."""
    return LOSSES[loss.name].learning_rates(loss)


def validate_loss(loss: LossConfig, model: ModelConfig, trial: TrialConfig, columns: list[str]) -> None:
    """Check the loss name (of the `loss` section), that the training columns (`data.train.columns`) and the `model`
    section fit it, its parameters, its schedule and its wrapper, and `trial.weight_decay` against it."""
    name = loss.name
    require_choice("loss.name", name, LOSSES)
    spec = LOSSES[name]
    problems = Problems()
    if not spec.columns.accepts(columns):
        problems.add(ConfigError("data.train.columns", columns, f"loss {name} needs {spec.columns.description}"))
    if spec.transformer_only and model.kind != "transformer":
        problems.add(ConfigError("model.kind", model.kind, f"loss {name} needs model.kind=transformer"))
    problems.check(spec.check, loss)
    if spec.weight_decay is not None and trial.weight_decay > 0:
        problems.add(ConfigError("trial.weight_decay", trial.weight_decay, spec.weight_decay))
    problems.check(_schedule_values, loss, spec)
    problems.check(validate_wrapper, loss, model, spec.gradient_cache)
    if loss.get("scale") == 0 and trial.weight_decay > 0:
        problems.add(
            ConfigError(
                "trial.weight_decay",
                trial.weight_decay,
                "must be 0 when loss.scale=0: with zero gradient, decay alone would still move the weights",
            )
        )
    problems.raise_any()
