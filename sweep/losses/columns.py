"""The training-columns rules of the losses: what a loss needs of `data.train.columns`, in words, and whether a list of
columns fits it (`sweep.losses.rules` names one per loss)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
