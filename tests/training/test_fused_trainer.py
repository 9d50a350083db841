"""A fused member equals the product's one-at-a-time training of the same static model: sentence-transformers'
trainer with the trial's own `training_arguments` (fused AdamW, weight decay, warmup ratio, linear schedule, gradient
clipping, the no-duplicates sampler) and the product's MNRL. The fused pack reads its batches from a trainer's own
dataloader (`get_train_dataloader`, not trained), which gives the trial's batches in the trial's order (checked here
over one pass of the rows; later passes depend on the sampler's epoch, which only training sets)."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainer

from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.training import FusedAdamW, FusedMultipleNegativesRankingLoss, FusedStaticEmbedding
from sweep.training.trainer import training_arguments
from tests.conftest import Compose
from tests.training.test_fused import WORDS, static_model

STEPS, BATCH = 6, 8


class Recorded(ScaledMultipleNegativesRankingLoss):
    """The product's loss, keeping the features of every batch the trainer hands it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[list[dict[str, torch.Tensor]]] = []

    def forward(self, sentence_features, labels=None):
        self.batches.append([{k: v.detach().clone() for k, v in f.items()} for f in sentence_features])
        return super().forward(sentence_features, labels)


def pairs() -> Dataset:
    """STEPS batches of (anchor, positive) rows: one pass over them."""
    rng = random.Random(0)
    rows = [" ".join(rng.choices(WORDS, k=rng.randint(2, 6))) for _ in range(2 * STEPS * BATCH)]
    return Dataset.from_dict({"anchor": rows[: STEPS * BATCH], "positive": rows[STEPS * BATCH :]})


def train_with_the_trainer(compose_cfg: Compose, tmp_path, seed: int, scale: float, lr: float):
    cfg = compose_cfg(
        f"trial.batch_size={BATCH}",
        f"trial.learning_rate={lr}",
        "trial.weight_decay=0.01",
        "trial.warmup_ratio=0.3",
        "trial.optimizer=adamw_torch_fused",
    )
    model = static_model(seed)
    start = model[0].embedding.weight.detach().clone()
    loss = Recorded(model, scale=scale)
    args = training_arguments(cfg.trial, STEPS, cfg.loss, str(tmp_path / f"out{seed}"), bars=False)
    args = dataclasses.replace(args, eval_strategy="no")  # no evaluator here; scoring does not touch the weights
    SentenceTransformerTrainer(model=model, args=args, train_dataset=pairs(), loss=loss).train()
    return start, model[0].embedding.weight.detach(), loss.batches, args


def trainer_batches(args, data: Dataset, model, steps: int) -> list[list[dict[str, torch.Tensor]]]:
    """The first `steps` batches of a trial read from a trainer's own dataloader, without training: per column of
    `data`, its features as `model` tokenizes them."""
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=Recorded(model))
    return [
        [{"input_ids": batch[f"{c}_input_ids"], "offsets": batch[f"{c}_offsets"]} for c in data.column_names]
        for _, batch in zip(range(steps), trainer.get_train_dataloader(), strict=False)
    ]


def train_fused(starts: torch.Tensor, scales: list[float], lrs: list[float], args, batches: list, sparse: bool):
    """K members from their starting tables (K x V x D), trained on `batches` with the trainer's optimizer settings;
    the fused model and the members' gradient norms per step."""
    fused = FusedStaticEmbedding(starts, sparse=sparse)
    loss_fn = FusedMultipleNegativesRankingLoss(scales)
    steps = len(batches)
    optimizer = FusedAdamW(
        fused.weight,
        len(scales),
        lrs,
        steps,
        args.get_warmup_steps(steps),
        betas=(args.adam_beta1, args.adam_beta2),
        eps=args.adam_epsilon,
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm,
    )
    live = torch.ones(len(scales), dtype=torch.bool)
    norms = []
    for columns in batches:
        fused.weight.grad = None
        loss_fn.objective(loss_fn(*fused.embed_columns(columns)), live).backward()
        norms.append(optimizer.step(live))
    return fused, torch.stack(norms)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense_gradient", "sparse_gradient"])
def test_a_fused_member_equals_the_trainer_on_the_batches_its_dataloader_gives(
    compose_cfg: Compose, tmp_path, sparse: bool
) -> None:
    scales, lrs = [5.0, 20.0], [0.05, 0.02]
    runs = [
        train_with_the_trainer(compose_cfg, tmp_path, k + 1, s, lr)
        for k, (s, lr) in enumerate(zip(scales, lrs, strict=True))
    ]
    args = runs[0][3]
    batches = trainer_batches(
        args, pairs(), static_model(0), STEPS
    )  # what a fused pack would read: the trial's order, from the trainer's dataloader
    assert len(batches) == STEPS
    for other in runs:  # every trial trained on exactly these batches
        assert all(
            torch.equal(a[key], b[key])
            for x, y in zip(batches, other[2], strict=True)
            for a, b in zip(x, y, strict=True)
            for key in ("input_ids", "offsets")
        )
    fused, norms = train_fused(torch.stack([start for start, *_ in runs]), scales, lrs, args, batches, sparse)
    clipped = norms > args.max_grad_norm
    assert clipped.any() and not clipped.all(), "some member steps were clipped, others not"
    for k, (start, trained, *_) in enumerate(runs):
        assert not torch.equal(trained, start), "the trainer trained"
        got = fused.member_weights()[k].detach()
        assert torch.allclose(got, trained, rtol=1e-5, atol=1e-6), (k, (got - trained).abs().max())
