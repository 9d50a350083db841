"""The figure the findings page leads with, the one to link from sentence-transformers #3054 ("'scale'
hyperparameter in MultipleNegativesRankingLoss"): per study condition, how far the best scale, 10 and 15 lie from the
library default 20, paired over seeds on the split each row says (test where the study has it: validation chose the
best scale and the learning rate), each row tagged with its model, how its learning rate was set, its seeds and its
metric. The statistics and the drawing are the product's (`sweep.report.seed_contrasts`, `sweep.report.write_forest`);
which studies are rows is `ENTRIES`, one entry per study: adding a study's row is one entry."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sweep.report import (
    FOREST_COLUMNS,
    NO_INTERVAL,
    PAIRED,
    complete_trials,
    flat_config,
    interval,
    metric_words,
    objective,
    present,
    seed_contrasts,
    signed,
    strength,
    table,
    test_metric,
    write_forest,
)
from sweep.stats import DEFAULT_MARGIN

from .design import facts_of, start_scale
from .literature import DEFAULT, ST_3054_TABLE

STEM = "scale_vs_default"  # research/results/scale_vs_default.{png,csv}, beside FINDINGS.md
RATE, SIZE, BATCH = "trial.learning_rate", "data.train.max_samples", "trial.batch_size"
BEST = "best"
CONTRASTS = ((BEST, DEFAULT), (10.0, DEFAULT), (15.0, DEFAULT))
SIX, ONE, STATIC = "6-layer all-MiniLM-L6-v2 (real)", "1-layer transformer", "static embeddings"
LEVEL = 0.95


@dataclass(frozen=True)
class Entry:
    """One study's rows: its folder, the model family it trains, the swept condition that splits it into rows
    (``by``), the learning rate chosen per scale or per condition (``tune``, ``per``) and a few words of set-up."""

    folder: str
    model: str
    by: str | None = None
    tune: str | None = None
    per: str = "scale"
    words: str = ""


ENTRIES = (
    Entry("mnrl_finetune_minilm_lr", SIX, tune=RATE, per="scale", words="captions30k, one pass"),  # issue 51, item 4
    Entry("mnrl_finetune_minilm", SIX, words="captions30k, one pass"),
    Entry("mnrl_scale_minilm", SIX, words="NLI, 40 steps"),
    Entry("start_temperature_scratch_l1", ONE, words="random init, NLI"),
    Entry("mnrl_scale_lr_tuned", STATIC, tune=RATE, per="scale", words="NLI"),
    Entry("mnrl_scale_lr_low", STATIC, by=RATE, words="NLI"),
    Entry("mnrl_scale_lr", STATIC, by=RATE, words="NLI"),
    Entry("mnrl_scale", STATIC, words="NLI"),
    Entry("mnrl_scale_convergence", STATIC, words="NLI, to convergence"),
    Entry("mnrl_scale_isotropic", STATIC, words="random start, NLI"),
    Entry("start_temperature_scratch", STATIC, tune=RATE, per="condition", words="random start, NLI"),
    Entry("mnrl_scale_batch", STATIC, by=BATCH, words="captions30k, one pass"),
    Entry("mnrl_scale_datasize", STATIC, by=SIZE, words="captions30k, one pass"),
    Entry("mnrl_scale_datasize_steps", STATIC, by=SIZE, tune=RATE, per="condition", words="captions30k, 468 steps"),
    Entry("mnrl_scale_datasize_pass", STATIC, by=SIZE, tune=RATE, per="condition", words="captions30k, one pass"),
)


def _condition_words(key: str, value: float) -> str:
    if key == SIZE:
        return "all pairs" if value >= 100_000 else f"{value:,.0f} pairs"
    if key == BATCH:
        return f"batch {value:g}"
    return f"lr {value:g}"


def _rate_words(entry: Entry, trials: pd.DataFrame, chosen: set[float], fixed: object) -> tuple[str, str]:
    """(how the row's learning rate was set, in words; the short tag): tuned (chosen inside the rates tried), at the
    grid's edge, one rate of a grid, or one fixed value."""
    if entry.tune is not None:
        tried = sorted(float(r) for r in trials[entry.tune].unique())
        inside = all(tried[0] < r < tried[-1] for r in chosen)
        how = f"per {entry.per}" if entry.per == "scale" else "per condition"
        picked = ", ".join(f"{r:g}" for r in sorted(chosen))
        if inside:
            return f"learning rate tuned {how} ({picked} of {tried[0]:g}-{tried[-1]:g})", "rate tuned"
        return f"learning rate chosen {how} at the edge of {tried[0]:g}-{tried[-1]:g} ({picked})", "rate at grid edge"
    if entry.by == RATE:
        return "one learning rate of the grid, not tuned", "rate not tuned"
    rate = float(trials[RATE].iloc[0]) if RATE in trials else float(str(fixed))
    return f"learning rate {rate:g}, fixed", f"rate {rate:g} fixed"


def entry_rows(results: Path, entry: Entry) -> list[dict[str, object]]:
    """The forest rows of one entry (none when its folder has not run)."""
    folder = results / entry.folder
    if not present(folder):
        return []
    trials, fixed = complete_trials(folder), flat_config(folder).get(RATE)
    chosen_on = objective(folder)
    read_on = test_metric(chosen_on) if test_metric(chosen_on) in trials else chosen_on
    split = "test" if read_on != chosen_on else "validation"
    parts = (
        [(None, trials)]
        if entry.by is None
        else [(float(v), trials[trials[entry.by] == v]) for v in sorted(trials[entry.by].unique())]
    )
    rows = []
    for value, part in parts:
        contrasts = seed_contrasts(part, chosen_on, read_on, CONTRASTS, entry.tune, entry.per, LEVEL)
        if contrasts.empty:
            continue
        best = contrasts.loc[contrasts["contrast"].str.startswith(BEST), "a"]
        chosen = {float(v) for v in contrasts[["a_value", "b_value"]].to_numpy().ravel() if pd.notna(v)}
        rate, rate_tag = _rate_words(entry, part, chosen, fixed)
        n = int(contrasts["n"].min())
        condition = "" if value is None else _condition_words(str(entry.by), value)
        best_words = f" (best {best.iloc[0]:g})" if len(best) else ""
        label = f"{entry.folder}" + (f", {condition}" if condition else "") + best_words
        metric = metric_words(read_on).replace(f" {split} ", " ").replace(" Spearman", "")
        tags = f"{entry.words}; {rate_tag}; n={n}; {split}: {metric}"
        for record in contrasts.to_dict("records"):
            rows.append(
                {
                    "row": f"{label}\n{tags}",
                    "group": entry.model,
                    **{k: record[k] for k in ("contrast", "n", "mean", "ci_low", "ci_high", "a", "b")},
                    "folder": entry.folder,
                    "condition": condition,
                    "model": entry.model,
                    "learning_rate": rate,
                    "metric": read_on,
                    "split": split,
                    "chosen_on": chosen_on,
                }
            )
    return rows


@functools.cache  # the page reads it for its answer line and writes it as the figure
def forest_rows(results: Path) -> pd.DataFrame:
    """Every entry's rows, in `ENTRIES`' order (the figure's top first)."""
    rows = [row for entry in ENTRIES for row in entry_rows(results, entry)]
    columns = [*FOREST_COLUMNS, "a", "b", "folder", "condition", "model", "learning_rate", "metric", "split"]
    return pd.DataFrame(rows, columns=[*columns, "chosen_on"])


TITLE = "Each study condition against MNRL's default scale 20 (sentence-transformers #3054)"
METHOD = (
    "paired over seeds (each seed's two trials), mean and 95% t-interval per contrast (not simultaneous);\n"
    "the best scale and any learning rate chosen on validation, the difference read on the row's split; n = seeds"
)


def write_forest_figure(results: Path, out_dir: Path) -> list[Path]:
    """``scale_vs_default.{png,csv}`` into ``out_dir`` (nothing when no entry has run)."""
    return write_forest(forest_rows(results), out_dir, STEM, DEFAULT_MARGIN, TITLE, METHOD)


def _contrast_words(row: pd.Series) -> str:
    """``the best (15) - 20`` or ``10 - 20``."""
    best = f"the best ({row['a']:g})"
    return str(row["contrast"]).replace(BEST, best)


def answer_line(results: Path, tuned_folder: str = "mnrl_scale_lr_tuned") -> str:
    """The answer above the figure: in how many rows the best scale beats 20 by more than the margin, by less, or
    cannot be told; and the tuned study's best - 20 and 10 - 20."""
    rows = forest_rows(results)
    best = rows[rows["contrast"].str.startswith(BEST)]
    if best.empty:
        return "No study has run yet."
    is_default = best[best["a"] == DEFAULT]
    measured = best[(best["n"] > 1) & (best["a"] != DEFAULT)]
    single = best[(best["n"] <= 1) & (best["a"] != DEFAULT)]  # one seed: a point, no interval to place
    beyond = measured[measured["ci_low"] > DEFAULT_MARGIN]
    inside = measured[(measured["ci_low"] >= -DEFAULT_MARGIN) & (measured["ci_high"] <= DEFAULT_MARGIN)]
    tuned = rows[rows["folder"] == tuned_folder]
    chosen = tuned.loc[tuned["contrast"].str.startswith(BEST), "a"]
    tuned = tuned[tuned["contrast"].str.startswith(BEST) | ~tuned["a"].isin(chosen)]  # best - 20 said once
    said = "; ".join(
        f"{_contrast_words(r)} is {signed(r['mean'])} {interval(r['ci_low'], r['ci_high'])}"
        for _, r in tuned.iterrows()
    )
    groups = ", ".join(dict.fromkeys(best["model"]))
    return (
        f"**Answer for #3054** (is MNRL's default scale 20 right?): near the best, seldom the best, on small models. "
        f"Over {len(best)} study conditions ({groups}), the best scale is 20 in {len(is_default)}; it beats 20 by more "
        f"than the {DEFAULT_MARGIN:g} margin (its whole interval above it) in {len(beyond)} and by less (its whole "
        f"interval inside +-{DEFAULT_MARGIN:g}) in {len(inside)}; the other "
        f"{len(measured) - len(beyond) - len(inside)} cannot be placed either side of the margin"
        + (f"; {len(single)} ran one seed (a point, no interval)" if len(single) else "")
        + ". "
        + (
            f"With the learning rate tuned per scale (`{tuned_folder}`, {tuned['model'].iloc[0]}, "
            f"{int(tuned['n'].min())} seeds, {metric_words(str(tuned['metric'].iloc[0]))}): {said}."
            if not tuned.empty
            else ""
        )
        + _start_words(results, best)
    )


def _start_words(results: Path, best: pd.DataFrame) -> str:
    """Which rows start from a model trained at 20 and what the rows from a random start chose."""
    folders = list(dict.fromkeys(best["folder"]))
    random = [f for f in folders if start_scale(results / f) is None]
    if not random:
        return ""
    chosen = best[best["folder"].isin(random)].groupby("folder", sort=False)["a"].first()
    return (
        f" Every row but those from a random start begins at all-MiniLM-L6-v2, itself trained at {DEFAULT:g}; from a "
        "random start the best is " + ", ".join(f"{scale:g} (`{folder}`)" for folder, scale in chosen.items()) + "."
    )


def real_tuned_lines(results: Path) -> list[str]:
    """For each real-transformer entry whose learning rate is tuned per scale (`mnrl_finetune_minilm_lr`, issue 51,
    item 4) and whose folder has run: its best - 20 in the figure's numbers, graded by the rule (`sweep.report.strength`
    on the folder's facts and design: one seed is a point, no interval, and so *weak*; the start trained at 20 is a
    confound the design implies)."""
    rows, lines = forest_rows(results), []
    for entry in ENTRIES:
        if entry.model != SIX or entry.tune is None or not present(results / entry.folder):
            continue
        mine = rows[(rows["folder"] == entry.folder) & rows["contrast"].str.startswith(BEST)]
        if mine.empty:
            continue
        row = mine.iloc[0]
        n = int(row["n"])
        has_interval = n > 1 and pd.notna(row["ci_low"])
        separates = has_interval and (row["ci_low"] > 0 or row["ci_high"] < 0)
        graded = strength(
            [facts_of(results / entry.folder)], bool(separates), 1, method=PAIRED if has_interval else NO_INTERVAL
        )
        said = (
            f"{_contrast_words(row)} is {signed(row['mean'])} {interval(row['ci_low'], row['ci_high'])} over {n} seeds"
            if has_interval
            else f"{_contrast_words(row)} is {signed(row['mean'])} on {n} seed (a point, no interval)"
        )
        lines += [
            f"The real transformer at tuned learning rates (`{entry.folder}`: all-MiniLM-L6-v2, itself trained at "
            f"{DEFAULT:g}, fine-tuned on {entry.words}; {row['learning_rate']}; read on "
            f"{metric_words(str(row['metric']))}): {said}. Strength by the rule: {graded}.",
            "",
        ]
    return lines


def lead_lines(results: Path) -> list[str]:
    """The top of the page: the answer line, the figure, what its rows and intervals are, and the two studies #3054
    readers ask for next (its own loss table reproduced; where a learnt temperature settles)."""
    rows = forest_rows(results)
    if rows.empty:
        return [answer_line(results), ""]
    groups = ", ".join(dict.fromkeys(rows["model"]))
    waiting = [f"`{entry.folder}`" for entry in ENTRIES if not present(results / entry.folder)]
    lines = [
        answer_line(results),
        "",
        f'<img src="{STEM}.png" alt="best - 20, 10 - 20 and 15 - 20 by study condition, with 95% intervals over '
        f'seeds and the +-{DEFAULT_MARGIN:g} band" width="760">',
        "",
        f"`research/results/{STEM}.png` (the numbers of every row in `{STEM}.csv` beside it): one row per study "
        f"condition ({rows['row'].nunique()} rows), grouped by model ({groups}), each tagged with its data and run "
        "length, how its learning rate was set, its seeds (n) and the split and metric its differences are read "
        "on (test wherever the study has one: validation chose the best scale and any learning rate). Each "
        "difference is paired over seeds: per seed, that seed's trials at the two scales (the same batches); mean and "
        f"{LEVEL:.0%} t-interval over the seeds, per contrast (not simultaneous). The grey band is +-"
        f"{DEFAULT_MARGIN:g}, a difference nobody would act on. A study that did not run 10, 15 or 20 shows only the "
        "contrasts it has."
        + (
            f" Not yet run: {', '.join(waiting)} (a real transformer fine-tuned at tuned learning rates)."
            if waiting
            else ""
        ),
        "",
        *real_tuned_lines(results),
    ]
    links = []
    loss = table(results / "loss_vs_scale", "loss_vs_scale")  # the product's reader, whatever the file's form
    if not loss.empty:
        confident = max(loss["profile"].unique(), key=lambda p: float(str(p).split(",")[0]))
        at = loss[loss["profile"] == confident].set_index("scale")["loss"]
        links.append(
            f"{ST_3054_TABLE} is reproduced by `research/results/loss_vs_scale/` (the analytic loss of four "
            f"similarity profiles and its gradient; the confident one, {confident}, costs {at[0.0]:.4f} = ln 4 at "
            f"scale 0 and {at[10.0]:.4f} at scale 10)"
        )
    learned = results / "learnable_scale"
    if present(learned):
        ends = complete_trials(learned).groupby("loss.scale")["learned_scale"].agg(["min", "max"])
        low, high = ends[ends.index < ends.index.max()], ends.loc[ends.index.max()]
        links.append(
            f"where a learnt temperature settles: `research/results/learnable_scale/` (a CLIP-style learnable scale "
            f"started at {low.index.min():g}-{low.index.max():g} ends at {low['min'].min():.1f}-"
            f"{low['max'].max():.1f}, from {ends.index.max():g} at {high['min']:.1f}-{high['max']:.1f}: near 20)"
        )
    if links:
        lines += ["See also: " + "; ".join(links) + ".", ""]
    return lines
