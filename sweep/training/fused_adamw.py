"""One optimizer step for the K members of a fused model: per-member gradient clipping, learning-rate schedule and
AdamW, each computed once over the stacked parameter (member k is the k-th slice of its leading dimension)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def linear_warmup_decay(step: int, warmup_steps: int, total_steps: int) -> float:
    """The factor of the base learning rate at `step`: transformers' `get_linear_schedule_with_warmup`, 0 to 1 over
    the warmup steps, then down to 0 at `total_steps`."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


class FusedAdamW:
    r"""AdamW over a stacked parameter of K members, each with its own learning rate, gradient clipping and
    linear warmup-and-decay schedule; a member that left (``live`` false) no longer changes.

    For member k at step t (1-based), with its gradient g_k (its own slice), base learning rate lr_k and
    schedule factor f(t-1) (`linear_warmup_decay`, as the `LambdaLR` of transformers reads it before stepping):

    .. math::
        g_k \leftarrow g_k \cdot \min\left(1, \frac{c}{\lVert g_k \rVert_2 + 10^{-6}}\right), \quad
        \eta_k = lr_k f(t-1), \quad
        \theta_k \leftarrow \theta_k (1 - \eta_k \lambda)

    .. math::
        m_k \leftarrow \beta_1 m_k + (1-\beta_1) g_k, \quad v_k \leftarrow \beta_2 v_k + (1-\beta_2) g_k^2, \quad
        \theta_k \leftarrow \theta_k - \frac{\eta_k}{1-\beta_1^t} \frac{m_k}{\sqrt{v_k}/\sqrt{1-\beta_2^t} + \epsilon}

    Inputs: the stacked parameter (K x ...), the K base learning rates, the steps of the schedule.
    Reference: ``torch.nn.utils.clip_grad_norm_`` (max_norm c), ``torch.optim.AdamW`` (the single-tensor
    algorithm, same operation order) and transformers' ``get_linear_schedule_with_warmup``, applied to each
    member alone.
    """

    def __init__(
        self,
        param: Tensor,
        members: int,
        learning_rates: Sequence[float],
        total_steps: int,
        warmup_steps: int = 0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 1.0,
    ) -> None:
        if len(learning_rates) != members:
            raise ValueError(f"{len(learning_rates)} learning rates for {members} members")
        self.param, self.members = param, members
        self.base_lrs = torch.tensor([float(lr) for lr in learning_rates], dtype=torch.float64)
        self.total_steps, self.warmup_steps = total_steps, warmup_steps
        self.betas, self.eps, self.weight_decay, self.max_grad_norm = betas, eps, weight_decay, max_grad_norm
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.steps = 0

    def _per_member(self, values: Tensor) -> Tensor:
        """A float64 K-vector, computed in float64 as torch.optim.AdamW computes its Python-float scalars, cast to
        the parameter's dtype to broadcast over its K x 1 x n view."""
        return values.to(self.param.dtype).view(self.members, 1, 1)

    def learning_rates(self) -> Tensor:
        """The K learning rates of the next step (base rate times the schedule), float64."""
        return self.base_lrs * linear_warmup_decay(self.steps, self.warmup_steps, self.total_steps)

    @torch.no_grad()
    def step(self, live: Tensor) -> Tensor:
        """Clip each live member's gradient, step it and advance the schedule; the members' gradient norms before
        clipping (K, NaN for a member that left) are returned for logging."""
        grad = self.param.grad
        if grad is None:
            raise RuntimeError("no gradient: call backward() on the objective first")
        stacked = grad.view(self.members, 1, -1)
        stacked[~live] = 0.0  # a member that left: its NaN/inf gradient must not reach the shared operations
        norms = torch.linalg.vector_norm(stacked, dim=-1).view(self.members)
        if self.max_grad_norm is not None:
            coef = torch.clamp(self.max_grad_norm / (norms + 1e-6), max=1.0)
            stacked.mul_(coef.view(self.members, 1, 1))
        lrs = torch.where(live, self.learning_rates(), torch.zeros_like(self.base_lrs))
        self.steps += 1
        beta1, beta2 = self.betas
        param = self.param.data.view(self.members, 1, -1)
        exp_avg, exp_avg_sq = self.exp_avg.view_as(param), self.exp_avg_sq.view_as(param)
        param.mul_(self._per_member(1 - lrs * self.weight_decay))
        exp_avg.lerp_(stacked, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(stacked, stacked, value=1 - beta2)
        bias_correction1 = 1 - beta1**self.steps
        bias_correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        step_size = self._per_member(lrs / bias_correction1)
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
        param.sub_(exp_avg / denom * step_size)
        return torch.where(live, norms, torch.full_like(norms, float("nan")))
