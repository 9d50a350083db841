"""The training side of the loss registry: `loss.name` -> the `LossSpec` its module declares (its construction, its
learning rates, the module a schedule sets), and what a trial asks of it (build, callbacks, learning rates). The
config rules of the same names, which the validation pass reads, are `sweep.losses.rules.RULES`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep.config import LossConfig
from sweep.losses import angle, angle_composite, cached_mnrl, cosent, gist, learnable_scale, mnrl, uniformity
from sweep.losses.learnable_scale import ScaleClampCallback, learnable_scales
from sweep.losses.scale_schedule import schedule_of
from sweep.losses.scheduled_scale_callback import ScaleScheduleCallback
from sweep.losses.spec import BaseModel, LossSpec
from sweep.losses.wrappers import wrap

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import nn
    from transformers import TrainerCallback


LOSSES: dict[str, LossSpec] = {  # the names of `sweep.losses.rules.RULES` (tests/losses/test_rules.py)
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


def learning_rate_mapping(loss: LossConfig) -> dict[str, float]:
    """Per-parameter learning rates of the loss (``loss``: the `loss` section), for
    SentenceTransformerTrainingArguments(learning_rate_mapping=...)."""
    return LOSSES[loss.name].learning_rates(loss)
