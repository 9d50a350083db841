"""One optimizer step for the K members of a fused model: per-member gradient clipping (once over the stacked
gradients), learning-rate schedule and torch's AdamW on each member's slices (member k is the k-th slice of each
stacked parameter's leading dimension)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from torch.optim.adamw import adamw

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformerTrainingArguments as TrainingArguments


def linear_warmup_decay(step: int, warmup_steps: int, total_steps: int) -> float:
    """The factor of the base learning rate at `step`: transformers' `get_linear_schedule_with_warmup`, 0 to 1 over
    the warmup steps, then down to 0 at `total_steps`."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


class FusedAdamW:
    r"""AdamW over the stacked parameters of K members (one, a static table, or a transformer's many), each member
    with its own learning rate, gradient clipping and linear warmup-and-decay schedule; a member that left (``live``
    false) no longer changes.

    For member k at step t (1-based), with its gradient g_k (its own slices of every parameter), base learning rate
    lr_k and
    schedule factor f(t-1) (`linear_warmup_decay`, as the `LambdaLR` of transformers reads it before stepping):

    .. math::
        g_k \leftarrow g_k \cdot \min\left(1, \frac{c}{\lVert g_k \rVert_2 + 10^{-6}}\right), \quad
        \eta_k = lr_k f(t-1), \quad
        \theta_k \leftarrow \theta_k (1 - \eta_k \lambda)

    .. math::
        m_k \leftarrow \beta_1 m_k + (1-\beta_1) g_k, \quad v_k \leftarrow \beta_2 v_k + (1-\beta_2) g_k^2, \quad
        \theta_k \leftarrow \theta_k - \frac{\eta_k}{1-\beta_1^t} \frac{m_k}{\sqrt{v_k}/\sqrt{1-\beta_2^t} + \epsilon}

    The K gradient norms and the clipping are one operation over the stacked gradient; the update is torch's own
    AdamW (the public functional ``torch.optim.adamw.adamw``) on each live member's slice at that member's learning
    rate: ``fused=True`` is the fused kernel (transformers' ``adamw_torch_fused``, the project's default),
    ``fused=False`` the single-tensor loop (``adamw_torch`` on the CPU). Calling the fused kernel once per member
    instead of once for all costs nothing extra: it is element-wise, one pass over each slice either way.

    Weight decay applies to the parameters whose ``decays`` flag is set (the trainer's
    ``get_decay_parameter_names``: not the biases and norms); every parameter by default.

    Inputs: the stacked parameters (each K x ...), the K base learning rates, the steps of the schedule.
    Reference: ``torch.nn.utils.clip_grad_norm_`` (max_norm c), ``torch.optim.AdamW`` and transformers'
    ``get_linear_schedule_with_warmup``, applied to each member alone.
    """

    def __init__(
        self,
        params: Tensor | Sequence[Tensor],
        members: int,
        learning_rates: Sequence[float],
        total_steps: int,
        warmup_steps: int = 0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 1.0,
        fused: bool = True,
        decays: Sequence[bool] | None = None,
    ) -> None:
        if len(learning_rates) != members:
            raise ValueError(f"{len(learning_rates)} learning rates for {members} members")
        self.params = [params] if isinstance(params, Tensor) else list(params)
        self.decays = [True] * len(self.params) if decays is None else list(decays)
        if len(self.decays) != len(self.params):
            raise ValueError(f"{len(self.decays)} weight-decay flags for {len(self.params)} parameters")
        self.members, self.base_lrs = members, [float(lr) for lr in learning_rates]
        self.total_steps, self.warmup_steps = total_steps, warmup_steps
        self.betas, self.eps, self.weight_decay, self.max_grad_norm = betas, eps, weight_decay, max_grad_norm
        self.fused = fused
        self.exp_avg = [torch.zeros_like(p).view(members, -1) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p).view(members, -1) for p in self.params]
        # where torch.optim.AdamW keeps its step counts (one per member and parameter): on the parameter's device for
        # the fused kernel, else the CPU
        devices = [p.device if fused else torch.device("cpu") for p in self.params]
        self.member_steps = [
            [torch.zeros((), dtype=torch.float32, device=device) for device in devices] for _ in range(members)
        ]
        self.steps = 0
        self._sparse_buffer: Tensor | None = None  # the dense gradient a sparse one is written into, zero between steps

    @classmethod
    def for_trainer(
        cls,
        params: Tensor | Sequence[Tensor],
        members: int,
        learning_rates: Sequence[float],
        args: TrainingArguments,
        steps: int,
        decays: Sequence[bool] | None = None,
    ) -> FusedAdamW:
        """The optimizer of `members` members, one learning rate each, with the settings of sentence-transformers'
        `args` (warmup, weight decay, Adam's betas and epsilon, gradient clipping; the fused AdamW kernel when
        `args.optim` names it) over `steps` steps."""
        return cls(
            params,
            members,
            learning_rates,
            steps,
            args.get_warmup_steps(steps),
            betas=(args.adam_beta1, args.adam_beta2),
            eps=args.adam_epsilon,
            weight_decay=args.weight_decay,
            max_grad_norm=args.max_grad_norm,
            fused=args.optim == "adamw_torch_fused",
            decays=decays,
        )

    def learning_rates(self) -> list[float]:
        """The K learning rates of the next step: base rate times the schedule."""
        factor = linear_warmup_decay(self.steps, self.warmup_steps, self.total_steps)
        return [lr * factor for lr in self.base_lrs]

    @torch.no_grad()
    def step(self, live: Tensor) -> Tensor:
        """Clip each member's gradient, step the live ones and advance the schedule; the members' gradient norms
        before clipping (K, NaN for a member that left) are returned for logging."""
        # as torch's optimizers do, a parameter without a gradient (unused by the loss, a pooler) is left alone
        present = [i for i, p in enumerate(self.params) if p.grad is not None]
        grads = [g for p in self.params if (g := p.grad) is not None]
        if not grads:
            raise RuntimeError("no gradient: call backward() on the objective first")
        rows: Tensor | None = None
        if len(self.params) == 1 and grads[0].is_sparse:
            stacked, norms, rows = self._sparse_clipped(grads[0])
            stacks = {0: stacked}
        else:
            stacked_grads, norms = self._dense_clipped(grads)
            stacks = dict(zip(present, stacked_grads, strict=True))
        lrs = self.learning_rates()
        self.steps += 1
        flat = [p.data.view(self.members, -1) for p in self.params]
        # the trainer's two groups: with weight decay, and without (biases, norms)
        groups = [
            (decay, index) for decay in (True, False) if (index := [i for i in present if self.decays[i] == decay])
        ]
        for k in torch.nonzero(live).flatten().tolist():
            for decay, index in groups:
                adamw(
                    [flat[i][k] for i in index],
                    [stacks[i][k] for i in index],
                    [self.exp_avg[i][k] for i in index],
                    [self.exp_avg_sq[i][k] for i in index],
                    [],
                    [self.member_steps[k][i] for i in index],
                    foreach=False,
                    fused=self.fused,
                    amsgrad=False,
                    beta1=self.betas[0],
                    beta2=self.betas[1],
                    lr=lrs[k],
                    weight_decay=self.weight_decay if decay else 0.0,
                    eps=self.eps,
                    maximize=False,
                )
        if rows is not None:
            stacks[0].view_as(self.params[0]).index_fill_(0, rows, 0.0)
        return torch.where(live, norms, torch.full_like(norms, float("nan")))

    def _clip_coefficients(self, norms: Tensor) -> Tensor:
        if self.max_grad_norm is None:
            return torch.ones_like(norms)
        return torch.clamp(self.max_grad_norm / (norms + 1e-6), max=1.0)

    def _dense_clipped(self, grads: Sequence[Tensor]) -> tuple[list[Tensor], Tensor]:
        """The gradients as K x n each, clipped in place by each member's norm over all of them, and the K norms
        before clipping (as `clip_grad_norm_` takes one norm over every parameter of a model)."""
        stacks = [g.view(self.members, -1) for g in grads]
        norms = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(s, dim=1) for s in stacks], 1), dim=1)
        coefficients = self._clip_coefficients(norms).unsqueeze(1)
        for stacked in stacks:
            stacked.mul_(coefficients.to(stacked.dtype))
        return stacks, norms

    def _sparse_clipped(self, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """A sparse gradient (`FusedStaticEmbedding(sparse=True)`: the rows the batch touched) clipped and written
        into a dense buffer that is zero elsewhere, as K x n; the K norms; the rows written (zeroed after the step):
        the step then never fills a dense K*V x D gradient."""
        grad = grad.coalesce()
        rows, values = grad.indices()[0], grad.values()
        member = torch.div(rows, self.params[0].shape[0] // self.members, rounding_mode="floor")
        squares = torch.zeros(self.members, dtype=values.dtype, device=values.device)
        norms = squares.index_add_(0, member, values.pow(2).flatten(1).sum(1)).sqrt()
        coefficients = self._clip_coefficients(norms)[member].view(-1, *[1] * (values.dim() - 1))
        if self._sparse_buffer is None:
            self._sparse_buffer = torch.zeros_like(self.params[0])
        self._sparse_buffer.index_copy_(0, rows, values * coefficients)
        return self._sparse_buffer.view(self.members, -1), norms, rows
