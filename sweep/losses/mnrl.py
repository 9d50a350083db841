"""MultipleNegativesRankingLoss that also accepts scale 0."""

from __future__ import annotations

import math

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.util import cos_sim, dot_score

from sweep.config import LossConfig
from sweep.losses.spec import BaseModel, LossSpec

SIMILARITIES = {"cosine": cos_sim, "dot": dot_score}  # the names of `sweep.losses.rules.SIMILARITIES`


class ScaledMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    r"""MultipleNegativesRankingLoss (InfoNCE with in-batch negatives) for any scale >= 0.

    For a batch of (anchor_i, positive_i[, negative_i]) with candidates c_j (all positives, then all negatives):

    .. math::
        L = -\frac{1}{B} \sum_i \log
        \frac{\exp(s \cdot \mathrm{sim}(a_i, p_i))}{\sum_j \exp(s \cdot \mathrm{sim}(a_i, c_j))}

    with scale s = 1/temperature. At s = 0 every logit is exactly 0, the loss is the constant ln(#candidates)
    and the gradient is exactly zero: training runs but nothing is learned (the untrained control of a
    sweep). sentence-transformers 6.2 rejects ``scale=0`` in its constructor only; the forward pass is
    unchanged, so this subclass relaxes that check and nothing else.

    Reference: Henderson et al. 2017, "Efficient Natural Language Response Suggestion for Smart Reply";
    van den Oord et al. 2018 (InfoNCE).

    Data: (anchor, positive) pairs or (anchor, positive, negative_1, ..., negative_n) tuples; no label column.
    """

    def __init__(self, model: SentenceTransformer, scale: float = 20.0, similarity: str = "cosine") -> None:
        if not scale >= 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        super().__init__(model, scale=scale if scale > 0 else 1.0, similarity_fct=SIMILARITIES[similarity])
        self.scale = float(scale)

    @property
    def temperature(self) -> float:
        return math.inf if self.scale == 0 else 1.0 / self.scale


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> ScaledMultipleNegativesRankingLoss:
    return ScaledMultipleNegativesRankingLoss(model, scale=loss.scale, similarity=loss.similarity)


SPEC = LossSpec(from_config, scheduled=ScaledMultipleNegativesRankingLoss)
