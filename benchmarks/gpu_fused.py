"""The fused sections of `python -m benchmarks.gpu_check` (issue 50): the default static study's trials trained as
fused packs (`sweep.training.FusedStaticPack`, one pack per seed: a seed's trials read the same batches) and each
member scored on STSB as a trial scores itself (`static_fused`), then the bare fused loop of the same steps and
evaluations (`fused_floor`), and the tables they give."""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from benchmarks.gpu_measure import StudyRun, against_reference

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from torch import Tensor

    from sweep.stats.probe import EmbeddingKeepingEvaluator
    from sweep.training import FusedStaticPack, StudyResources

# what `FusedStudy.prepare` imports (the product's training modules, sentence-transformers, torch): before the clock
PREPARING = (
    "sweep.study.validation",
    "sweep.training.fused_pack",
    "sweep.training.resources",
    "sweep.training.trainer",
)
MEMBER_COLUMNS = ("scale", "seed", "spearman", "test_spearman", "live", "start_s", "end_s")


@dataclass
class SeedPack:
    """The trials of one seed, ready to train as one pack: their scales and learning rates, the trainer's arguments
    of their configs (the optimizer's settings), the seed's base model (which scores the members) and its starting
    table, the batches its trainer reads (on the model's device) and the STSB evaluators."""

    seed: int
    scales: list[float]
    learning_rates: list[float]
    args: Any  # sentence-transformers' training arguments (`sweep.training.trainer.training_arguments`)
    eval_steps: int
    model: SentenceTransformer
    start: Tensor  # V x D, a copy: the members' tables are copied into `model` to score them
    batches: list[list[dict[str, Tensor]]]
    evaluators: tuple[EmbeddingKeepingEvaluator, EmbeddingKeepingEvaluator]  # validation, test

    def pack(self) -> FusedStaticPack:
        import torch

        from sweep.training import FusedStaticPack

        starts = torch.stack([self.start] * len(self.scales))
        return FusedStaticPack.for_trials(starts, self.scales, self.learning_rates, self.args, len(self.batches))

    @property
    def static(self) -> StaticEmbedding:
        """The base model's StaticEmbedding module (its first)."""
        return cast("StaticEmbedding", self.model[0])

    def evaluates_at(self, step: int) -> bool:
        """Whether a trial scores validation after `step` (every `trial.eval_steps`, and the last)."""
        return step % self.eval_steps == 0 or step == len(self.batches)


def member_spearman(seed_pack: SeedPack, pack: FusedStaticPack, k: int, split: int, step: int) -> float:
    """Member k's STSB Spearman on the split (0 validation, 1 test), as a trial scores its model: the product's
    evaluator on the base model holding the member's table (NaN for a member that left)."""
    import torch

    from sweep.training import spearman

    if not bool(pack.live[k]):
        return math.nan
    with torch.no_grad():
        seed_pack.static.embedding.weight.copy_(pack.member_table(k))
    return spearman(seed_pack.evaluators[split], seed_pack.model, step)


def bare_spearman(pack: FusedStaticPack, pairs: tuple[Tensor, ...], gold: Sequence[float]) -> list[float]:
    """Every member's cosine Spearman on STSB pairs (the two sides' ids and offsets as the static model tokenizes
    them), embedded with one call per side of the fused model: the floor's evaluation."""
    import torch
    from scipy.stats import spearmanr

    with torch.no_grad():
        cosine = (pack.model(*pairs[:2]) * pack.model(*pairs[2:])).sum(-1).cpu().numpy()
    return [float(spearmanr(gold, member).statistic) for member in cosine]


def warm(device: str) -> None:
    """Start CUDA on `device` (its context and cuBLAS, the first matrix product): what a process pays once, before
    its first trial, and the fused floor, which runs after it, would not pay again."""
    import torch

    if device.startswith("cuda"):
        ones = torch.ones(64, 64, device=device)
        (ones @ ones).sum().item()


@dataclass
class FusedStudy:
    """The default static study (`+experiment=mnrl_scale` with `overrides`: the `static_fp32` section's trials) as
    fused packs, one per seed; `run` is the `static_fused` section, `floor` the `fused_floor` section."""

    overrides: Sequence[str]
    data_dir: str
    scales: Sequence[float]
    seeds: Sequence[int]
    work: Path  # the trainers' output folders (nothing is written there)
    prepared: dict[int, SeedPack] = field(default_factory=dict)
    members: pd.DataFrame | None = None  # MEMBER_COLUMNS, once `run` ran
    floor_s: float | None = None
    floor_members: pd.DataFrame | None = None  # scale, seed, floor_spearman, once `floor` ran
    _resources: StudyResources | None = None
    _config: Any = None

    def config(self) -> Any:
        """The study's config (`sweep.config.SweepConfig`), composed once."""
        from sweep.config.composition import compose_config

        if self._config is None:
            overrides = ["+experiment=mnrl_scale", *self.overrides, f"data.local_dir={self.data_dir}"]
            self._config = compose_config(overrides)
        return self._config

    def prepare(self, seed: int) -> SeedPack:
        """The trials of `seed` as the study's run loop configures them (`trial_config`), their data and base model
        from the study's shared resources, and the batches their trainer reads (`trial_batches`)."""
        from sweep.study.validation import trial_config
        from sweep.training import StudyResources, trial_batches
        from sweep.training.resources import device_of
        from sweep.training.trainer import training_arguments

        configs = [trial_config(self.config(), {"loss.scale": s, "trial.seed": seed}) for s in self.scales]
        first, t = configs[0], configs[0].trial
        self._resources = self._resources or StudyResources()
        train = self._resources.datasets(first.data, first.stats.heldout_pairs)["train"]
        steps = t.max_steps or len(train) // t.batch_size  # null: one pass, as a trial reads it
        model = self._resources.model(first.model, seed, device_of(t))
        args = training_arguments(t, steps, first.loss, str(self.work / f"fused_seed{seed}"), bars=False)
        args = dataclasses.replace(args, eval_strategy="no")  # the members are scored below, not by a trainer
        batches = [
            [{key: value.to(model.device) for key, value in column.items()} for column in batch]
            for batch in trial_batches(args, train, model, steps)
        ]
        if len(batches) < steps:  # a second pass's order depends on the sampler's epoch, which only training sets
            raise ValueError(f"{steps} steps are more than one pass over the training rows ({len(batches)} batches)")
        evaluators = self._resources.evaluators(first.data, first.stats.heldout_pairs, t.eval_batch_size)
        return SeedPack(
            seed,
            [float(c.loss.scale) for c in configs],
            [float(c.trial.learning_rate) for c in configs],
            args,
            t.eval_steps,
            model,
            cast("StaticEmbedding", model[0]).embedding.weight.detach().clone(),
            batches,
            evaluators,
        )

    def run(self) -> None:
        """Train each seed's pack and score its members as the trials do (validation at every evaluation step and
        the last, test at the end); each member's start (its pack's, data and model loading included) and end
        (its last score), in seconds from the section's start."""
        self.config()  # before the clock: a study composes its config and imports its modules before any trial
        for module in PREPARING:
            importlib.import_module(module)
        warm(str(self.config().trial.device))
        start = time.perf_counter()
        rows = []
        for seed in self.seeds:
            started = time.perf_counter() - start
            seed_pack = self.prepared[seed] = self.prepare(seed)
            pack = seed_pack.pack()
            members = range(len(seed_pack.scales))
            validation = [math.nan for _ in members]
            for step, batch in enumerate(seed_pack.batches, start=1):
                pack.step(batch)
                if seed_pack.evaluates_at(step):
                    validation = [member_spearman(seed_pack, pack, k, 0, step) for k in members]
            for k in members:
                test = member_spearman(seed_pack, pack, k, 1, len(seed_pack.batches))
                ended = time.perf_counter() - start
                live = bool(pack.live[k])
                rows.append((seed_pack.scales[k], seed, validation[k], test, live, started, ended))
        self.members = pd.DataFrame(rows, columns=list(MEMBER_COLUMNS))

    def floor(self) -> None:
        """The same packs' steps and evaluations with nothing else: batches, starting tables and tokenized STSB
        pairs made beforehand (those of `run` when it ran), then timed: each pack built and trained, every member
        scored by the fused model at once at the same steps; the device synchronized before the clock stops."""
        import scipy.stats  # noqa: F401 - imported before the clock (`bare_spearman` imports it)
        import torch

        packs = [self.prepared.get(seed) or self.prepare(seed) for seed in self.seeds]
        pairs = []
        for seed_pack in packs:
            device, static = seed_pack.start.device, seed_pack.static
            tokenized = []
            for evaluator in seed_pack.evaluators:
                sides = [static.preprocess(list(s)) for s in (evaluator.sentences1, evaluator.sentences2)]
                ids = tuple(side[key].to(device) for side in sides for key in ("input_ids", "offsets"))
                tokenized.append((ids, list(evaluator.scores)))
            pairs.append(tokenized)
        synchronize = torch.cuda.synchronize if torch.cuda.is_available() else lambda: None
        synchronize()
        start = time.perf_counter()
        scores = []
        for seed_pack, (validation_pairs, test_pairs) in zip(packs, pairs, strict=True):
            pack = seed_pack.pack()
            validation: list[float] = []
            for step, batch in enumerate(seed_pack.batches, start=1):
                pack.step(batch)
                if seed_pack.evaluates_at(step):
                    validation = bare_spearman(pack, *validation_pairs)
            bare_spearman(pack, *test_pairs)
            scores += [(scale, seed_pack.seed, v) for scale, v in zip(seed_pack.scales, validation, strict=True)]
        synchronize()
        self.floor_s = time.perf_counter() - start
        self.floor_members = pd.DataFrame(scores, columns=["scale", "seed", "floor_spearman"])

    def release(self) -> None:
        """Drop the packs' models and batches (the device memory of the sections after it)."""
        self.prepared.clear()
        self._resources = None


def fused_table(
    study: FusedStudy, reference: pd.DataFrame, alone: StudyRun | None, tolerance: float
) -> pd.DataFrame | None:
    """Each member's Spearman beside the reference's (`against_reference`), the one-at-a-time trial's of the
    `static_fp32` section when it ran and the fused floor's when it ran, with their differences; None before `run`."""
    if study.members is None:
        return None
    span = float(study.members.end_s.max() - study.members.start_s.min())
    table = against_reference(StudyRun("static_fused", study.members, span), reference, tolerance)
    others = {"one_at_a_time": alone.trials if alone else None, "floor": study.floor_members}
    for name, other in others.items():
        if other is not None:
            column = "floor_spearman" if name == "floor" else "spearman"
            scores = other[["scale", "seed", column]].rename(columns={column: f"{name}_spearman"})
            table = table.merge(scores, on=["scale", "seed"], how="left")
            table[f"difference_{name}"] = table.spearman - table[f"{name}_spearman"]
    return table


def fused_floor_row(table: pd.DataFrame | None, floor_s: float | None) -> tuple[Any, ...] | None:
    """floor.csv's row of the fused study: the `static_fused` section's span (first member's start to last member's
    end, from `table`) over the fused floor's seconds, for all its trials."""
    if table is None or floor_s is None:
        return None
    span = float(table.end_s.max() - table.start_s.min())
    return ("static_fused", len(table), floor_s, span, span / floor_s)
