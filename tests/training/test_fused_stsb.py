"""On the product's own static model (`model=static_minilm`: MiniLM's token embeddings, Normalize) and training data
(NLI triplets: the hard negative is a candidate too), each fused member's STSB validation Spearman equals that of
the same trial trained one at a time by sentence-transformers' trainer with the trial's `training_arguments`, within
the 0.005 that issue 50 asks for; the pack trains with the sparse gradient, its fast path on the CPU."""

from __future__ import annotations

import dataclasses

import torch
from sentence_transformers import SentenceTransformerTrainer

from sweep.inputs import build_model
from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.training import StudyResources, spearman, trial_batches
from sweep.training.trainer import training_arguments
from tests.conftest import Compose
from tests.training.test_fused_trainer import train_fused

STEPS, BATCH = 8, 16


def test_each_fused_members_stsb_spearman_equals_its_one_at_a_time_trial(compose_cfg: Compose, tmp_path) -> None:
    cfg = compose_cfg(
        "model=static_minilm",
        f"trial.batch_size={BATCH}",
        "trial.learning_rate=0.05",
        f"data.train.max_samples={STEPS * BATCH}",
    )
    resources = StudyResources()
    heldout = cfg.stats.heldout_pairs
    train = resources.datasets(cfg.data, heldout)["train"]
    validation, _ = resources.evaluators(cfg.data, heldout, 256)
    args = training_arguments(cfg.trial, STEPS, cfg.loss, str(tmp_path / "out"), bars=False)
    args = dataclasses.replace(args, eval_strategy="no")  # scored below, once trained
    scales, lrs = [5.0, 50.0], [0.05, 0.01]
    alone = []
    for scale, lr in zip(scales, lrs, strict=True):
        model = build_model(cfg.model, cfg.trial.seed, "cpu")
        loss = ScaledMultipleNegativesRankingLoss(model, scale=scale)
        trainer_args = dataclasses.replace(args, learning_rate=lr)
        SentenceTransformerTrainer(model=model, args=trainer_args, train_dataset=train, loss=loss).train()
        alone.append(spearman(validation, model))
    model = build_model(cfg.model, cfg.trial.seed, "cpu")
    untrained = spearman(validation, model)
    start = model[0].embedding.weight.detach()
    batches = trial_batches(args, train, model, STEPS)
    pack, _ = train_fused(torch.stack([start] * len(scales)), scales, lrs, args, batches, sparse=True)
    for k, expected in enumerate(alone):
        with torch.no_grad():
            model[0].embedding.weight.copy_(pack.member_table(k))
        got = spearman(validation, model)
        assert abs(got - expected) < 0.005, (k, got, expected)
        assert abs(expected - untrained) > 0.005, "training moved the Spearman"
