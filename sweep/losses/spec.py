"""What every loss module declares for the training side of the registry (`sweep.losses.registry.LOSSES`): its
construction from the config, its per-parameter learning rates, the module whose scale a schedule sets, and the base
model a loss may copy (its config rules, which the validation pass reads, are `sweep.losses.rules`')."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sentence_transformers import SentenceTransformer
from torch import nn

from sweep.config import LossConfig, ModelConfig


def _no_learning_rates(loss: LossConfig) -> dict[str, float]:
    return {}


@dataclass(frozen=True)
class BaseModel:
    """The trial's base model as config (its `model` section and `trial.seed`), for a loss that builds another copy
    of it (GIST's ``base`` guide)."""

    model: ModelConfig
    seed: int


@dataclass(frozen=True)
class LossSpec:
    """One loss of `loss.name`, as its module declares it for training."""

    from_config: Callable[[SentenceTransformer, LossConfig, BaseModel], nn.Module]  # (model, `loss`, base model)
    learning_rates: Callable[[LossConfig], dict[str, float]] = _no_learning_rates  # per-parameter, by name pattern
    scheduled: type[nn.Module] | None = None  # the module whose `scale` loss.scale_schedule sets (None: constant only)
