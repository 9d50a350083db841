"""MultipleNegativesRankingLoss with a trainable scale (CLIP's learnable temperature)."""

from __future__ import annotations

import math
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor, nn
from transformers import TrainerCallback

from sweep.config import LossConfig
from sweep.losses import mnrl
from sweep.losses.rules import check_scales
from sweep.losses.spec import BaseModel, LossSpec


class LearnableScaleMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    r"""MNRL whose scale is learned with the model, stored as a log (Radford et al. 2021, CLIP).

    .. math::
        s = e^{\lambda}, \quad \lambda_0 = \log s_0, \qquad
        L = -\frac{1}{B} \sum_i \log
        \frac{\exp(s \cdot \mathrm{sim}(a_i, p_i))}{\sum_j \exp(s \cdot \mathrm{sim}(a_i, c_j))}

    ``logit_scale`` (:math:`\lambda`) is an ``nn.Parameter`` of the loss; SentenceTransformerTrainer builds its
    optimizer from the loss module's parameters (which include the model's), so it is trained. The optional clamp
    at ``max_scale`` (CLIP: 100) acts as CLIP's does, on the parameter's value after each optimizer step
    (:class:`ScaleClampCallback`, :meth:`clamp_`), never in the forward pass: the gradient keeps flowing, so a scale
    at the clamp comes back down when the loss asks (a clamp inside the forward pass has zero gradient above it, and
    float32 ``exp(log(100))`` is already above 100). Weight decay would pull :math:`\lambda` towards 0
    (scale 1), so ``trial.weight_decay`` must be 0 with this loss (CLIP exempts it too). ``logged_metrics()``
    reports the current ``learned_scale`` and ``learned_temperature``, and ``learned_scale_clamp_step``, the first
    optimizer step whose update the clamp cut back, once that has happened.

    Reference: Radford et al. 2021, "Learning Transferable Visual Models From Natural Language Supervision";
    Henderson et al. 2017 and van den Oord et al. 2018 for MNRL/InfoNCE.

    Data: (anchor, positive[, negative...]) text columns, no label.
    """

    logit_scale: nn.Parameter  # created by the first `scale` assignment (in MultipleNegativesRankingLoss.__init__)

    def __init__(
        self,
        model: SentenceTransformer,
        scale: float = 20.0,
        similarity: str = "cosine",
        max_scale: float | None = None,
    ) -> None:
        check_scales(scale, max_scale)
        super().__init__(model, scale=scale, similarity_fct=mnrl.SIMILARITIES[similarity])
        self.max_scale = max_scale
        self.clamp_step: int | None = None

    @property  # type: ignore[override]  # MNRL's float scale, here a tensor that carries the gradient
    def scale(self) -> Tensor:
        return self.logit_scale.exp()

    @scale.setter
    def scale(self, value: float) -> None:
        """Set the scale (MultipleNegativesRankingLoss.__init__ sets the initial one): logit_scale = log(value)."""
        if "logit_scale" in self._parameters:
            with torch.no_grad():
                self.logit_scale.fill_(math.log(value))
        else:
            self.logit_scale = nn.Parameter(torch.tensor(math.log(value)))

    @torch.no_grad()
    def clamp_(self) -> bool:
        """Clip ``logit_scale`` to ``log(max_scale)`` in place (after an optimizer step); True when it was above."""
        if self.max_scale is None or not bool(self.logit_scale > math.log(self.max_scale)):
            return False
        self.logit_scale.fill_(math.log(self.max_scale))
        return True

    def logged_metrics(self) -> dict[str, float]:
        scale = float(self.scale.detach())
        metrics = {"learned_scale": scale, "learned_temperature": 1.0 / scale}
        if self.clamp_step is not None:
            metrics["learned_scale_clamp_step"] = float(self.clamp_step)
        return metrics


class ScaleClampCallback(TrainerCallback):
    """Clamps every learnable scale inside ``loss`` after each optimizer step (CLIP) and records the first step
    at which a clamp acted."""

    def __init__(self, loss: nn.Module) -> None:
        self.losses = learnable_scales(loss)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        for loss in self.losses:
            if loss.clamp_() and loss.clamp_step is None:
                loss.clamp_step = state.global_step


def learnable_scales(loss: nn.Module) -> list[LearnableScaleMultipleNegativesRankingLoss]:
    """The learnable-scale losses inside ``loss`` (itself, or inside a wrapper)."""
    return [m for m in loss.modules() if isinstance(m, LearnableScaleMultipleNegativesRankingLoss)]


def from_config(
    model: SentenceTransformer, loss: LossConfig, base: BaseModel
) -> LearnableScaleMultipleNegativesRankingLoss:
    return LearnableScaleMultipleNegativesRankingLoss(
        model, scale=loss.scale, similarity=loss.similarity, max_scale=loss.max_scale
    )


def learning_rates(loss: LossConfig) -> dict[str, float]:
    """`loss.scale_learning_rate` for the logit_scale parameter (null: the trial's learning rate)."""
    if loss.scale_learning_rate is None:
        return {}
    return {r"logit_scale$": float(loss.scale_learning_rate)}


SPEC = LossSpec(from_config, learning_rates=learning_rates)
