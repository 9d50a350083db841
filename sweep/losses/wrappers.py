"""Loss wrappers of `loss.wrapper`: MatryoshkaLoss, AdaptiveLayerLoss and Matryoshka2dLoss around any loss.

Keys (``sweep/conf/loss/wrapper/default.yaml``): ``name`` (null | matryoshka | adaptive_layer | matryoshka2d), ``dims``
and ``weights`` (lists or comma strings such as ``"384,256,128,64"``, so that a grid can sweep them),
``n_dims_per_step`` (null: the class default, -1 for MatryoshkaLoss and 1 for Matryoshka2dLoss),
``n_layers_per_step``, ``last_layer_weight``, ``prior_layers_weight``, ``kl_div_weight``, ``kl_temperature``,
``layer_weighting`` (uniform | log | linear). Each key is passed to the sentence-transformers class unchanged.
"""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss, Matryoshka2dLoss, MatryoshkaLoss
from torch import nn

from sweep.config.checks import parse_numbers, require_choice, require_int, require_number
from sweep.config.schema import LossConfig, ModelConfig, WrapperConfig
from sweep.errors import ConfigError
from sweep.inputs.model_source import model_shape

WRAPPERS = ("matryoshka", "adaptive_layer", "matryoshka2d")
LAYER_WEIGHTINGS = ("uniform", "log", "linear")
DIM_WRAPPERS = ("matryoshka", "matryoshka2d")
LAYER_WRAPPERS = ("adaptive_layer", "matryoshka2d")


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


def _check_step(key: str, value: Any, count: int, what: str) -> None:
    if not (isinstance(value, int) and value == -1):  # -1: all of them
        require_int(key, value, minimum=1, maximum=count, note=f"or -1 for all; {what}")


def validate_wrapper(loss: LossConfig, model: ModelConfig, gradient_cache: bool) -> None:
    """Check `loss.wrapper` against the model: dims (positive, strictly decreasing, <= the model dimension),
    weights, per-step counts, layer counts (<= the model's layers) and the wrapper/loss/model compatibility."""
    wrapper = loss.wrapper
    if wrapper.name is None:
        return
    require_choice("loss.wrapper.name", wrapper.name, WRAPPERS)
    if wrapper.name in LAYER_WRAPPERS:
        if model.kind != "transformer":
            raise ConfigError(
                "loss.wrapper.name", wrapper.name, "needs model.kind=transformer (a static model has no layers)"
            )
        if gradient_cache:
            raise ConfigError(
                "loss.wrapper.name",
                wrapper.name,
                f"does not work with loss {loss.name} (gradient caching); use matryoshka or loss.name=mnrl",
            )
    shape = model_shape(model)
    if wrapper.name in DIM_WRAPPERS:
        dims = parse_numbers("loss.wrapper.dims", wrapper.dims)
        if len(set(dims)) != len(dims) or list(dims) != sorted(dims, reverse=True) or dims[-1] < 1:
            raise ConfigError(
                "loss.wrapper.dims",
                wrapper.dims,
                'must be distinct positive dims in decreasing order, e.g. "384,256,128,64"',
            )
        if dims[0] > shape.dim:
            raise ConfigError("loss.wrapper.dims", wrapper.dims, f"must be <= the model dimension {shape.dim}")
        if wrapper.weights is not None:
            weights = parse_numbers("loss.wrapper.weights", wrapper.weights, float)
            if len(weights) != len(dims) or min(weights) < 0 or max(weights) == 0:
                raise ConfigError(
                    "loss.wrapper.weights",
                    wrapper.weights,
                    f"must be {len(dims)} numbers >= 0 (one per dim), not all zero",
                )
        if wrapper.n_dims_per_step is not None:
            _check_step("loss.wrapper.n_dims_per_step", wrapper.n_dims_per_step, len(dims), f"{len(dims)} dims")
    if wrapper.name in LAYER_WRAPPERS:
        assert shape.layers is not None  # a transformer (checked above) has layers
        _check_step(
            "loss.wrapper.n_layers_per_step",
            wrapper.n_layers_per_step,
            shape.layers,
            f"the model has {shape.layers} layers",
        )
        for key in ("last_layer_weight", "prior_layers_weight", "kl_div_weight", "kl_temperature"):
            require_number(f"loss.wrapper.{key}", getattr(wrapper, key), low=0)
        require_choice("loss.wrapper.layer_weighting", wrapper.layer_weighting, LAYER_WEIGHTINGS)
