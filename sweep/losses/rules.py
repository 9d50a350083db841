"""The config rules of every loss, one registry keyed by `loss.name` (`RULES`): the training columns it needs, the
checks of its parameters, the keys it derives and what it asks of the model and the trial.

What the validation pass reads of a loss, apart from its class: nothing here imports torch or sentence-transformers.
Each loss's class and its construction from the config stay in its own module (`mnrl.py`, `gist.py`, ...), declared
as a `LossSpec` (`sweep.losses.spec`) in `sweep.losses.registry.LOSSES`, keyed by the same names (a test holds the
two registries to one list of names)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sweep.config import MAX_SCALE, LossConfig, parse_numbers, require_bool, require_choice, require_int, require_number
from sweep.errors import ConfigError
from sweep.losses.columns import (
    SCORED_PAIRS,
    SCORED_PAIRS_OR_TEXT_TUPLES,
    TEXT_PAIRS_OR_TRIPLETS,
    TEXT_TUPLES,
    Columns,
)

SIMILARITIES = ("cosine", "dot")  # `loss.similarity` of the MNRL family (mnrl.py maps each to its function)
PAIRWISE_SIMILARITIES = ("cosine", "dot")  # `loss.similarity` of CoSENT (cosent.py maps each to its function)
BASE_GUIDE = "base"  # `loss.guide` of GIST: a frozen copy of the trial's untrained base model
MARGIN_STRATEGIES = ("absolute", "relative")


def _nothing(loss: LossConfig) -> None:
    return None


def _no_derived_keys(loss: LossConfig) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class LossRules:
    """What the config of one loss of `loss.name` must satisfy, and the keys it derives."""

    columns: Columns  # what `data.train.columns` must be
    check: Callable[[LossConfig], None] = _nothing  # raises ConfigError on a bad parameter of the `loss` section
    resolve: Callable[[LossConfig], dict[str, Any]] = _no_derived_keys  # derived loss keys: {dotted key: value}
    transformer_only: bool = False  # needs model.kind=transformer
    gradient_cache: bool = False  # back-propagates from a hook (no layer wrappers)
    weight_decay: str | None = None  # why trial.weight_decay must be 0 with this loss (None: any decay)
    schedulable: bool = False  # one fixed scale that loss.scale_schedule can set (its LossSpec names its holder)


def check_similarity(loss: LossConfig) -> None:
    """MNRL's: `loss.similarity` is one it knows."""
    require_choice("loss.similarity", loss.similarity, SIMILARITIES)


def _cached_mnrl(loss: LossConfig) -> None:
    check_similarity(loss)
    require_int("loss.mini_batch_size", loss.mini_batch_size)


def _uniformity(loss: LossConfig) -> None:
    check_similarity(loss)
    require_number("loss.uniformity_weight", loss.uniformity_weight, low=0)
    require_number("loss.uniformity_t", loss.uniformity_t, low=0, strict=True)


def check_scales(scale: float, max_scale: float | None, prefix: str = "") -> None:
    """The learnable scale's: the initial scale is > 0 (it is stored as its log) and the clamp, when set, is >= it."""
    require_number(f"{prefix}scale", scale, low=0, strict=True, note="the initial scale, stored as its log")
    if max_scale is not None:
        require_number(f"{prefix}max_scale", max_scale, low=scale)


def _learnable_scale(loss: LossConfig) -> None:
    check_similarity(loss)
    check_scales(loss.scale, loss.max_scale, prefix="loss.")
    if loss.scale_learning_rate is not None:
        require_number("loss.scale_learning_rate", loss.scale_learning_rate, low=0, strict=True)


def _gist(loss: LossConfig) -> None:
    require_number("loss.scale", loss.scale, low=0, strict=True)  # temperature inf: the masked -inf logits turn NaN
    require_choice("loss.margin_strategy", loss.margin_strategy, MARGIN_STRATEGIES)
    require_number("loss.margin", loss.margin, -2.0, 2.0, note="a difference of cosines")
    require_bool("loss.contrast_anchors", loss.contrast_anchors)
    require_bool("loss.contrast_positives", loss.contrast_positives)
    if not isinstance(loss.guide, str) or not loss.guide:
        raise ConfigError(
            "loss.guide",
            loss.guide,
            f"must be {BASE_GUIDE!r} (a frozen copy of the base model) or a SentenceTransformer name or path",
        )


def _cosent(loss: LossConfig) -> None:
    require_choice("loss.similarity", loss.similarity, PAIRWISE_SIMILARITIES)


def check_weights(key: str, weights: tuple[float, float, float]) -> None:
    """AnglE's (w1, w2, w3) are >= 0 and not all zero."""
    if min(weights) < 0 or max(weights) == 0:
        raise ConfigError(
            key, list(weights), "weights must be >= 0 and not all zero (w1 cosine, w2 in-batch negatives, w3 angle)"
        )


def angle_weights(loss: LossConfig) -> tuple[float, float, float]:
    """AnglE's (w1, w2, w3): `loss.weights` ("w1,w2,w3", a grid-friendly string) wins over w1/w2/w3."""
    if loss.weights is not None:
        parsed = parse_numbers("loss.weights", loss.weights, float)
        if len(parsed) != 3:
            raise ConfigError(
                "loss.weights", loss.weights, 'must be three numbers "w1,w2,w3" (cosine, in-batch negatives, angle)'
            )
        return parsed[0], parsed[1], parsed[2]
    w1, w2, w3 = (require_number(f"loss.{key}", loss[key], low=0) for key in ("w1", "w2", "w3"))
    return w1, w2, w3


def _angle_composite(loss: LossConfig) -> None:
    check_weights("loss.weights" if loss.weights is not None else "loss.w1/w2/w3", angle_weights(loss))
    for name in ("cos_scale", "ibn_scale", "angle_scale"):
        require_number(f"loss.{name}", loss[name], low=0, high=MAX_SCALE)
    require_number("loss.positive_threshold", loss.positive_threshold, 0.0, 1.0, note="a pair's gold score, 0..1")


def _angle_composite_keys(loss: LossConfig) -> dict[str, float]:
    """The logged params show what trains: a `loss.weights` string sets w1, w2, w3."""
    if loss.weights is None:
        return {}
    return dict(zip(("loss.w1", "loss.w2", "loss.w3"), angle_weights(loss), strict=True))


RULES: dict[str, LossRules] = {
    "mnrl": LossRules(TEXT_TUPLES, check=check_similarity, schedulable=True),
    "mnrl_uniformity": LossRules(TEXT_TUPLES, check=_uniformity, schedulable=True),
    "cached_mnrl": LossRules(
        TEXT_TUPLES,
        check=_cached_mnrl,
        transformer_only=True,  # a StaticEmbedding input cannot be split into mini-batches
        gradient_cache=True,
        schedulable=True,  # its `scale` is the wrapped MNRL's (set through it)
    ),
    "learnable_scale": LossRules(
        TEXT_TUPLES,
        check=_learnable_scale,
        weight_decay="must be 0 with loss.name=learnable_scale: decay would pull logit_scale towards 0 (scale 1)",
    ),
    "gist": LossRules(TEXT_PAIRS_OR_TRIPLETS, check=_gist, transformer_only=True),  # a Hugging Face tokenizer
    "cosent": LossRules(SCORED_PAIRS, check=_cosent, schedulable=True),
    "angle": LossRules(SCORED_PAIRS_OR_TEXT_TUPLES, schedulable=True),
    "angle_composite": LossRules(SCORED_PAIRS, check=_angle_composite, resolve=_angle_composite_keys),
}
