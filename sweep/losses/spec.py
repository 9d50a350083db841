"""What every loss module declares for the registry: its training-columns rule, its checks, its construction from
the config and the model it needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sentence_transformers import SentenceTransformer
from torch import nn

from sweep.config.schema import LossConfig, ModelConfig

LABELS = {"score", "label"}


@dataclass(frozen=True)
class Columns:
    """A training-columns rule: what a loss needs, in words, and whether a list of columns fits it."""

    description: str
    accepts: Callable[[list[str]], bool]


def _text_tuples(columns: list[str]) -> bool:
    return len(columns) >= 2 and not LABELS & set(columns)


def _scored_pairs(columns: list[str]) -> bool:
    return len(columns) == 3 and len(LABELS & set(columns)) == 1


TEXT_TUPLES = Columns("(anchor, positive[, negative...]) text columns, no score/label", _text_tuples)
TEXT_PAIRS_OR_TRIPLETS = Columns(
    "(anchor, positive) or (anchor, positive, negative) text columns, no score/label",
    lambda columns: _text_tuples(columns) and len(columns) <= 3,
)
SCORED_PAIRS = Columns("(sentence1, sentence2, score) pairs with a float score", _scored_pairs)
SCORED_PAIRS_OR_TEXT_TUPLES = Columns(
    "(sentence1, sentence2, score) pairs, or (anchor, positive, negative...) text tuples",
    lambda columns: _scored_pairs(columns) or (_text_tuples(columns) and len(columns) >= 3),
)


def _nothing(loss: LossConfig) -> None:
    return None


def _no_learning_rates(loss: LossConfig) -> dict[str, float]:
    return {}


def _no_derived_keys(loss: LossConfig) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class BaseModel:
    """The trial's base model as config (its `model` section and `trial.seed`), for a loss that builds another copy
    of it (GIST's ``base`` guide)."""

    model: ModelConfig
    seed: int


@dataclass(frozen=True)
class LossSpec:
    """One loss of `loss.name`, as its module declares it."""

    from_config: Callable[[SentenceTransformer, LossConfig, BaseModel], nn.Module]  # (model, `loss`, base model)
    columns: Columns
    check: Callable[[LossConfig], None] = _nothing  # raises ConfigError on a bad parameter of the `loss` section
    resolve: Callable[[LossConfig], dict[str, Any]] = _no_derived_keys  # derived loss keys: {dotted key: value}
    learning_rates: Callable[[LossConfig], dict[str, float]] = _no_learning_rates  # per-parameter, by name pattern
    transformer_only: bool = False  # needs model.kind=transformer
    gradient_cache: bool = False  # back-propagates from a hook (no layer wrappers)
    weight_decay: str | None = None  # why trial.weight_decay must be 0 with this loss (None: any decay)
    scheduled: type[nn.Module] | None = None  # the module whose `scale` loss.scale_schedule sets (None: constant only)
