"""Loss registry: each loss declares how it is built from the config, which data columns it needs, which
model it needs and how its parameters are checked. Any loss can be wrapped (`loss.wrapper`, see wrappers.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig
from sentence_transformers import SentenceTransformer
from torch import nn
from transformers import TrainerCallback

from sweep.config import ConfigError
from sweep.layer_grid import parse_numbers
from sweep.losses.angle import angle_loss
from sweep.losses.angle_composite import AnglECompositeLoss
from sweep.losses.cached_mnrl import ScaledCachedMultipleNegativesRankingLoss
from sweep.losses.cosent import PAIRWISE_SIMILARITIES, cosent_loss
from sweep.losses.gist import BASE_GUIDE, gist_loss
from sweep.losses.learnable_scale import (
    LearnableScaleMultipleNegativesRankingLoss,
    ScaleClampCallback,
    learnable_scales,
)
from sweep.losses.mnrl import SIMILARITIES, ScaledMultipleNegativesRankingLoss
from sweep.losses.wrappers import validate_wrapper, wrap

LABELS = {"score", "label"}
MARGIN_STRATEGIES = ("absolute", "relative")


def _no_check(cfg: DictConfig) -> None:
    return None


@dataclass(frozen=True)
class LossSpec:
    """How to build a loss, what training data and model it needs, and how its parameters are checked."""

    build: Callable[[SentenceTransformer, DictConfig], nn.Module]  # (model, the trial's whole config)
    columns: str  # human-readable description of the training columns
    accepts: Callable[[list[str]], bool]  # does a list of training columns fit?
    check: Callable[[DictConfig], None] = _no_check  # raises ConfigError on a bad loss parameter
    transformer_only: bool = False  # needs model.kind=transformer
    gradient_cache: bool = False  # back-propagates from a hook (no layer wrappers)


def _text_tuples(columns: list[str]) -> bool:
    return len(columns) >= 2 and not LABELS & set(columns)


def _text_pairs_or_triplets(columns: list[str]) -> bool:
    return _text_tuples(columns) and len(columns) <= 3


def _scored_pairs(columns: list[str]) -> bool:
    return len(columns) == 3 and len(LABELS & set(columns)) == 1


def _scored_pairs_or_text_tuples(columns: list[str]) -> bool:
    return _scored_pairs(columns) or (_text_tuples(columns) and len(columns) >= 3)


def _number(key: str, value: Any, low: float, strict: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and (value > low if strict else value >= low)
    if not ok:
        raise ConfigError(key, value, f"must be a number {'>' if strict else '>='} {low}")
    return float(value)


def _positive_scale(cfg: DictConfig) -> None:
    _number("loss.scale", cfg.loss.scale, 0, strict=True)


def angle_weights(loss: DictConfig) -> tuple[float, float, float]:
    """(w1, w2, w3) of angle_composite: `loss.weights` ("w1,w2,w3", a grid-friendly string) wins over w1/w2/w3."""
    if loss.weights is not None:
        weights = parse_numbers("loss.weights", loss.weights, float)
        if len(weights) != 3:
            raise ConfigError(
                "loss.weights", loss.weights, 'must be three numbers "w1,w2,w3" (cosine, in-batch negatives, angle)'
            )
        return weights
    return tuple(_number(f"loss.{key}", loss[key], 0) for key in ("w1", "w2", "w3"))


def _check_angle_composite(cfg: DictConfig) -> None:
    loss = cfg.loss
    weights = angle_weights(loss)
    key = "loss.weights" if loss.weights is not None else "loss.w1/w2/w3"
    if min(weights) < 0 or max(weights) == 0:
        raise ConfigError(
            key, list(weights), "weights must be >= 0 and not all zero (w1 cosine, w2 in-batch negatives, w3 angle)"
        )
    for name in ("cos_scale", "ibn_scale", "angle_scale"):
        _number(f"loss.{name}", loss[name], 0)
    _number("loss.positive_threshold", loss.positive_threshold, float("-inf"))


def _check_cached_mnrl(cfg: DictConfig) -> None:
    size = cfg.loss.mini_batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError("loss.mini_batch_size", size, "must be an integer >= 1")


def _check_cosent(cfg: DictConfig) -> None:
    if cfg.loss.similarity not in PAIRWISE_SIMILARITIES:
        raise ConfigError("loss.similarity", cfg.loss.similarity, f"must be one of {', '.join(PAIRWISE_SIMILARITIES)}")


def _check_gist(cfg: DictConfig) -> None:
    loss = cfg.loss
    _number("loss.scale", loss.scale, 0, strict=True)  # temperature inf would turn the masked -inf logits into NaN
    if loss.margin_strategy not in MARGIN_STRATEGIES:
        raise ConfigError(
            "loss.margin_strategy", loss.margin_strategy, f"must be one of {', '.join(MARGIN_STRATEGIES)}"
        )
    _number("loss.margin", loss.margin, float("-inf"))
    if not isinstance(loss.guide, str) or not loss.guide:
        raise ConfigError(
            "loss.guide",
            loss.guide,
            f"must be {BASE_GUIDE!r} (a frozen copy of the base model) or a SentenceTransformer name or path",
        )


def _check_learnable_scale(cfg: DictConfig) -> None:
    loss = cfg.loss
    scale = _number("loss.scale", loss.scale, 0, strict=True)
    if loss.max_scale is not None:
        _number("loss.max_scale", loss.max_scale, scale)
    if loss.scale_learning_rate is not None:
        _number("loss.scale_learning_rate", loss.scale_learning_rate, 0, strict=True)
    if cfg.trial.weight_decay > 0:
        raise ConfigError(
            "trial.weight_decay",
            cfg.trial.weight_decay,
            "must be 0 with loss.name=learnable_scale: decay would pull logit_scale towards 0 (scale 1)",
        )


TEXT_TUPLES = "(anchor, positive[, negative...]) text columns, no score/label"

LOSSES: dict[str, LossSpec] = {
    "mnrl": LossSpec(
        build=lambda model, cfg: ScaledMultipleNegativesRankingLoss(
            model, scale=cfg.loss.scale, similarity=cfg.loss.similarity
        ),
        columns=TEXT_TUPLES,
        accepts=_text_tuples,
    ),
    "cached_mnrl": LossSpec(
        build=lambda model, cfg: ScaledCachedMultipleNegativesRankingLoss(
            model, scale=cfg.loss.scale, similarity=cfg.loss.similarity, mini_batch_size=cfg.loss.mini_batch_size
        ),
        columns=TEXT_TUPLES,
        accepts=_text_tuples,
        check=_check_cached_mnrl,
        transformer_only=True,
        gradient_cache=True,
    ),
    "learnable_scale": LossSpec(
        build=lambda model, cfg: LearnableScaleMultipleNegativesRankingLoss(
            model, scale=cfg.loss.scale, similarity=cfg.loss.similarity, max_scale=cfg.loss.max_scale
        ),
        columns=TEXT_TUPLES,
        accepts=_text_tuples,
        check=_check_learnable_scale,
    ),
    "gist": LossSpec(
        build=gist_loss,
        columns="(anchor, positive) or (anchor, positive, negative) text columns, no score/label",
        accepts=_text_pairs_or_triplets,
        check=_check_gist,
        transformer_only=True,
    ),
    "cosent": LossSpec(
        build=lambda model, cfg: cosent_loss(model, scale=cfg.loss.scale, similarity=cfg.loss.similarity),
        columns="(sentence1, sentence2, score) pairs with a float score",
        accepts=_scored_pairs,
        check=_check_cosent,
    ),
    "angle": LossSpec(
        build=lambda model, cfg: angle_loss(model, scale=cfg.loss.scale),
        columns="(sentence1, sentence2, score) pairs, or (anchor, positive, negative...) text tuples",
        accepts=_scored_pairs_or_text_tuples,
    ),
    "angle_composite": LossSpec(
        build=lambda model, cfg: AnglECompositeLoss(
            model,
            *angle_weights(cfg.loss),
            cos_scale=cfg.loss.cos_scale,
            ibn_scale=cfg.loss.ibn_scale,
            angle_scale=cfg.loss.angle_scale,
            positive_threshold=cfg.loss.positive_threshold,
        ),
        columns="(sentence1, sentence2, score) pairs with a float score",
        accepts=_scored_pairs,
        check=_check_angle_composite,
    ),
}


def build_loss(model: SentenceTransformer, cfg: DictConfig) -> nn.Module:
    """The loss of `loss.name`, inside `loss.wrapper` when one is set."""
    return wrap(model, LOSSES[cfg.loss.name].build(model, cfg), cfg.loss.wrapper)


def training_callbacks(loss: nn.Module) -> list[TrainerCallback]:
    """Trainer callbacks a loss needs: the learnable scale's clamp after each optimizer step."""
    return [ScaleClampCallback(loss)] if learnable_scales(loss) else []


def resolve_loss(cfg: DictConfig) -> None:
    """Make derived loss keys consistent in place, so that logged params show what trains: angle_composite's
    `loss.weights` string sets w1, w2, w3."""
    if cfg.loss.name == "angle_composite" and cfg.loss.weights is not None:
        cfg.loss.w1, cfg.loss.w2, cfg.loss.w3 = angle_weights(cfg.loss)


def learning_rate_mapping(cfg: DictConfig) -> dict[str, float]:
    """Per-parameter learning rates for SentenceTransformerTrainingArguments(learning_rate_mapping=...):
    learnable_scale's `loss.scale_learning_rate` for its logit_scale (null: the trial's learning rate)."""
    if cfg.loss.name == "learnable_scale" and cfg.loss.scale_learning_rate is not None:
        return {r"logit_scale$": float(cfg.loss.scale_learning_rate)}
    return {}


def validate_loss(cfg: DictConfig) -> None:
    """Check the loss name, its parameters, its wrapper, the model it needs and that the training columns fit it."""
    name = cfg.loss.name
    if name not in LOSSES:
        raise ConfigError("loss.name", name, f"must be one of {', '.join(LOSSES)}")
    spec = LOSSES[name]
    if name in ("mnrl", "cached_mnrl", "learnable_scale") and cfg.loss.similarity not in SIMILARITIES:
        raise ConfigError("loss.similarity", cfg.loss.similarity, f"must be one of {', '.join(SIMILARITIES)}")
    columns = list(cfg.data.train.columns)
    if not spec.accepts(columns):
        raise ConfigError("data.train.columns", columns, f"loss {name} needs {spec.columns}")
    if spec.transformer_only and cfg.model.kind != "transformer":
        raise ConfigError("model.kind", cfg.model.kind, f"loss {name} needs model.kind=transformer")
    spec.check(cfg)
    validate_wrapper(cfg, spec.gradient_cache)
    if cfg.loss.get("scale") == 0 and cfg.trial.weight_decay > 0:
        raise ConfigError(
            "trial.weight_decay",
            cfg.trial.weight_decay,
            "must be 0 when loss.scale=0: with zero gradient, decay alone would still move the weights",
        )
