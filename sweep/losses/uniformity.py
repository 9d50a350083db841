"""MultipleNegativesRankingLoss plus Wang & Isola's uniformity term: a push on every pair of the batch, easy
negatives included, to test whether the softmax's neglect of easy negatives is what lets cosines drift up."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor

from sweep.config import LossConfig
from sweep.losses import mnrl
from sweep.losses.spec import BaseModel, LossSpec


def uniformity(embeddings: Tensor, t: float = 2.0) -> Tensor:
    r"""Wang & Isola's uniformity loss of a set of embeddings: :math:`\log \mathrm{mean}_{i<j}
    \exp(-t \lVert u_i - u_j \rVert^2)` over the L2-normalised rows :math:`u_i` (lower: more uniform on the sphere).
    With unit vectors :math:`\lVert u_i - u_j \rVert^2 = 2 - 2\cos(u_i, u_j)`, so every pair is pushed apart in
    proportion to :math:`e^{2t\cos}`: easy negatives too, unlike the softmax at a high scale."""
    unit = F.normalize(embeddings, dim=-1)
    squared = torch.pdist(unit, p=2).pow(2)
    return torch.logsumexp(-t * squared, dim=0) - torch.log(torch.tensor(float(squared.numel())))


class UniformityRegularizedMNRL(mnrl.ScaledMultipleNegativesRankingLoss):
    r"""MultipleNegativesRankingLoss (InfoNCE at scale :math:`s`) plus a weighted uniformity term on the batch's
    anchors and positives:

    .. math::
        L = L_{\mathrm{MNRL}}(s) + \lambda \log \frac{1}{\binom{n}{2}} \sum_{i<j} e^{-t \lVert u_i - u_j \rVert^2}

    over the :math:`n = 2B` normalised anchor and positive embeddings of a batch of :math:`B`. At a high scale the
    softmax puts its weight on the hardest negative and leaves the easy ones where they are; the uniformity term
    pushes on every pair. :math:`\lambda = 0` is plain MNRL (the term is not computed).

    Reference: Wang & Isola 2020, "Understanding Contrastive Representation Learning through Alignment and
    Uniformity on the Hypersphere" (ICML), the uniformity loss with t = 2; Henderson et al. 2017 (MNRL).

    Data: (anchor, positive) pairs or (anchor, positive, negative_1, ...) tuples, as MNRL.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        scale: float = 20.0,
        similarity: str = "cosine",
        uniformity_weight: float = 0.1,
        uniformity_t: float = 2.0,
    ) -> None:
        super().__init__(model, scale=scale, similarity=similarity)
        self.uniformity_weight = float(uniformity_weight)
        self.uniformity_t = float(uniformity_t)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        loss = super().compute_loss_from_embeddings(embeddings, labels)
        if self.uniformity_weight == 0:
            return loss
        pushed = torch.cat(embeddings[:2], dim=0)  # anchors and positives: the texts a batch is about
        return loss + self.uniformity_weight * uniformity(pushed, self.uniformity_t)

    @property
    def citation(self) -> str:
        return super().citation + (
            "\n@inproceedings{wang2020understanding, title={Understanding Contrastive Representation Learning through "
            "Alignment and Uniformity on the Hypersphere}, author={Wang, Tongzhou and Isola, Phillip}, "
            "booktitle={ICML}, year={2020}}"
        )


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> UniformityRegularizedMNRL:
    return UniformityRegularizedMNRL(
        model,
        scale=loss.scale,
        similarity=loss.similarity,
        uniformity_weight=loss.uniformity_weight,
        uniformity_t=loss.uniformity_t,
    )


SPEC = LossSpec(from_config, scheduled=UniformityRegularizedMNRL)
