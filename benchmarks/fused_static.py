"""Speed of one fused training step of K static models (`sweep.training.FusedStaticEmbedding`, its MNRL and
`FusedAdamW`) against K separate steps of the same models (sentence-transformers' StaticEmbedding, MNRL,
clip_grad_norm_, torch's AdamW and the linear schedule), measured in one run, as a ratio.

    python -m benchmarks.fused_static [--members 4,8] [--vocab 30522] [--dim 384] [--batch 64] [--repeats 5]
        [--out benchmarks/results/bench_fused_static]

With `--out`, writes `fused_static.csv` (one row per pack size: each step's median seconds and the ratios) and a
`README.md` generated from it (the machine, the command, the table); without it, prints the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
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


def measure(members: Sequence[int], vocab: int, dim: int, batch_size: int, repeats: int) -> pd.DataFrame:
    """Per pack size K: the median seconds of a fused step (dense and sparse gradient) and of K separate steps (with
    the fused and the single-tensor AdamW), the steps taking turns in each round; the fused / separate ratios."""
    generator = torch.Generator().manual_seed(0)
    batch = [features(vocab, batch_size, generator) for _ in range(2)]
    rows = []
    for k in members:
        dense, sparse, separate_fused, separate_plain = seconds(
            [
                fused(k, vocab, dim, batch, sparse=False),
                fused(k, vocab, dim, batch, sparse=True),
                separate(k, vocab, dim, batch, fused_adamw=True),
                separate(k, vocab, dim, batch, fused_adamw=False),
            ],
            repeats,
        )
        rows.append((k, dense, sparse, separate_fused, separate_plain))
    table = pd.DataFrame(rows, columns=["members", "fused_s", "fused_sparse_s", "separate_s", "separate_plain_adamw_s"])
    table["fused_over_separate"] = table.fused_s / table.separate_s
    table["fused_sparse_over_separate"] = table.fused_sparse_s / table.separate_s
    return table


def report(table: pd.DataFrame, settings: dict[str, Any], command: str, machine: dict[str, Any]) -> str:
    """The README of a run: what was measured, on what, and the table (every number from `table`)."""
    lines = [
        "# Benchmark: one fused step of K static models against K separate steps",
        "",
        f"Command: `{command}`.",
        "",
        "Machine: " + ", ".join(f"{key} {value}" for key, value in machine.items()) + ".",
        "",
        f"Settings: {settings['vocab']} tokens x {settings['dim']} dimensions, batch {settings['batch']} (anchor and "
        f"positive columns), {torch.get_num_threads()} torch threads; median of {settings['repeats']} rounds, the "
        "four steps taking turns in each round (a machine busy with other work slows them alike).",
        "",
        "A fused step is `sweep.training.FusedStaticPack`'s: one embedding table of K x V rows, the K members' MNRL "
        "and `FusedAdamW`. The separate steps are K sentence-transformers StaticEmbedding models, each with its "
        "MNRL, `clip_grad_norm_`, torch's AdamW and the linear schedule. A ratio below 1 means the fused step is "
        "faster. These are CPU numbers; the GPU's are the kit's (`python -m benchmarks.gpu_check`).",
        "",
        "| K | fused step (s) | fused, sparse gradient (s) | K separate steps (s) "
        "| K separate, single-tensor AdamW (s) | fused / separate | fused sparse / separate |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples(index=False):
        lines.append(
            f"| {row.members} | {row.fused_s:.3f} | {row.fused_sparse_s:.3f} | {row.separate_s:.3f} | "
            f"{row.separate_plain_adamw_s:.3f} | {row.fused_over_separate:.2f} | {row.fused_sparse_over_separate:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="4,8")
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="folder for fused_static.csv and README.md (created)")
    args = parser.parse_args(argv)
    from benchmarks.table import machine_description

    machine = machine_description()
    members = [int(m) for m in args.members.split(",")]
    table = measure(members, args.vocab, args.dim, args.batch, args.repeats)
    settings = {"vocab": args.vocab, "dim": args.dim, "batch": args.batch, "repeats": args.repeats}
    command = " ".join(["python -m benchmarks.fused_static", *(argv if argv is not None else sys.argv[1:])])
    text = report(table, settings, command, machine)
    if args.out is None:
        print(text)
        return table
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "fused_static.csv", index=False, float_format="%.6g")
    (args.out / "README.md").write_text(text)
    return table


if __name__ == "__main__":
    main()
