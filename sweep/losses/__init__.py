"""Loss registry: each loss declares how it is built from the config and which data columns it needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from omegaconf import DictConfig
from sentence_transformers import SentenceTransformer
from torch import nn

from sweep.config import ConfigError
from sweep.losses.mnrl import SIMILARITIES, ScaledMultipleNegativesRankingLoss


@dataclass(frozen=True)
class LossSpec:
    """How to build a loss and what training data it needs."""

    build: Callable[[SentenceTransformer, DictConfig], nn.Module]
    columns: str  # human-readable description of the training columns
    accepts: Callable[[list[str]], bool]  # does a list of training columns fit?


def _text_tuples(columns: list[str]) -> bool:
    return len(columns) >= 2 and not {"score", "label"} & set(columns)


LOSSES: dict[str, LossSpec] = {
    "mnrl": LossSpec(
        build=lambda model, loss: ScaledMultipleNegativesRankingLoss(model, scale=loss.scale, similarity=loss.similarity),
        columns="(anchor, positive[, negative...]) text columns, no score/label",
        accepts=_text_tuples,
    ),
}


def build_loss(model: SentenceTransformer, cfg: DictConfig) -> nn.Module:
    return LOSSES[cfg.loss.name].build(model, cfg.loss)


def validate_loss(cfg: DictConfig) -> None:
    """Check the loss name, its parameters and that the training columns fit it."""
    name = cfg.loss.name
    if name not in LOSSES:
        raise ConfigError("loss.name", name, f"must be one of {', '.join(LOSSES)}")
    if "similarity" in cfg.loss and cfg.loss.similarity not in SIMILARITIES:
        raise ConfigError("loss.similarity", cfg.loss.similarity, f"must be one of {', '.join(SIMILARITIES)}")
    columns = list(cfg.data.train.columns)
    if not LOSSES[name].accepts(columns):
        raise ConfigError("data.train.columns", columns, f"loss {name} needs {LOSSES[name].columns}")
    if cfg.loss.get("scale") == 0 and cfg.trial.weight_decay > 0:
        raise ConfigError("trial.weight_decay", cfg.trial.weight_decay, "must be 0 when loss.scale=0: with zero gradient, decay alone would still move the weights")
