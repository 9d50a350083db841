"""CachedMultipleNegativesRankingLoss (GradCache) that also accepts scale 0."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

from sweep.config import LossConfig
from sweep.losses import mnrl
from sweep.losses.spec import BaseModel, LossSpec


class ScaledCachedMultipleNegativesRankingLoss(CachedMultipleNegativesRankingLoss):
    r"""MNRL with gradient caching (GradCache), for any scale >= 0.

    The same loss as :class:`~sweep.losses.mnrl.ScaledMultipleNegativesRankingLoss`,

    .. math::
        L = -\frac{1}{B} \sum_i \log
        \frac{\exp(s \cdot \mathrm{sim}(a_i, p_i))}{\sum_j \exp(s \cdot \mathrm{sim}(a_i, c_j))},

    but the embeddings are computed in mini-batches of ``mini_batch_size`` without gradient, the loss and its
    gradient w.r.t. the embeddings on the full batch, then each mini-batch is re-encoded with gradient: memory
    does not grow with the batch size, so large batches (many in-batch negatives) fit. The result equals MNRL up
    to floating point. Scale 0 is the zero-gradient control: sentence-transformers rejects it in the
    constructor only, so the wrapped loss is built at scale 1 and then set to 0.

    Reference: Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup".

    Data: (anchor, positive[, negative...]) text columns, no label. Needs a transformer model (a StaticEmbedding
    input cannot be split into mini-batches).
    """

    def __init__(
        self, model: SentenceTransformer, scale: float = 20.0, similarity: str = "cosine", mini_batch_size: int = 32
    ) -> None:
        if not scale >= 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        super().__init__(
            model,
            scale=scale if scale > 0 else 1.0,
            similarity_fct=mnrl.SIMILARITIES[similarity],
            mini_batch_size=mini_batch_size,
        )
        self.loss.scale = float(scale)  # the wrapped MultipleNegativesRankingLoss holds the scale


def from_config(
    model: SentenceTransformer, loss: LossConfig, base: BaseModel
) -> ScaledCachedMultipleNegativesRankingLoss:
    return ScaledCachedMultipleNegativesRankingLoss(
        model, scale=loss.scale, similarity=loss.similarity, mini_batch_size=loss.mini_batch_size
    )


# its `scale` is the wrapped MNRL's (set through it)
SPEC = LossSpec(from_config, scheduled=ScaledCachedMultipleNegativesRankingLoss)
