"""Fused trial arrays (issue 50): K static models trained as one stacked model equal the same K models trained one at
a time with torch's AdamW, clip_grad_norm_ and transformers' linear schedule, and a member that diverges leaves."""

from __future__ import annotations

import math
import random

import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import get_linear_schedule_with_warmup

from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.training import FusedAdamW, FusedMultipleNegativesRankingLoss, FusedStaticEmbedding, FusedStaticPack

WORDS = [f"w{i}" for i in range(40)]
STEPS, WARMUP, BATCH, DIM = 8, 3, 6, 8
WEIGHT_DECAY, MAX_GRAD_NORM = 0.01, 0.05  # clipping this low fires for every member (checked below)


def tokenizer() -> Tokenizer:
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(WORDS)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok


def static_model(seed: int) -> SentenceTransformer:
    torch.manual_seed(seed)
    return SentenceTransformer(modules=[StaticEmbedding(tokenizer(), embedding_dim=DIM), Normalize()], device="cpu")


def batches(model: SentenceTransformer) -> list[tuple[dict, dict]]:
    """STEPS batches of (anchor, positive) features, tokenized as the trainer would tokenize them."""
    rng = random.Random(0)

    def text() -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(2, 6)))

    return [
        (model.tokenize([text() for _ in range(BATCH)]), model.tokenize([text() for _ in range(BATCH)]))
        for _ in range(STEPS)
    ]


def train_alone(
    model: SentenceTransformer, scale: float, lr: float, data: list, fused: bool = True
) -> tuple[torch.Tensor, list[float]]:
    """The plain reference loop: the product's loss, torch.optim.AdamW, clip_grad_norm_ and the linear schedule."""
    loss_fn = ScaledMultipleNegativesRankingLoss(model, scale=scale)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=WEIGHT_DECAY, fused=fused)
    schedule = get_linear_schedule_with_warmup(optimizer, WARMUP, STEPS)
    losses = []
    for anchors, positives in data:
        loss = loss_fn([dict(anchors), dict(positives)], None)
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            break  # the trial's divergence check stops it
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        schedule.step()
    return model[0].embedding.weight.detach(), losses


def train_fused(
    models: list[SentenceTransformer],
    scales: list[float],
    lrs: list[float],
    data: list,
    fused: bool = True,
    sparse: bool = False,
):
    model = FusedStaticEmbedding.from_static([m[0] for m in models], sparse=sparse)
    optimizer = FusedAdamW(
        model.weight,
        len(models),
        lrs,
        STEPS,
        WARMUP,
        weight_decay=WEIGHT_DECAY,
        max_grad_norm=MAX_GRAD_NORM,
        fused=fused,
    )
    pack = FusedStaticPack(model, FusedMultipleNegativesRankingLoss(scales), optimizer)
    steps = pack.train([anchors, positives] for anchors, positives in data)
    losses, norms = torch.stack([s.losses for s in steps]), torch.stack([s.grad_norms for s in steps])
    return model.member_weights().detach(), losses, norms, pack.live


@pytest.mark.parametrize(
    ("fused", "sparse"),
    [(True, False), (False, False), (True, True)],
    ids=["fused_adamw", "single_tensor_adamw", "sparse_gradient"],
)
def test_fused_members_equal_each_model_trained_alone(fused: bool, sparse: bool) -> None:
    scales, lrs = [1.0, 10.0, 30.0], [2e-2, 5e-3, 5e-2]
    models = [static_model(seed) for seed in (1, 2, 3)]
    data = batches(models[0])
    weights, losses, norms, live = train_fused(models, scales, lrs, data, fused, sparse)
    assert live.all() and bool((norms > MAX_GRAD_NORM).all()), "every member's gradient was clipped"
    for k, (scale, lr) in enumerate(zip(scales, lrs, strict=True)):
        start = models[k][0].embedding.weight.detach().clone()
        alone, alone_losses = train_alone(models[k], scale, lr, data, fused)
        assert not torch.equal(alone, start), "the reference trained"
        assert torch.allclose(losses[:, k], torch.tensor(alone_losses), rtol=1e-5, atol=1e-6), k
        assert torch.allclose(weights[k], alone, rtol=1e-5, atol=1e-6), (k, (weights[k] - alone).abs().max())


@pytest.mark.parametrize("sparse", [False, True], ids=["dense_gradient", "sparse_gradient"])
def test_a_member_whose_loss_is_not_finite_leaves_and_the_others_go_on(sparse: bool) -> None:
    scales, lrs = [10.0, math.inf, 20.0], [2e-2, 2e-2, 1e-2]  # an infinite scale: NaN loss at the first step
    models = [static_model(seed) for seed in (4, 5, 6)]
    data = batches(models[0])
    start = models[1][0].embedding.weight.detach().clone()
    weights, losses, norms, live = train_fused(models, scales, lrs, data, sparse=sparse)
    assert live.tolist() == [True, False, True]
    assert not math.isfinite(float(losses[0, 1])) and torch.isnan(norms[:, 1]).all()
    assert torch.equal(weights[1], start), "a member that left no longer changes"
    for k in (0, 2):
        alone, _ = train_alone(models[k], scales[k], lrs[k], data)
        assert torch.isfinite(weights[k]).all()
        assert torch.allclose(weights[k], alone, rtol=1e-5, atol=1e-6), k


def test_the_stacked_table_embeds_each_member_as_its_static_model() -> None:
    models = [static_model(seed) for seed in (7, 8)]
    anchors, _ = batches(models[0])[0]
    fused = FusedStaticEmbedding.from_static([m[0] for m in models])
    embedded = fused(anchors["input_ids"], anchors["offsets"])
    for k, model in enumerate(models):
        assert torch.allclose(embedded[k], model(dict(anchors))["sentence_embedding"], atol=1e-6)


def test_scales_below_zero_and_a_wrong_number_of_learning_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        FusedMultipleNegativesRankingLoss([1.0, -1.0])
    with pytest.raises(ValueError, match="learning rates"):
        FusedAdamW(torch.zeros(2, 3, requires_grad=True), 2, [1e-3], total_steps=4)


def test_a_pack_keeps_its_scales_on_its_members_device() -> None:
    """The scales multiply the members' similarities: made on the CPU beside tables on a GPU, the first step failed
    (the GPU kit had to move them itself). The meta device stands in for a GPU here."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    starts = torch.zeros(2, 10, 4, device="meta")
    args = SentenceTransformerTrainingArguments(output_dir="unused", report_to=[])
    pack = FusedStaticPack.for_trials(starts, [10.0, 20.0], [1e-3, 1e-3], args, steps=5)
    assert pack.loss.scales.device == pack.model.weight.device == pack.live.device == starts.device
