"""K transformer trials trained as one: their parameters stacked (`torch.func.stack_module_state`), one vectorised
forward per column (`torch.func.vmap` over `functional_call`), MNRL at each member's scale and each member's AdamW
(issue 50, "fused trial arrays", for transformers; a building block, not yet run by `study.pack`)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers import SentenceTransformerTrainingArguments as TrainingArguments
from torch import Tensor
from torch.func import functional_call, stack_module_state, vmap

from sweep.training.fused_adamw import FusedAdamW
from sweep.training.fused_mnrl import FusedMultipleNegativesRankingLoss
from sweep.training.fused_pack import Batch, FusedStep


class FusedTransformerPack:
    r"""K sentence-transformers models of one architecture trained as one, each at its own MNRL scale and learning
    rate, on the same batches.

    The members' parameters and buffers are stacked along a new leading dimension of size K; one forward of a
    column is ``vmap(functional_call(model, (θ_k, b_k), features))`` over k, with the features shared (not batched):
    every matrix product runs once for all K members as a batched one. Then, per member,

    .. math::
        L_k = \mathrm{MNRL}_{s_k}(e_{k}(a), e_{k}(p)), \qquad \theta_k \leftarrow \mathrm{AdamW}_{lr_k}(\theta_k,
        \mathrm{clip}(\nabla_{\theta_k} L_k))

    with `FusedMultipleNegativesRankingLoss` and `FusedAdamW` (each member's clipping over all its parameters, its
    schedule, weight decay on the trainer's decay parameters only). The members' parameters are disjoint, so the
    gradient of the sum of the live members' losses gives each its own. A member whose loss is not finite leaves.

    Dropout: ``vmap(randomness="different")`` draws each member's masks independently from the global generator, so
    a member with dropout equals its trial alone in distribution, not draw for draw; without dropout it equals it
    (`tests/training/test_fused_transformer.py`). Attention kernels without a batching rule (CPU SDPA) fall back to
    a loop over the members inside the vectorised forward.

    Inputs: the K models (same architecture, each in training mode), their scales and learning rates, the trainer's
    arguments and the names of the parameters it decays (`SentenceTransformerTrainer.get_decay_parameter_names`).
    Reference: PyTorch's model-ensembling recipe (``torch.func.stack_module_state`` + ``vmap(functional_call)``);
    HFTA, Wang et al., MLSys 2021 (horizontal fusion of repeated training jobs).
    """

    def __init__(
        self,
        models: Sequence[SentenceTransformer],
        scales: Sequence[float],
        learning_rates: Sequence[float],
        args: TrainingArguments,
        steps: int,
        decay_names: Iterable[str],
    ) -> None:
        if len(models) != len(scales):
            raise ValueError(f"{len(models)} models for {len(scales)} scales")
        self.members = len(models)
        self.params, self.buffers = stack_module_state(list(models))
        self.skeleton = copy.deepcopy(models[0]).to("meta")  # the architecture, its weights those of `params`
        self.skeleton.train()
        decayed = set(decay_names)
        decays = [name in decayed for name in self.params]
        params = list(self.params.values())
        self.optimizer = FusedAdamW.for_trainer(params, self.members, learning_rates, args, steps, decays)
        device = next(iter(self.params.values())).device
        self.loss = FusedMultipleNegativesRankingLoss(scales).to(device)
        self.live = torch.ones(self.members, dtype=torch.bool, device=device)
        self._embed = vmap(self._embed_member, in_dims=(0, 0, None), randomness="different")

    def _embed_member(self, params: dict[str, Tensor], buffers: dict[str, Tensor], features: dict[str, Tensor]):
        return functional_call(self.skeleton, (params, buffers), (features,))["sentence_embedding"]

    def embed(self, features: dict[str, Tensor]) -> Tensor:
        """One column of a batch (the tokenizer's features) embedded by every member: K x B x D."""
        return self._embed(self.params, self.buffers, features)

    def step(self, batch: Batch) -> FusedStep:
        """One training step of every live member on `batch` (a dict of features per column)."""
        losses = self.loss(*[self.embed(column) for column in batch])
        self.live &= torch.isfinite(losses.detach())
        for param in self.params.values():
            param.grad = None
        self.loss.objective(losses, self.live).backward()
        return FusedStep(losses.detach(), self.optimizer.step(self.live))

    def train(self, batches: Iterable[Batch]) -> list[FusedStep]:
        """A step on each of `batches`, in order."""
        return [self.step(batch) for batch in batches]

    def member_state(self, k: int) -> dict[str, Tensor]:
        """Member k's parameters and buffers by name, detached: load them into a model of the architecture
        (``model.load_state_dict(state, strict=False)``) to evaluate the member."""
        return {name: value[k].detach() for name, value in {**self.params, **self.buffers}.items()}
