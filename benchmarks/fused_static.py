"""Speed of one fused training step of K static models (`sweep.training.FusedStaticEmbedding`, its MNRL and
`FusedAdamW`) against K separate steps of the same models (sentence-transformers' StaticEmbedding, MNRL,
clip_grad_norm_, torch's AdamW and the linear schedule), measured in one run, as a ratio.

    python -m benchmarks.fused_static [--members 4,8] [--vocab 30522] [--dim 384] [--batch 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import get_linear_schedule_with_warmup

from sweep.training import FusedAdamW, FusedMultipleNegativesRankingLoss, FusedStaticEmbedding

TOKENS = (4, 24)  # tokens per text, drawn uniformly


def features(vocab: int, batch: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A batch as StaticEmbedding's tokenize gives it: the ids end to end and where each text starts."""
    lengths = torch.randint(*TOKENS, (batch,), generator=generator)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    return {"input_ids": torch.randint(vocab, (int(lengths.sum()),), generator=generator), "offsets": offsets}


def seconds(steps: list[Callable[[], None]], repeats: int) -> list[float]:
    """The median time of each step, the steps taking turns in every round (so a machine busy with other work slows
    them alike)."""
    for step in steps:
        step()  # the first step allocates the optimizer state
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(repeats):
        for step, taken in zip(steps, times, strict=True):
            start = time.perf_counter()
            step()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in times]


def separate(members: int, vocab: int, dim: int, batch: list[dict], fused_adamw: bool) -> Callable[[], None]:
    from sentence_transformers.base.modules import Normalize

    from sweep.losses.mnrl import SIMILARITIES

    tokenizer = Tokenizer(WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    models = [torch.nn.Sequential(StaticEmbedding(tokenizer, embedding_dim=dim), Normalize()) for _ in range(members)]
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01, fused=fused_adamw) for m in models]
    schedules = [get_linear_schedule_with_warmup(o, 10, 1000) for o in optimizers]
    labels = torch.arange(len(batch[0]["offsets"]))

    def step() -> None:
        for model, optimizer, schedule in zip(models, optimizers, schedules, strict=True):
            anchors, positives = (model(dict(f))["sentence_embedding"] for f in batch)
            loss = torch.nn.functional.cross_entropy(SIMILARITIES["cosine"](anchors, positives) * 20.0, labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()

    return step


def fused(members: int, vocab: int, dim: int, batch: list[dict], sparse: bool) -> Callable[[], None]:
    model = FusedStaticEmbedding(torch.randn(members, vocab, dim), sparse=sparse)
    loss_fn = FusedMultipleNegativesRankingLoss([20.0] * members)
    optimizer = FusedAdamW(model.weight, members, [1e-3] * members, 1000, 10, weight_decay=0.01)
    live = torch.ones(members, dtype=torch.bool)

    def step() -> None:
        losses = loss_fn(*model.embed_columns(batch))
        model.weight.grad = None
        loss_fn.objective(losses, live).backward()
        optimizer.step(live)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="4,8")
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    batch = [features(args.vocab, args.batch, generator) for _ in range(2)]
    print(
        f"torch threads {torch.get_num_threads()}, V={args.vocab} D={args.dim} B={args.batch}, "
        f"median of {args.repeats} rounds (the steps take turns in each)"
    )
    for k in (int(m) for m in args.members.split(",")):
        one, one_sparse, apart_fused, apart_plain = seconds(
            [
                fused(k, args.vocab, args.dim, batch, sparse=False),
                fused(k, args.vocab, args.dim, batch, sparse=True),
                separate(k, args.vocab, args.dim, batch, fused_adamw=True),
                separate(k, args.vocab, args.dim, batch, fused_adamw=False),
            ],
            args.repeats,
        )
        print(
            f"K={k}: fused step {one:.3f} s (sparse gradient {one_sparse:.3f} s, ratio to separate "
            f"{one_sparse / apart_fused:.2f}); K separate steps {apart_fused:.3f} s with fused AdamW "
            f"(ratio fused/separate {one / apart_fused:.2f}), {apart_plain:.3f} s with single-tensor AdamW "
            f"(ratio {one / apart_plain:.2f})"
        )


if __name__ == "__main__":
    main()
