"""The AnglE paper's loss: weighted cosine, in-batch-negative and angle objectives."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss
from torch import Tensor, nn

from sweep.config import LossConfig
from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.losses.rules import angle_weights, check_weights
from sweep.losses.spec import BaseModel, LossSpec

TERMS = ("cos", "ibn", "angle")


class AnglECompositeLoss(nn.Module):
    r"""AnglE (Li and Li 2024): :math:`L = w_1 L_{cos} + w_2 L_{ibn} + w_3 L_{angle}`, one forward pass.

    For a batch of pairs (x_i, y_i) with gold scores g_i:

    - :math:`L_{cos}`: sentence-transformers' ``CoSENTLoss`` at scale ``s_cos`` (paper: 20),
      :math:`\log(1 + \sum_{g_{ij} > g_{kl}} \exp(s_{cos} (\cos_{kl} - \cos_{ij})))`.
    - :math:`L_{ibn}`: in-batch negatives over the m positive pairs P = {i : g_i >= threshold} (paper eq. 5),
      :math:`-\frac{1}{m} \sum_{i \in P} \log
      \frac{\exp(s_{ibn} \cos(x_i, y_i))}{\sum_{j=1}^{B} \exp(s_{ibn} \cos(x_i, y_j))}`:
      every second text of the batch is a candidate. Computed by MNRL with anchors x_P, positives y_P and
      the other pairs' y as extra negatives; 0 when the batch has no positive pair. Paper scale 20.
    - :math:`L_{angle}`: sentence-transformers' ``AnglELoss`` at scale ``s_angle`` (paper: 1.0).

    The weights must be >= 0 and not all zero; a zero-weight term is not added (its value is still reported).
    ``logged_metrics()`` gives the unweighted terms of the last batch (``loss_cos``, ``loss_ibn``, ``loss_angle``).
    The angle-emb library's defaults changed over time (w = 1/1/1, later 0/1/0.02): record them with every run.

    Reference: Li and Li 2024, "AoE: Angle-optimized Embeddings for Semantic Textual Similarity" (arXiv 2309.12871).

    Data: (sentence1, sentence2, score) pairs with float scores.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        w1: float = 1.0,
        w2: float = 1.0,
        w3: float = 1.0,
        cos_scale: float = 20.0,
        ibn_scale: float = 20.0,
        angle_scale: float = 1.0,
        positive_threshold: float = 0.8,
    ) -> None:
        super().__init__()
        weights = (w1, w2, w3)
        check_weights("w1/w2/w3", weights)
        self.model = model
        self.weights = dict(zip(TERMS, map(float, weights), strict=True))
        self.positive_threshold = positive_threshold
        self.cosent = CoSENTLoss(model, scale=cos_scale)
        self.ibn = ScaledMultipleNegativesRankingLoss(model, scale=ibn_scale)
        self.angle = AnglELoss(model, scale=angle_scale)
        self.last_terms: dict[str, float] = {}

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        return self.compute_loss_from_embeddings(embed_columns(self.model, sentence_features), labels)

    def in_batch_negatives(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        """:math:`L_{ibn}` over the pairs whose score is >= the positive threshold."""
        first, second = embeddings
        positive = labels.view(-1) >= self.positive_threshold
        if not positive.any():
            return first.sum() * 0.0
        candidates = [first[positive], second[positive], second[~positive]]
        return self.ibn.compute_loss_from_embeddings(candidates, None)  # type: ignore[arg-type]  # MNRL ignores labels

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        terms = {
            "cos": self.cosent.compute_loss_from_embeddings(embeddings, labels),
            "ibn": self.in_batch_negatives(embeddings, labels),
            "angle": self.angle.compute_loss_from_embeddings(embeddings, labels),
        }
        self.last_terms = {f"loss_{name}": float(value.detach()) for name, value in terms.items()}
        return torch.stack(
            [self.weights[name] * value for name, value in terms.items() if self.weights[name] > 0]
        ).sum()

    def logged_metrics(self) -> dict[str, float]:
        return dict(self.last_terms)


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> AnglECompositeLoss:
    return AnglECompositeLoss(
        model,
        *angle_weights(loss),
        cos_scale=loss.cos_scale,
        ibn_scale=loss.ibn_scale,
        angle_scale=loss.angle_scale,
        positive_threshold=loss.positive_threshold,
    )


SPEC = LossSpec(from_config)
