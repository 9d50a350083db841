"""CoSENT: a ranking loss over pairs with gold similarity scores."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import CoSENTLoss
from sentence_transformers.util import pairwise_cos_sim, pairwise_dot_score

from sweep.config import LossConfig
from sweep.losses.spec import BaseModel, LossSpec

# the names of `sweep.losses.rules.PAIRWISE_SIMILARITIES`
PAIRWISE_SIMILARITIES = {"cosine": pairwise_cos_sim, "dot": pairwise_dot_score}


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> CoSENTLoss:
    r"""sentence-transformers' CoSENTLoss with the similarity `loss.similarity` at scale `loss.scale`.

    .. math::
        L = \log\Big(1 + \sum_{(i,j), (k,l):\ y_{ij} > y_{kl}}
        \exp\big(s \cdot (\mathrm{sim}_{kl} - \mathrm{sim}_{ij})\big)\Big)

    over all ordered pairs of input pairs in the batch, with scale s = 1/temperature (default 20). At s = 0 the
    loss is the constant log(1 + #ordered pairs) and the gradient is zero (the untrained control).

    Reference: Su 2022 / Huang et al. 2024, "CoSENT: Consistent Sentence Embedding via Similarity Ranking".

    Data: (sentence1, sentence2, score) with a float score (STSB: 0..1); only the order of the scores matters.
    """
    return CoSENTLoss(model, scale=loss.scale, similarity_fct=PAIRWISE_SIMILARITIES[loss.similarity])


SPEC = LossSpec(from_config, scheduled=CoSENTLoss)
