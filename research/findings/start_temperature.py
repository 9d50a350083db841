"""Does the best fine-tuning scale follow the scale the start model was trained at (issue 35, study 2)? Read per arm:
the static arm, ``start_temperature_static`` (static starts pretrained from random vectors at scales 10, 20 and 50,
3 seeds each, fine-tuned on NLI at 5-100) and ``start_temperature_scratch`` (the same fine-tuning from random
vectors); the transformer arm, ``start_temperature_l1`` and ``start_temperature_scratch_l1`` (the same for MiniLM's
first layer with every weight re-initialised).

The analysis, fixed before the fine-tuning ran: per start scale, the learning rate of its best (scale, rate) cell by
mean STSB validation Spearman; at that rate the fine-tuning scales' verdicts (`sweep.stats.verdicts`, the start
models' 3 pretraining seeds as blocks, a start's scales paired within it) on validation, where the best is chosen, and
on test. "Follows" means the best fine-tuning scale moves in the start scale's direction with the confidence sets
apart; the figure draws the best against the start scale, with the diagonal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sweep.report import (
    Facts,
    Strength,
    complete_trials,
    present,
    signed,
    strength,
    write_best_scale_vs_condition,
)
from sweep.report import table as results_table
from sweep.stats import scale_verdicts

from .design import facts_of

VALIDATION, TEST = "stsb_validation_spearman", "stsb_test_spearman"
START = re.compile(r"(?:static|l1)_scale(?P<scale>[0-9.]+)_seed(?P<seed>\d+)$")
CONDITION = "start_scale"  # the figure's condition key: the scale the start model was pretrained at


@dataclass(frozen=True)
class Arm:
    """One model family of study 2: its words, its fine-tuning folder and its from-scratch folder."""

    words: str
    finetune: str
    scratch: str


STATIC = Arm("static", "start_temperature_static", "start_temperature_scratch")
TRANSFORMER = Arm("1-layer transformer", "start_temperature_l1", "start_temperature_scratch_l1")
ARMS = (STATIC, TRANSFORMER)


@dataclass(frozen=True)
class StartVerdict:
    """One start scale (None: from scratch): its learning rate and the fine-tuning scales' verdicts on each split."""

    start: float | None
    learning_rate: float
    validation: pd.DataFrame  # per fine-tuning scale: mean, best, in_confidence_set, verdict (scale_verdicts)
    test: pd.DataFrame
    n_seeds: int

    def best(self, split: str = "validation") -> float:
        table = self.validation if split == "validation" else self.test
        return float(table.loc[table["best"], "scale"].iloc[0])

    def held(self, split: str = "validation") -> list[float]:
        table = self.validation if split == "validation" else self.test
        return [float(s) for s in table.loc[table["in_confidence_set"], "scale"]]


def _with_starts(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials with the start model's pretraining scale and seed (from its folder's name) as columns."""
    found = trials["model.name_or_path"].astype(str).map(lambda path: START.search(path))
    if found.isna().any():
        raise ValueError("a fine-tuning trial's start model is not named <arm>_scale<S>_seed<K>")
    return trials.assign(start=[float(m["scale"]) for m in found], replicate=[int(m["seed"]) for m in found])


def _verdicts(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    wide = rows.pivot_table(index="loss.scale", columns="replicate", values=metric).sort_index()
    verdicts = scale_verdicts(wide.to_numpy())
    table = verdicts.table.assign(scale=wide.index.to_numpy(dtype=float), mean=wide.mean(axis=1).to_numpy())
    return table.assign(best=np.arange(len(table)) == verdicts.best)


def start_verdict(trials: pd.DataFrame, start: float | None) -> StartVerdict:
    """The verdicts of one start's trials (columns loss.scale, trial.learning_rate, replicate and the metrics)."""
    cells = trials.groupby(["trial.learning_rate", "loss.scale"])[VALIDATION].mean().reset_index()
    rate = float(cells["trial.learning_rate"].to_numpy()[int(cells[VALIDATION].to_numpy().argmax())])
    rows = trials[trials["trial.learning_rate"] == rate]
    n_seeds = int(rows["replicate"].nunique())
    return StartVerdict(start, rate, _verdicts(rows, VALIDATION), _verdicts(rows, TEST), n_seeds)


def start_verdicts(results: Path, arm: Arm = STATIC) -> tuple[list[StartVerdict], list[Facts]] | None:
    """Per start scale (in order), then from scratch when that folder exists; None until the arm's fine-tuning
    exists."""
    folder = results / arm.finetune
    if not present(folder):
        return None
    trials = _with_starts(complete_trials(folder))
    found = [start_verdict(trials[trials["start"] == s], s) for s in sorted(trials["start"].unique())]
    starts = int(trials.groupby("start")["replicate"].nunique().min())
    words = f"fine-tuning seeds per start model ({starts} start models per start scale)"
    facts = [replace(facts_of(folder, start=False), n_seeds=finetuning_seeds(results, arm), seed_words=words)]
    scratch = results / arm.scratch
    if present(scratch):
        found.append(start_verdict(complete_trials(scratch).rename(columns={"trial.seed": "replicate"}), None))
        facts.append(facts_of(scratch))
    return found, facts


def comparison_table(verdicts: list[StartVerdict]) -> pd.DataFrame:
    """The start scales' verdicts as a comparison table (`sweep.report.write_best_scale_vs_condition` reads it)."""
    rows = []
    for verdict in (v for v in verdicts if v.start is not None):
        for split, table in (("validation", verdict.validation), ("test", verdict.test)):
            rows.append(
                table.assign(
                    condition=f"{CONDITION}={verdict.start:g}",
                    metric=VALIDATION if split == "validation" else TEST,
                    n_seeds=verdict.n_seeds,
                    learning_rate=verdict.learning_rate,
                )
            )
    return pd.concat(rows, ignore_index=True)


def write_headline_figure(results: Path, out_dir: Path, arm: Arm = STATIC) -> list[Path]:
    """The best fine-tuning scale and its confidence set against the start model's training scale, the diagonal
    drawn (``best_scale_vs_condition``), into ``out_dir``; nothing until the arm's fine-tuning folder exists."""
    found = start_verdicts(results, arm)
    if found is None:
        return []
    table = comparison_table(found[0])
    return write_best_scale_vs_condition(table, out_dir, diagonal=True, replicates=replicate_words(results, arm))


def finetuning_seeds(results: Path, arm: Arm = STATIC) -> int:
    """The fewest fine-tuning seeds any start model of the arm was fine-tuned with (per scale and rate)."""
    trials = complete_trials(results / arm.finetune)
    keys = ["model.name_or_path", "trial.learning_rate", "loss.scale"]
    return int(trials.groupby(keys)["trial.seed"].nunique().min())


def replicate_words(results: Path, arm: Arm = STATIC) -> str:
    """What the verdicts' replicates are: the start models (pretraining seeds) per start scale, and the fine-tuning
    seeds each was fine-tuned with."""
    trials = _with_starts(complete_trials(results / arm.finetune))
    starts = int(trials.groupby("start")["replicate"].nunique().min())
    seeds = finetuning_seeds(results, arm)
    return (
        f"{starts} start models per start scale (pretraining seeds),\n{seeds} fine-tuning seed"
        f"{'s' if seeds != 1 else ''} each"
    )


def starts_words(said: ArmLines) -> str:
    """``static starts pretrained at scales 10, 20 and 50`` for an arm's lines."""
    scales = [f"{s:g}" for s in said.starts]
    return f"{said.arm.words} starts pretrained at scales {', '.join(scales[:-1])} and {scales[-1]}"


def _set_words(scales: list[float]) -> str:
    return "{" + ", ".join(f"{s:g}" for s in sorted(scales)) + "}"


def start_line(verdict: StartVerdict) -> str:
    """One start's verdict in words: its rate, the best fine-tuning scale and the confidence set on each split."""
    start = (
        f"a start pretrained at scale {verdict.start:g}" if verdict.start is not None else "scratch (never pretrained)"
    )
    return (
        f"from {start} ({verdict.n_seeds} {'pretraining ' if verdict.start is not None else ''}seeds, learning rate "
        f"{verdict.learning_rate:g}): best fine-tuning scale {verdict.best():g} on validation (95% set "
        f"{_set_words(verdict.held())}), {verdict.best('test'):g} on test (set {_set_words(verdict.held('test'))})"
    )


def follows(verdicts: list[StartVerdict]) -> str:
    """``follows`` when the best fine-tuning scale rises with the start scale and the lowest and highest starts'
    confidence sets are apart (on validation and on test); ``shared`` when one scale is in every start's set on both
    splits (a common optimum is not ruled out; not shown equivalent either); ``not followed`` when the highest
    start's own scale is out of its set on a split; else ``unclear``."""
    starts = [v for v in verdicts if v.start is not None]
    for split in ("validation", "test"):
        bests = [v.best(split) for v in starts]
        rising = bests == sorted(bests) and len(set(bests)) > 1
        apart = not set(starts[0].held(split)) & set(starts[-1].held(split))
        if not (rising and apart):
            break
    else:
        return "follows"
    common = set.intersection(*(set(v.held(split)) for v in starts for split in ("validation", "test")))
    if common:
        return "shared"
    return "not followed" if not _keeps_own(starts[-1]) else "unclear"


def _keeps_own(verdict: StartVerdict) -> bool:
    """Whether the start's own scale is in the confidence set for the best fine-tuning scale on both splits."""
    return verdict.start in verdict.held() and verdict.start in verdict.held("test")


def own_scale_words(verdicts: list[StartVerdict]) -> str:
    """For which starts fine-tuning at the start's own scale is in the confidence set for the best on both splits,
    and for which not (with the best there)."""
    starts = [v for v in verdicts if v.start is not None]
    kept = [f"{v.start:g}" for v in starts if _keeps_own(v)]
    lost = [
        f"{v.start:g} (best {v.best():g} on validation, {v.best('test'):g} on test)"
        for v in starts
        if not _keeps_own(v)
    ]
    words = "the start's own scale is in the confidence set for the best on validation and test for the start at "
    words += f"{' and '.join(kept)}" if kept else "none of them"
    return words + (f", not for {'; '.join(lost)}" if lost else "")


def own_gap_line(verdicts: list[StartVerdict]) -> str:
    """Per start, fine-tuning at the start's own scale minus the best other fine-tuning scale (mean over the start
    models; positive: the own scale is ahead), on validation, which chose, and on test: how far apart the choice is."""
    parts = []
    for verdict in (v for v in verdicts if v.start is not None):
        gaps = []
        for table in (verdict.validation, verdict.test):
            means = table.set_index("scale")["mean"]
            own = float(means.get(verdict.start, float("nan")))
            gaps.append(signed(own - float(means.drop(verdict.start, errors="ignore").max())))
        parts.append(f"{verdict.start:g}: {gaps[0]} / {gaps[1]}")
    return (
        "fine-tuning at the start's own scale minus the best other fine-tuning scale (validation / test; one "
        "fine-tuning seed per start model, no interval): " + "; ".join(parts)
    )


def gain_line(results: Path, arm: Arm = STATIC) -> str:
    """Per start scale, how much the best fine-tuning cell (on validation) moves the start's own validation score
    (its untrained row of ``spearman_vs_scale``), mean over the pretraining seeds: fine-tuning that barely moves a
    start says little about which scale suits it."""
    folder = results / arm.finetune
    summary = results_table(folder, "spearman_vs_scale")
    own = summary[(summary["scale"] == 0) & (summary["split"] == "validation")]
    own = own.groupby(summary.columns[0])["mean"].first()
    trials = _with_starts(complete_trials(folder))
    best = trials.groupby(["model.name_or_path", "trial.learning_rate", "loss.scale"])[VALIDATION].mean()
    gains = (best.groupby(level=0).max() - own).rename("gain").reset_index()
    starts = trials.drop_duplicates("model.name_or_path").set_index("model.name_or_path")["start"]
    gains["start"] = gains["model.name_or_path"].map(starts)
    parts = [f"{start:g}: {signed(gain)}" for start, gain in gains.groupby("start")["gain"].mean().items()]
    return "the best fine-tuning cell minus the start's own STSB validation score, by start scale: " + "; ".join(parts)


@dataclass(frozen=True)
class ArmLines:
    """What the findings page says of one arm: evidence lines, `follows`' word, `own_scale_words`, the facts."""

    arm: Arm
    starts: list[float]  # the scales its starts were pretrained at
    lines: list[str]
    word: str
    own_scale: str
    facts: list[Facts]


def study_lines(results: Path) -> list[ArmLines]:
    """For each arm whose fine-tuning exists (in `ARMS`' order), what the findings page says of it."""
    said = []
    for arm in ARMS:
        found = start_verdicts(results, arm)
        if found is not None:
            verdicts, facts = found
            lines = [*map(start_line, verdicts), own_gap_line(verdicts), gain_line(results, arm)]
            starts = [v.start for v in verdicts if v.start is not None]
            said.append(ArmLines(arm, starts, lines, follows(verdicts), own_scale_words(verdicts), facts))
    return said


def study_strength(said: ArmLines) -> Strength:
    """The rule's grade of one arm of study 2 as evidence on whether fine-tuning should keep the start's scale: its
    verdict separates when the word is `follows` or `not followed` (a start's own scale out of its set), in as many
    conditions as it has starts."""
    return strength(said.facts, said.word in ("follows", "not followed"), len(said.starts))
