"""AnglE's angle objective alone (sentence-transformers' AnglELoss)."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import AnglELoss

from sweep.config import LossConfig
from sweep.losses.spec import BaseModel, LossSpec


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> AnglELoss:
    r"""sentence-transformers' AnglELoss at scale `loss.scale`: CoSENT on the angle difference in complex space.

    Each embedding is split into real and imaginary halves, z = a + bi; for a pair (u, v), ``pairwise_angle_sim``
    scores the normalized complex division u / v, and

    .. math::
        L_{angle} = \log\Big(1 + \sum_{y_{ij} > y_{kl}}
        \exp\big(s \cdot (\Delta\theta_{kl} - \Delta\theta_{ij})\big)\Big)

    (the sign convention of the authors' reference code). This is the angle objective only; the paper's
    three-objective loss is ``angle_composite``. sentence-transformers' default scale is 20; the paper uses 1.0
    (temperature 1) for this term.

    Reference: Li and Li 2024, "AoE: Angle-optimized Embeddings for Semantic Textual Similarity" (arXiv 2309.12871).

    Data: (sentence1, sentence2, score) pairs, or (anchor, positive, negative...) text tuples (positives get
    label 1, negatives 0).
    """
    return AnglELoss(model, scale=loss.scale)


SPEC = LossSpec(from_config, scheduled=AnglELoss)
