"""A fused transformer pack (issue 50): K transformer members trained as one vectorised model equal the same K
models trained one at a time by sentence-transformers' trainer with the trial's own arguments (fused AdamW, weight
decay on the trainer's decay parameters, warmup, linear schedule, gradient clipping), without dropout; a member
whose loss is not finite leaves and the others go on."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer

from sweep.inputs import build_model
from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.training import FusedTransformerPack, trial_batches
from sweep.training.trainer import training_arguments
from tests.conftest import Compose
from tests.training.test_fused_trainer import BATCH, STEPS, pairs

NO_DROPOUT = (
    "+model.config_overrides.hidden_dropout_prob=0.0",
    "+model.config_overrides.attention_probs_dropout_prob=0.0",
)


def tiny_bert(compose_cfg: Compose, seed: int) -> SentenceTransformer:
    return build_model(compose_cfg(*NO_DROPOUT).model, seed=seed, device="cpu")


def arguments(compose_cfg: Compose, tmp_path, name: str):
    cfg = compose_cfg(
        f"trial.batch_size={BATCH}", "trial.weight_decay=0.01", "trial.warmup_ratio=0.3", "trial.learning_rate=1e-3"
    )
    args = training_arguments(cfg.trial, STEPS, cfg.loss, str(tmp_path / name), bars=False)
    return dataclasses.replace(args, eval_strategy="no")  # no evaluator here


@pytest.mark.slow
def test_fused_transformer_members_equal_the_trainer_one_at_a_time(compose_cfg: Compose, tmp_path) -> None:
    scales, lrs = [5.0, 20.0, 50.0], [1e-3, 3e-3, 1e-3]
    starts = [tiny_bert(compose_cfg, seed) for seed in range(3)]
    trained, decay_names = [], set()
    for k, (scale, lr) in enumerate(zip(scales, lrs, strict=True)):
        model = tiny_bert(compose_cfg, k)
        args = dataclasses.replace(arguments(compose_cfg, tmp_path, f"out{k}"), learning_rate=lr)
        loss = ScaledMultipleNegativesRankingLoss(model, scale=scale)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=pairs(), loss=loss)
        decay_names = set(trainer.get_decay_parameter_names(model))
        trainer.train()
        trained.append({name: p.detach().clone() for name, p in model.named_parameters()})
    assert decay_names and any("bias" in name for name, _ in starts[0].named_parameters())
    assert not any("bias" in name or "LayerNorm" in name for name in decay_names)
    args = arguments(compose_cfg, tmp_path, "fused")
    batches = trial_batches(args, pairs(), starts[0], STEPS)
    for model in starts:
        model.train()
    pack = FusedTransformerPack(starts, scales, lrs, args, STEPS, decay_names)
    norms = torch.stack([step.grad_norms for step in pack.train(batches)])
    assert torch.isfinite(norms).all()
    for k, reference in enumerate(trained):
        state = pack.member_state(k)
        worst = max((state[name] - value).abs().max().item() for name, value in reference.items())
        assert worst < 1e-4, (k, worst)
        moved = max((state[name] - value).abs().max().item() for name, value in starts[k].named_parameters())
        assert moved > 1e-3, "the member trained"


@pytest.mark.usefixtures("diverging_scales")
def test_a_fused_transformer_member_whose_loss_is_not_finite_leaves(compose_cfg: Compose, tmp_path) -> None:
    args = arguments(compose_cfg, tmp_path, "fused")
    starts = [tiny_bert(compose_cfg, seed) for seed in range(2)]
    batches = trial_batches(args, pairs(), starts[0], STEPS)
    pack = FusedTransformerPack(starts, [20.0, float("inf")], [1e-3, 1e-3], args, STEPS, ())
    before = pack.member_state(1)
    steps = pack.train(batches[:2])
    assert pack.live.tolist() == [True, False]
    assert torch.isnan(steps[0].grad_norms[1]) and torch.isfinite(steps[1].grad_norms[0])
    assert all(torch.equal(before[name], value) for name, value in pack.member_state(1).items())
