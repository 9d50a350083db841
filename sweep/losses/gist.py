"""GISTEmbedLoss: in-batch negatives filtered by a frozen guide model."""

from __future__ import annotations

import functools

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import GISTEmbedLoss

from sweep.config import LossConfig
from sweep.inputs import build_model, local_path
from sweep.losses.rules import BASE_GUIDE
from sweep.losses.spec import BaseModel, LossSpec


@functools.lru_cache(maxsize=2)
def _pretrained_guide(path: str, device: str) -> SentenceTransformer:
    """A frozen SentenceTransformer, loaded once per study and shared by its trials (it is never trained)."""
    return SentenceTransformer(path, device=device).eval().requires_grad_(False)


def guide_model(guide: str, base: BaseModel, device: str) -> SentenceTransformer:
    """The guide of `loss.guide`: ``base`` = a frozen copy of the trial's untrained base model; otherwise a
    SentenceTransformer hub name or path (known hub models load from their local package when
    `model.prefer_local`, as the base model does)."""
    if guide == BASE_GUIDE:
        return build_model(base.model, seed=base.seed, device=device).eval().requires_grad_(False)
    path = local_path(guide, base.model.prefer_local)
    return _pretrained_guide(path, device)


def from_config(model: SentenceTransformer, loss: LossConfig, base: BaseModel) -> GISTEmbedLoss:
    r"""sentence-transformers' GISTEmbedLoss with the guide of `loss.guide`, at temperature 1/`loss.scale`.

    For anchors a_i, positives p_i (and negatives n_i), candidates are the positives, other anchors, other
    positives (and negatives). A candidate c is dropped (logit -inf) when the guide finds it at least as similar
    to a_i as the positive, :math:`\cos_g(a_i, c) > \cos_g(a_i, p_i) - m` (absolute margin m; relative:
    :math:`m |\cos_g(a_i, p_i)|`); then

    .. math::
        L = -\frac{1}{B} \sum_i \log \frac{\exp(\cos(a_i, p_i) / \tau)}{\sum_{c \text{ kept}} \exp(\cos(a_i, c) / \tau)}

    with temperature :math:`\tau` = ``loss.temperature`` (default 0.01 = scale 100; both are logged, scale = 1/tau).

    Reference: Solatorio 2024, "GISTEmbed: Guided In-sample Selection of Training Negatives for Text Embedding
    Fine-tuning" (arXiv 2402.16829).

    Data: (anchor, positive) or (anchor, positive, negative) text columns, no label. Needs a transformer model
    (GISTEmbedLoss needs a Hugging Face tokenizer).
    """
    return GISTEmbedLoss(
        model,
        guide_model(loss.guide, base, str(model.device)),
        temperature=1.0 / loss.scale,
        margin_strategy=loss.margin_strategy,
        margin=loss.margin,
        contrast_anchors=loss.contrast_anchors,
        contrast_positives=loss.contrast_positives,
    )


SPEC = LossSpec(from_config)
