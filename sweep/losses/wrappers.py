"""Loss wrappers of `loss.wrapper`: MatryoshkaLoss, AdaptiveLayerLoss and Matryoshka2dLoss around any loss.

Keys (``sweep/conf/loss/wrapper/default.yaml``): ``name`` (null | matryoshka | adaptive_layer | matryoshka2d), ``dims``
and ``weights`` (lists or comma strings such as ``"384,256,128,64"``, so that a grid can sweep them),
``n_dims_per_step`` (null: the class default, -1 for MatryoshkaLoss and 1 for Matryoshka2dLoss),
``n_layers_per_step``, ``last_layer_weight``, ``prior_layers_weight``, ``kl_div_weight``, ``kl_temperature``,
``layer_weighting`` (uniform | log | linear). Each key is passed to the sentence-transformers class unchanged; their
checks against the loss and the model are `sweep.losses.wrapper_checks`'.
"""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss, Matryoshka2dLoss, MatryoshkaLoss
from torch import nn

from sweep.config import WrapperConfig, parse_numbers


def _dims_and_weights(wrapper: WrapperConfig) -> dict[str, Any]:
    dims = parse_numbers("loss.wrapper.dims", wrapper.dims)
    weights = parse_numbers("loss.wrapper.weights", wrapper.weights, float) if wrapper.weights is not None else None
    step = {} if wrapper.n_dims_per_step is None else {"n_dims_per_step": wrapper.n_dims_per_step}
    return {"matryoshka_dims": list(dims), "matryoshka_weights": list(weights) if weights else None, **step}


def _layer_params(wrapper: WrapperConfig) -> dict[str, Any]:
    keys = (
        "n_layers_per_step",
        "last_layer_weight",
        "prior_layers_weight",
        "kl_div_weight",
        "kl_temperature",
        "layer_weighting",
    )
    return {key: getattr(wrapper, key) for key in keys}


def wrap(model: SentenceTransformer, loss: nn.Module, wrapper: WrapperConfig) -> nn.Module:
    r"""`loss` inside the wrapper `wrapper.name` (or unchanged when null).

    - matryoshka (Kusupati et al. 2022): :math:`\sum_d w_d L(\mathrm{normalize}(e_{:d}))` over ``dims``.
    - adaptive_layer (Li et al. 2024, 2DMSE): :math:`w_{last} L(e^{(L)}) + \frac{w_{prior}}{|S|} \sum_{k \in S}
      \omega_k L(e^{(k)}) + w_{KL} \tau \,
      \mathrm{KL}(\mathrm{softmax}(e^{(L)}/\tau) \| \mathrm{softmax}(e^{(k)}/\tau))`
      over ``n_layers_per_step`` sampled prior layers S (the teacher is detached in sentence-transformers 6.x).
    - matryoshka2d: adaptive_layer around matryoshka.

    The wrapped loss's ``logged_metrics`` (learnable scale, AnglE terms) stays reachable on the wrapper.
    """
    if wrapper.name is None:
        return loss
    wrapped: nn.Module
    if wrapper.name == "matryoshka":
        wrapped = MatryoshkaLoss(model, loss, **_dims_and_weights(wrapper))
    elif wrapper.name == "adaptive_layer":
        wrapped = AdaptiveLayerLoss(model, loss, **_layer_params(wrapper))
    else:
        wrapped = Matryoshka2dLoss(model, loss, **_dims_and_weights(wrapper), **_layer_params(wrapper))
    if hasattr(loss, "logged_metrics"):
        wrapped.logged_metrics = loss.logged_metrics
    return wrapped
