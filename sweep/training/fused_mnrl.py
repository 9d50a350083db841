"""MultipleNegativesRankingLoss for the K members of a fused model at once, each at its own scale."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class FusedMultipleNegativesRankingLoss(nn.Module):
    r"""MultipleNegativesRankingLoss (InfoNCE with in-batch negatives, cosine similarity) of K members, member k
    at scale s_k.

    For member k and a batch of (anchor_i, positive_i[, negative_i]) with candidates c_j (all positives, then all
    negatives), as K x B x D tensors:

    .. math::
        L_k = -\frac{1}{B} \sum_i \log
        \frac{\exp(s_k \cos(a_{k,i}, p_{k,i}))}{\sum_j \exp(s_k \cos(a_{k,i}, c_{k,j}))}

    computed with one batched matmul (K x B x B*(1+n)) and one cross-entropy. ``forward`` returns the K-vector of
    member losses (for logging and the divergence check); `objective` sums those of the live members, so that each
    member's gradient is exactly that of its own loss (the members' parameters are disjoint). Scale 0 is allowed
    (every logit 0, the loss ln(#candidates), no gradient), as in `sweep.losses.ScaledMultipleNegativesRankingLoss`.

    Reference: sentence-transformers `MultipleNegativesRankingLoss` (query_to_doc, cos_sim); Henderson et al. 2017;
    van den Oord et al. 2018 (InfoNCE).
    """

    scales: Tensor  # K, a buffer: it moves with the module to the members' device

    def __init__(self, scales: Sequence[float]) -> None:
        super().__init__()
        if not all(s >= 0 for s in scales):
            raise ValueError(f"every scale must be >= 0, got {list(scales)}")
        self.register_buffer("scales", torch.tensor([float(s) for s in scales]))

    def forward(self, anchors: Tensor, *candidates: Tensor) -> Tensor:
        members, batch, _ = anchors.shape
        docs = torch.cat(candidates, dim=1)
        cosine = F.normalize(anchors, p=2, dim=-1) @ F.normalize(docs, p=2, dim=-1).transpose(1, 2)
        scores = cosine * self.scales.view(members, 1, 1)
        labels = torch.arange(batch, device=anchors.device).repeat(members)
        losses = F.cross_entropy(scores.reshape(members * batch, -1), labels, reduction="none")
        return losses.view(members, batch).mean(dim=1)

    @staticmethod
    def objective(losses: Tensor, live: Tensor) -> Tensor:
        """The sum of the live members' losses (a member that left adds neither its loss nor a NaN gradient)."""
        return torch.where(live, losses, torch.zeros_like(losses)).sum()
