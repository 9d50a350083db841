"""Question (a)'s strongest evidence: ``mnrl_scale_lr_tuned``, the scale x learning-rate grid with 10 seeds. Read
from its paired tables (the verdict method, per learning rate), its own-best-learning-rate table (`python -m
sweep.report tuned`) and its trials (the two pre-registered contrasts, computed here: paired over seeds, Holm)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from sweep.report import (
    START,
    Control,
    Facts,
    best_row,
    by_number,
    complete_trials,
    folder_facts,
    interval,
    num,
    present,
    row_at,
    signed,
    strength,
    table,
)
from sweep.stats import DEFAULT_MARGIN

from .design import facts_of, versus_best
from .literature import DEFAULT

FOLDER = "mnrl_scale_lr_tuned"
CONTRASTS = ((10.0, DEFAULT), (15.0, DEFAULT))  # pre-registered in conf/experiment/mnrl_scale_lr_tuned.yaml
RATE = "trial.learning_rate"
PLATEAU = (10.0, 20.0)  # the scales the answer calls a plateau when the data make them one


@dataclass(frozen=True)
class Contrast:
    """``a - b`` on test, each scale at its own best learning rate, paired over seeds."""

    a: float
    b: float
    estimate: float
    low: float  # simultaneous (Bonferroni over the contrasts) t interval
    high: float
    p_holm: float
    n: int


@dataclass(frozen=True)
class Reanchor:
    """What the re-anchor study says for question (a)."""

    lines: list[str]
    summary: str  # the answer's sentence
    facts: Facts
    plateau: bool  # 20 as good as the best on test at its own learning rate (equivalent within the margin)
    as_good: list[float]  # the scales best or equivalent on test, each at its own best learning rate
    best_rate: float  # the best scale's own learning rate
    lr_effect: float  # how far the learning rate moves the default scale's test score (max - min over the rates)
    scale_effect: float  # how far the plateau's scales differ at the best rate (test)
    best: float  # the best scale on test, each scale at its own best rate
    control: Control | None  # the random start, a control of the start model's scale (None when it has not run)
    lr_change: Contrast | None = None  # 20 at its best rate minus at its worst, paired over seeds (test)
    widest: Contrast | None = None  # the pre-registered contrast farthest from 0: the plateau's largest difference


def contrasts(trials: pd.DataFrame, rates: pd.Series, level: float = 0.95) -> list[Contrast]:
    """The pre-registered contrasts on test at each scale's own best learning rate (``rates``: scale -> rate, as
    `python -m sweep.report tuned` chose them on validation): paired t over the seeds, Holm's adjusted p, and
    intervals simultaneous over the contrasts (Bonferroni)."""
    at_own = trials[trials[RATE] == trials["loss.scale"].map(rates)]
    wide = at_own.pivot_table(index="trial.seed", columns="loss.scale", values="stsb_test_spearman")
    differences = [(wide[a] - wide[b]).dropna().to_numpy() for a, b in CONTRASTS]
    p_raw = [float(stats.ttest_1samp(d, 0.0).pvalue) for d in differences]
    p_holm = multipletests(p_raw, method="holm")[1]
    simultaneous = 1 - (1 - level) / len(CONTRASTS)
    out = []
    for (a, b), d, p in zip(CONTRASTS, differences, p_holm, strict=True):
        half = stats.t.ppf(0.5 + simultaneous / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        out.append(Contrast(a, b, float(d.mean()), float(d.mean() - half), float(d.mean() + half), float(p), len(d)))
    return out


def reanchor(results: Path) -> Reanchor | None:
    """The lines and the answer of the re-anchor study; None when it has not run."""
    folder = results / FOLDER
    if not present(folder):
        return None
    paired = table(folder, "paired_comparison")
    trials = complete_trials(folder)
    lines = []
    bests = {}
    for condition in by_number(list(paired["condition"].unique())):
        rows = paired[paired["condition"] == condition]
        top, at20 = best_row(rows, condition), row_at(rows, DEFAULT, condition)
        held = ", ".join(f"{s:g}" for s in rows.loc[rows["in_confidence_set"].astype(bool), "scale"])
        bests[condition] = float(top["scale"])
        lines.append(
            f"`{FOLDER}` {condition}: best scale {top['scale']:g} ({num(top['spearman'])}); 95% confidence set "
            f"{held}; 20: {_versus(rows, at20)}"
        )
    own = table(folder, "own_best_learning_rate")
    top = own[own["verdict on test"] == "best"].iloc[0]
    verdicts = {float(r["scale"]): str(r["verdict on test"]) for _, r in own.iterrows()}
    rates = own.set_index("scale")["best learning rate"]
    lines.append(
        f"`{FOLDER}`, each scale at its own best learning rate (chosen on validation; read on test, which chose "
        f"nothing): best {top['scale']:g} (lr {top['best learning rate']:g}); "
        + "; ".join(
            f"{r['scale']:g} (lr {r['best learning rate']:g}): {num(r['best - this on test'])} below "
            f"{interval(r['test CI low'], r['test CI high'])}, {r['verdict on test']}"
            for _, r in own.iterrows()
            if r["verdict on test"] != "best"
        )
    )
    tested = contrasts(trials, rates)
    for c in tested:
        lines.append(
            f"pre-registered contrast {c.a:g} - {c.b:g} on test, each at its own best rate (lr {rates[c.a]:g} vs "
            f"{rates[c.b]:g}): {_contrast(c)} (paired t over {c.n} seeds, intervals simultaneous over the "
            f"{len(CONTRASTS)} contrasts)"
        )
    means = trials.groupby(["loss.scale", RATE])["stsb_test_spearman"].mean()
    by_rate = means.xs(DEFAULT, level=0)
    at_best_rate = means.xs(float(top["best learning rate"]), level=1)
    plateau_spread = at_best_rate.loc[PLATEAU[0] : PLATEAU[1]]
    lines.append(
        f"on test, the learning rate moves scale 20 by {num(by_rate.max() - by_rate.min())} (lr "
        f"{by_rate.idxmin():g} to {by_rate.idxmax():g}); at lr {top['best learning rate']:g} the scales "
        f"{PLATEAU[0]:g}-{PLATEAU[1]:g} span {num(plateau_spread.max() - plateau_spread.min())}, all "
        f"{len(at_best_rate)} scales {num(at_best_rate.max() - at_best_rate.min())}"
    )
    figure = table(folder, "scale_and_condition")  # the figure draws validation (it chose the rates)
    drawn = figure.set_index(["scale", "condition_value"])["mean"]
    on_figure = drawn.xs(DEFAULT, level=0)
    spread = drawn.xs(float(top["best learning rate"]), level=1).loc[PLATEAU[0] : PLATEAU[1]]
    lines.append(
        f"on validation, as `{FOLDER}/scale_and_condition.png` draws it (the split that chose the rates): the "
        f"learning rate moves scale 20 by {num(on_figure.max() - on_figure.min())} (lr {on_figure.idxmin():g} to "
        f"{on_figure.idxmax():g}); at lr {top['best learning rate']:g} the scales {PLATEAU[0]:g}-{PLATEAU[1]:g} span "
        f"{num(spread.max() - spread.min())}"
    )
    plateau = verdicts.get(DEFAULT) in ("best", "equivalent")
    moves = len(set(bests.values())) > 1
    per_rate = ", ".join(f"{condition.split('=')[-1]}: {scale:g}" for condition, scale in bests.items())
    lr_effect, scale_effect = by_rate.max() - by_rate.min(), plateau_spread.max() - plateau_spread.min()
    above = [c for c in tested if c.low > 0]  # pre-registered scales detectably above the default
    level = (
        f"{verdicts.get(DEFAULT, 'not run')} to it within the {DEFAULT_MARGIN:g} margin"
        if plateau
        else verdicts.get(DEFAULT, "not run")
    )
    summary = (
        f"With the learning rate tuned per scale over {by_rate.size} rates and {folder_facts(folder).n_seeds} seeds "
        f"(`{FOLDER}`), {top['scale']:g} is best on test and 20 is {level}"
        + "".join(f"; the pre-registered {c.a:g} - {c.b:g} is {_contrast(c)}" for c in tested)
        + f"; the best scale {'moves' if moves else 'stays'} across learning rates ({per_rate}), and the learning "
        f"rate moves the default's test score by {num(lr_effect)}, "
        + ("more than" if lr_effect > scale_effect else "no more than")
        + f" the scales {PLATEAU[0]:g}-{PLATEAU[1]:g} differ at the best rate ({num(scale_effect)})"
    )
    opening = "Nearly" if plateau and above else "Yes, within a plateau" if plateau else "Not shown"
    as_good = sorted(scale for scale, verdict in verdicts.items() if verdict in ("best", "equivalent"))
    best_rate = float(top["best learning rate"])
    isotropic = results / "mnrl_scale_isotropic"
    control = None
    if present(isotropic):  # the start-model confound: the same set-up from random token embeddings
        rows = table(isotropic, "paired_comparison")
        at20 = row_at(rows, DEFAULT)
        verdict = str(at20["verdict"]) if at20 is not None else ""
        iso_facts = facts_of(isotropic)
        graded = strength([iso_facts], verdict in ("worse", "equivalent", "best"), 1)
        control = Control(START, isotropic.name, graded, agrees=verdict in ("best", "equivalent"))
        lines.append(
            f"the start embeddings come from all-MiniLM-L6-v2, trained at scale {DEFAULT:g}; from a random start "
            f"(`{isotropic.name}`, learning rate {iso_facts.design.rate_words}, not tuned) the best "
            f"scale is {best_row(rows)['scale']:g} and 20 is {_versus(rows, at20)}: as a control of the start "
            f"model's scale it is *{graded.label}* by the rule ({graded.reason})"
        )
    change = _rate_change(trials, by_rate)
    widest = max(tested, key=lambda c: abs(c.estimate))
    lines.append(
        f"the learning rate's effect on 20 (test, lr {change.b:g} to {change.a:g}): {signed(change.estimate)} "
        f"{interval(change.low, change.high)} (paired t over {change.n} seeds, 95%), against the plateau's largest "
        f"pre-registered difference, {widest.a:g} - {widest.b:g}: {signed(widest.estimate)} "
        f"{interval(widest.low, widest.high)}"
    )
    return Reanchor(
        lines,
        f"{opening}: {summary[0].lower()}{summary[1:]}",
        facts_of(folder),
        plateau,
        as_good,
        best_rate,
        lr_effect,
        scale_effect,
        float(top["scale"]),
        control,
        change,
        widest,
    )


def _rate_change(trials: pd.DataFrame, by_rate: pd.Series) -> Contrast:
    """Scale 20 at its best learning rate minus at its worst (test means), paired over seeds: a t interval."""
    at20 = trials[trials["loss.scale"] == DEFAULT].pivot_table(
        index="trial.seed", columns=RATE, values="stsb_test_spearman"
    )
    high, low = float(str(by_rate.idxmax())), float(str(by_rate.idxmin()))
    d = (at20[high] - at20[low]).dropna().to_numpy()
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    p = float(stats.ttest_1samp(d, 0.0).pvalue)
    return Contrast(high, low, float(d.mean()), float(d.mean() - half), float(d.mean() + half), p, len(d))


def _contrast(c: Contrast) -> str:
    p = "<0.001" if c.p_holm < 0.001 else f"{c.p_holm:.3f}"
    return f"{signed(c.estimate)} {interval(c.low, c.high)}, Holm-adjusted p {p}"


def _versus(rows: pd.DataFrame, row: pd.Series | None) -> str:
    if row is None:
        return "not run"
    if bool(row["best"]):
        return f"best ({num(row['spearman'])})"
    return versus_best(rows, row).replace(" below the best ", " below ", 1)
