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
from sweep.training import FusedStaticPack, trial_batches
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


def train_fused(starts: torch.Tensor, scales: list[float], lrs: list[float], args, batches: list, sparse: bool):
    """K members from their starting tables (K x V x D), trained on `batches` with the trainer's optimizer settings;
    the pack and the members' gradient norms per step."""
    pack = FusedStaticPack.for_trials(starts, scales, lrs, args, len(batches), sparse=sparse)
    return pack, torch.stack([step.grad_norms for step in pack.train(batches)])


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
    batches = trial_batches(args, pairs(), static_model(0), STEPS)  # the trial's order, from its trainer's dataloader
    assert len(batches) == STEPS
    for other in runs:  # every trial trained on exactly these batches
        assert all(
            torch.equal(a[key], b[key])
            for x, y in zip(batches, other[2], strict=True)
            for a, b in zip(x, y, strict=True)
            for key in ("input_ids", "offsets")
        )
    pack, norms = train_fused(torch.stack([start for start, *_ in runs]), scales, lrs, args, batches, sparse)
    clipped = norms > args.max_grad_norm
    assert clipped.any() and not clipped.all(), "some member steps were clipped, others not"
    for k, (start, trained, *_) in enumerate(runs):
        assert not torch.equal(trained, start), "the trainer trained"
        got = pack.member_table(k)
        assert torch.allclose(got, trained, rtol=1e-5, atol=1e-6), (k, (got - trained).abs().max())


def test_the_batches_of_a_trial_that_evaluates_as_it_trains(compose_cfg: Compose, tmp_path) -> None:
    """A trial's arguments evaluate every `trial.eval_steps`; `trial_batches` builds a trainer only for its dataloader,
    and refused such arguments (no evaluator given) until it set evaluation off itself."""
    cfg = compose_cfg(f"trial.batch_size={BATCH}")
    args = training_arguments(cfg.trial, STEPS, cfg.loss, str(tmp_path / "out"), bars=False)
    assert args.eval_strategy != "no"
    quiet = dataclasses.replace(args, eval_strategy="no")
    batches = trial_batches(args, pairs(), static_model(0), STEPS)
    assert len(batches) == STEPS
    expected = trial_batches(quiet, pairs(), static_model(0), STEPS)
    assert all(
        torch.equal(a[key], b[key])
        for x, y in zip(batches, expected, strict=True)
        for a, b in zip(x, y, strict=True)
        for key in ("input_ids", "offsets")
    )
