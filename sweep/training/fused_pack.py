"""The training loop of a fused pack of static trials: K members' steps run as one (`FusedStaticEmbedding`, their
MNRL, `FusedAdamW`), on the batches a one-at-a-time trial's own trainer would read, with the members that diverge
leaving as they go."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers import SentenceTransformerTrainingArguments as TrainingArguments
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor

from sweep.training.fused_adamw import FusedAdamW
from sweep.training.fused_mnrl import FusedMultipleNegativesRankingLoss
from sweep.training.fused_static import FusedStaticEmbedding

Batch = Sequence[dict[str, Tensor]]  # one batch: per column (anchor, positive[, negative]), StaticEmbedding's features


def trial_batches(args: TrainingArguments, data: Dataset, model: SentenceTransformer, steps: int) -> list[Batch]:
    """The first `steps` batches a trial trained by sentence-transformers' trainer with `args` on `data` reads, in its
    order, as `model` tokenizes them: from a trainer built and not trained (`trainer_batches`; evaluation off: it has
    no evaluator, and evaluating does not change the batches)."""
    loss = MultipleNegativesRankingLoss(model)  # any loss: the sampler and the collator do not read it
    args = dataclasses.replace(args, eval_strategy="no")
    return trainer_batches(SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss), steps)


def trainer_batches(trainer: SentenceTransformerTrainer, steps: int) -> list[Batch]:
    """The first `steps` batches of a trainer, in the order its training would read them, each as one dict of
    features per column (a static model's ``input_ids`` and ``offsets``, a transformer's ``input_ids``,
    ``attention_mask``, ...): from its own dataloader (`get_train_dataloader`), within one pass over the rows (later
    passes depend on the sampler's epoch, which training sets)."""
    data = trainer.train_dataset
    if not isinstance(data, Dataset):
        raise TypeError(f"a fused trial reads a datasets.Dataset, not {type(data).__name__}")
    columns = sorted(data.column_names, key=len, reverse=True)  # a key belongs to the longest column it starts with

    def features(batch: dict[str, Tensor]) -> Batch:
        split: dict[str, dict[str, Tensor]] = {c: {} for c in data.column_names}
        for key, value in batch.items():
            column = next((c for c in columns if key.startswith(f"{c}_")), None)
            if column is not None and isinstance(value, Tensor):
                split[column][key[len(column) + 1 :]] = value
        return [split[c] for c in data.column_names]

    return [features(batch) for _, batch in zip(range(steps), trainer.get_train_dataloader(), strict=False)]


@dataclass(frozen=True)
class FusedStep:
    """What one fused step gives per member (K-vectors): its loss, and its gradient norm before clipping (NaN for a
    member that has left)."""

    losses: Tensor
    grad_norms: Tensor


class FusedStaticPack:
    """K static trials trained as one: each `step` embeds a batch for every member at once, takes each member's MNRL
    at its own scale and steps each member with its own learning rate, clipping and schedule. A member whose loss is
    not finite leaves at that step (its update is not applied; `live` says who is still training) and the others go
    on. Each member equals its trial trained alone on the same batches (`tests/training/test_fused*.py`)."""

    def __init__(
        self, model: FusedStaticEmbedding, loss: FusedMultipleNegativesRankingLoss, optimizer: FusedAdamW
    ) -> None:
        self.model, self.loss, self.optimizer = model, loss, optimizer
        self.live = torch.ones(model.members, dtype=torch.bool, device=model.weight.device)

    @classmethod
    def for_trials(
        cls,
        starts: Tensor,
        scales: Sequence[float],
        learning_rates: Sequence[float],
        args: TrainingArguments,
        steps: int,
        normalize: bool = True,
        sparse: bool = True,
    ) -> FusedStaticPack:
        """A pack of K trials from their starting tables (K x V x D) and their scales and learning rates, with the
        optimizer settings of sentence-transformers' `args` (warmup, weight decay, Adam's betas and epsilon, gradient
        clipping; the fused AdamW kernel when `args.optim` names it) over `steps` steps; `normalize`: the members end
        with `Normalize`."""
        model = FusedStaticEmbedding(starts, normalize=normalize, sparse=sparse)
        optimizer = FusedAdamW.for_trainer(model.weight, model.members, learning_rates, args, steps)
        return cls(model, FusedMultipleNegativesRankingLoss(scales).to(starts.device), optimizer)

    def step(self, batch: Batch) -> FusedStep:
        """One training step of every live member on `batch`."""
        return self.step_members([batch] * self.model.members)

    def step_members(self, batches: Sequence[Batch]) -> FusedStep:
        """One training step of every live member, member k on its own batch ``batches[k]``."""
        losses = self.loss(*self.model.embed_member_columns(batches))
        self.live &= torch.isfinite(losses.detach())
        self.model.weight.grad = None
        self.loss.objective(losses, self.live).backward()
        return FusedStep(losses.detach(), self.optimizer.step(self.live))

    def train(self, batches: Iterable[Batch]) -> list[FusedStep]:
        """A step on each of `batches`, in order."""
        return [self.step(batch) for batch in batches]

    def member_table(self, k: int) -> Tensor:
        """Member k's token table (V x D), detached: copy it into a StaticEmbedding to evaluate the member."""
        return self.model.member_weights()[k].detach()
