"""What a findings page stands on: the facts of a results folder that the strength rule (`sweep.report.grading`)
reads (seeds, whether test confirms the validation choice, and on request the design of its trainings), a question's
`Section` and its markdown (`render`), and small readers of the folders (`table`, `best_row`, `row_at`, `tidy`,
`scope`). Public through `sweep.report`; the generic page of
`sweep.report.question_file` and a project's own page code (such as this repository's ``research/findings``) build
on it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pandas as pd

from sweep.report.grading import (
    EDGE,
    FIXED,
    TUNED,
    Design,
    Facts,
    Strength,
    strength,
    strength_rule,
)
from sweep.report.pooled import folder_frame
from sweep.report.results_folder import (
    PAIRED_TEST_CSV,
    TRIALS_CSV,
    complete_trials,
    flat_config,
    read_csv,
    table_path,
)
from sweep.stats import seed_paired_comparison

STSB_VALIDATION, STSB_TEST = "stsb_validation_spearman", "stsb_test_spearman"

STRENGTH_RULE = strength_rule()
NOT_YET_RUN = "not yet run"


def num(value: float) -> str:
    return f"{value:.3f}"


def signed(value: float) -> str:
    return f"{value:+.3f}"


def bound(value: float) -> str:
    """A bound to 3 decimals, or to its first significant digit when that would print a nonzero bound as 0.000 (an
    interval that excludes 0 by less than 0.0005 must not read as one that touches it)."""
    text = f"{value:.3f}"
    if value == 0 or float(text) != 0:
        return text
    digits = -math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}"


def interval(low: float, high: float) -> str:
    return f"[{bound(low)}, {bound(high)}]" if pd.notna(low) else "(no interval)"


def temperature(scale: float) -> str:
    return f"{1 / scale:.3g}" if scale else "none"


def plural(count: float, word: str) -> str:
    return f"{count:g} {word}{'s' if count != 1 else ''}"


def table(folder: Path, stem: str) -> pd.DataFrame:
    """``folder/stem.csv`` (or ``stem.csv.gz``: `sweep.report.results_folder.table_path`), or an empty frame when
    there is none."""
    path = table_path(folder, stem)
    return read_csv(path) if path.is_file() else pd.DataFrame()


def status(folder: Path) -> str:
    return f"`{folder.name}`" if (folder / TRIALS_CSV).is_file() else f"`{folder.name}`: {NOT_YET_RUN}"


def present(folder: Path) -> bool:
    return (folder / TRIALS_CSV).is_file()


def objective(folder: Path) -> str:
    """The metric the study chose on: ``eval.objective`` when it names a trials column, else STSB validation."""
    name = str(flat_config(folder).get("eval.objective"))
    trials = read_csv(folder / TRIALS_CSV)
    return name if name in trials else STSB_VALIDATION


def test_metric(metric: str) -> str:
    """The test partner of a validation metric (``captions30k_val_ndcg_at_10`` -> ``captions30k_test_ndcg_at_10``)."""
    return STSB_TEST if metric == STSB_VALIDATION else metric.replace("_val_", "_test_").replace("validation", "test")


def tidy(folder: Path, metric: str) -> pd.DataFrame:
    """The COMPLETE trials as (condition, scale, seed, value), read by `sweep.report.pooled.folder_frame`."""
    scale = float(read_csv(folder / TRIALS_CSV)["loss.scale"].dropna().iloc[0])
    return folder_frame(folder, metric, (scale, scale))[["condition", "scale", "seed", "value"]]


def by_number(labels: Sequence[str]) -> list[str]:
    """Condition labels ``name=value`` in the numeric order of their value (as given when not numeric)."""

    def key(label: str) -> float:
        try:
            return float(label.rsplit("=", 1)[-1])
        except ValueError:
            return float("inf")

    return sorted(labels, key=key)


def best_row(paired: pd.DataFrame, condition: str = "") -> pd.Series:
    rows = paired[(paired["condition"].astype("string").fillna("") == condition) & paired["best"].astype(bool)]
    return rows.iloc[0]


def row_at(paired: pd.DataFrame, scale: float, condition: str = "") -> pd.Series | None:
    rows = paired[(paired["condition"].astype("string").fillna("") == condition) & (paired["scale"] == scale)]
    return rows.iloc[0] if not rows.empty else None


def against_best(row: pd.Series) -> str:
    """``0.014 below the best [-0.026, 0.054], not distinguishable`` (a paired_comparison row)."""
    if row["best"]:
        return "best"
    return f"{num(row['diff_to_best'])} below the best {interval(row['ci_low'], row['ci_high'])}, {row['verdict']}"


def _confirmed_by_table(validation: pd.DataFrame, test: pd.DataFrame) -> bool:
    column = "point" if "point" in validation else "scale"
    chosen = validation[validation["best"].astype(bool)]
    if chosen.empty:
        return False
    for condition, row in zip(chosen["condition"].astype("string").fillna(""), chosen[column], strict=True):
        on_test = test[(test["condition"].astype("string").fillna("") == condition) & (test[column] == row)]
        if on_test.empty or not bool(on_test["in_confidence_set"].iloc[0]):
            return False
    return True


def _confirmed_by_seeds(folder: Path, metric: str) -> bool:
    """Without a test table: per condition, the scale chosen on ``metric`` is not worse on its test partner."""
    partner = test_metric(metric)
    if partner not in read_csv(folder / TRIALS_CSV):
        return False
    chosen, tested = tidy(folder, metric), tidy(folder, partner)
    for condition, group in chosen.groupby("condition"):
        best = seed_paired_comparison(group).query("best")["scale"]
        verdicts = seed_paired_comparison(tested[tested["condition"] == condition]).set_index("scale")["verdict"]
        if best.empty or verdicts.get(float(best.iloc[0])) in (None, "worse"):
            return False
    return True


def folder_facts(folder: Path) -> Facts:
    """Seeds (the fewest of any comparison) and whether test confirms the choice in every condition: from the
    paired tables, or, where the study chose on another metric or has none, from the trials by seed."""
    paired, metric = table(folder, "paired_comparison"), objective(folder)
    if not paired.empty and metric == STSB_VALIDATION:
        confirmed = (folder / PAIRED_TEST_CSV).is_file() and _confirmed_by_table(
            paired, table(folder, PAIRED_TEST_CSV[:-4])
        )
        return Facts(folder.name, int(paired["n_seeds"].min()), confirmed)
    frame = tidy(folder, metric)
    seeds = int(frame.groupby(["condition", "scale"])["seed"].nunique().min())
    return Facts(folder.name, seeds, seeds > 1 and _confirmed_by_seeds(folder, metric))


RATE_COLUMN, SCALE_COLUMN, SEED_COLUMN = "trial.learning_rate", "loss.scale", "trial.seed"


def _rate_setting(trials: pd.DataFrame, metric: str, config: dict[str, object]) -> tuple[str, str]:
    """(how the learning rate was set, in words): one value is FIXED; a swept rate is chosen per value of the other
    swept conditions as the rate of the best (rate, scale) cell by mean ``metric``, EDGE when any choice is the lowest
    or highest rate tried, else TUNED."""
    if RATE_COLUMN not in trials or trials[RATE_COLUMN].nunique() < 2:
        rate = trials[RATE_COLUMN].iloc[0] if RATE_COLUMN in trials else config.get(RATE_COLUMN)
        return FIXED, f"{float(str(rate)):g}"
    rates = sorted(float(r) for r in trials[RATE_COLUMN].unique())
    swept = [c for c in trials.columns if "." in c and c not in (RATE_COLUMN, SEED_COLUMN)]
    # the grid's points are its scales, the other swept keys conditions; a grid without a scale (AnglE's weights) is
    # one set of points
    points = [SCALE_COLUMN] if SCALE_COLUMN in trials else [c for c in swept if c != SCALE_COLUMN]
    others = [c for c in swept if c not in points]
    trained = trials[trials[SCALE_COLUMN] > 0] if SCALE_COLUMN in trials else trials
    groups = trained.groupby(others, dropna=False) if others else [((), trained)]
    chosen = set()
    for _, group in groups:
        means = group.groupby([RATE_COLUMN, *points], dropna=False)[metric].mean()
        best_cell = cast(tuple[float, ...], means.idxmax())  # a MultiIndex label: (rate, point...)
        chosen.add(float(best_cell[0]))
    span = f"{rates[0]:g}-{rates[-1]:g}"
    picked = ", ".join(f"{r:g}" for r in sorted(chosen))
    at_edge = [r for r in chosen if r in (rates[0], rates[-1])]
    if at_edge:
        return EDGE, f"{picked} chosen, of {span}"
    return TUNED, f"{picked} chosen, inside {span}"


def folder_design(folder: Path, start_scale: float | None = None, passes: float | None = None) -> Design:
    """The `Design` of a folder's COMPLETE trials for `sweep.report.grading.strength`: the fewest optimizer steps of a
    trained scale (``trained_steps`` where logged, else ``trial.max_steps``), how the learning rate was set
    (`_rate_setting`, on the study's objective) and the scales compared. ``start_scale`` (the scale a contrastively
    trained start model was trained at) and ``passes`` (passes over the training data) are the caller's: a folder
    records neither."""
    config, trials = flat_config(folder), complete_trials(folder)
    trained = trials[trials[SCALE_COLUMN] > 0] if SCALE_COLUMN in trials else trials  # scale 0 does not learn
    if "trained_steps" in trained and trained["trained_steps"].notna().any():
        steps: int | None = int(trained["trained_steps"].min())
    else:
        steps = int(str(config["trial.max_steps"])) if config.get("trial.max_steps") is not None else None
    rate, words = _rate_setting(trials, objective(folder), config)
    scales = tuple(sorted(float(s) for s in trials[SCALE_COLUMN].unique() if s > 0)) if SCALE_COLUMN in trials else ()
    return Design(steps, passes, rate, words, start_scale, scales)


def scope(folder: Path, seeds: int) -> str:
    """Model, loss, steps, data and evaluation of a study, from its ``config.yaml`` and trials."""
    config, trials = flat_config(folder), read_csv(folder / TRIALS_CSV)
    name = config.get("model.name_or_path")
    layers = config.get("model.num_layers")
    model = f"static embeddings of {name}" if config.get("model.kind") == "static" else f"{name}"
    model += f" cut to {layers} layer{'s' if layers != 1 else ''}" if layers else ""
    steps = config.get("trial.max_steps")
    run = f"{steps} steps" if steps else "one pass"
    rows = "swept" if "data.train.max_samples" in trials.columns else config.get("data.train.max_samples") or "all"
    swept = [c for c in trials.columns if "." in c and c not in ("loss.scale", "trial.seed")]
    sweep = f"; swept: {', '.join(swept)}" if swept else ""
    metric = objective(folder)
    batch = "" if "trial.batch_size" in swept else f" x batch {config.get('trial.batch_size')}"
    rate = "" if "trial.learning_rate" in swept else f", lr {config.get('trial.learning_rate')}"  # swept: not it
    return (
        f"`{folder.name}`: {model}, loss {config.get('loss.name')}, {run}{batch}{rate}, "
        f"trained on {config.get('data.train.local_file')} ({rows} rows)"
        f"{sweep}; chosen on {metric}, confirmed on {test_metric(metric)}; {seeds} seed{'s' if seeds != 1 else ''}"
    )


@dataclass
class Section:
    """One question of the page and its six parts."""

    question: str
    answer: str
    strength: Strength
    evidence: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)
    literature: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)


PARTS = ("Answer", "Evidence", "Strength", "Scope", "Literature", "What would change it")


def render(section: Section) -> list[str]:
    def bullets(items: list[str]) -> list[str]:
        return [f"- {item}" for item in items] or ["- none"]

    return [
        f"## {section.question}",
        "",
        f"**Answer.** {section.answer}",
        "",
        "**Evidence.**",
        "",
        *bullets(section.evidence),
        "",
        f"**Strength.** {section.strength}",
        "",
        "**Scope.**",
        "",
        *bullets(section.scope),
        "",
        "**Literature.**",
        "",
        *bullets(section.literature),
        "",
        "**What would change it.**",
        "",
        *bullets(section.change),
        "",
    ]


def untested(question: str, folders: Sequence[Path], change: str) -> Section:
    """A question none of whose study folders exists."""
    names = ", ".join(status(f) for f in folders)
    return Section(question, f"Untested: {names}.", strength([], False, 0), [names], [], [], [change])
