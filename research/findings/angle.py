"""The findings page's question (e): AnglE's w1-w3 and its three temperatures. `angle_weights` and `angle_scales`
trained every grid point at the static model's learning rate 0.05, where CoSENT alone diverges (`cosent_scale_lr`);
their answer is withdrawn and kept as evidence. `angle_weights_lr` reruns the weight triples at learning rates where
CoSENT trains ("1,0,0" is plain CoSENT, so the comparison with it is paired inside the study)."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from sweep.report import (
    Section,
    against_best,
    best_row,
    complete_trials,
    flat_config,
    folder_facts,
    interval,
    num,
    present,
    row_at,
    scope,
    strength,
    table,
    untested,
)
from sweep.stats import mean_interval

from .design import facts_of, versus_best
from .literature import ANGLE_DEFAULTS, ANGLE_PAPER, ANGLE_RELEASED, ANGLE_SOURCE, DEFAULT

RERUN = "angle_weights_lr"  # the weight triples at learning rates where CoSENT trains
SCALES_RERUN = "angle_scales_lr"  # the three scale sets at the same learning rates
COSENT_ONLY = "weights=1,0,0"
PAPER = "weights=1,1,1"


def _weights(point: str) -> tuple[float, ...]:
    return tuple(float(w) for w in point.removeprefix("weights=").split(","))


def _scales_point(scales: tuple[float, ...]) -> str:
    return ", ".join(f"{name}_scale={s:g}" for name, s in zip(("cos", "ibn", "angle"), scales, strict=True))


def _old_answer(results: Path) -> Section:
    question = "(e) AnglE's w1-w3 and its three temperatures"
    weights, scales = results / "angle_weights", results / "angle_scales"
    if not (present(weights) and present(scales)):
        return untested(question, [weights, scales], "run angle_weights and angle_scales")
    pw, ps = table(weights, "paired_comparison"), table(scales, "paired_comparison")
    by_w = pw.assign(w=pw["point"].map(_weights)).set_index("w")
    best_w, best_s = best_row(pw), best_row(ps)
    paper_w, released = by_w.loc[[ANGLE_PAPER[0]]].iloc[0], ANGLE_RELEASED[0]

    def direction(w: tuple[float, ...]) -> float:  # cosine between weight vectors: the nearest grid point in ratio
        dot = sum(a * b for a, b in zip(w, released, strict=True))
        return dot / (sum(a * a for a in w) * sum(b * b for b in released)) ** 0.5 if any(w) else 0.0

    near = max(by_w.index, key=direction)
    without = by_w[[w[0] == 0 for w in by_w.index]]["spearman"]
    with_cos = by_w[[w[0] > 0 for w in by_w.index]]["spearman"]
    on_s = ps.set_index("point")
    paper_s, released_s = (on_s.loc[_scales_point(p)] for p in (ANGLE_PAPER[1], ANGLE_RELEASED[1]))
    untrained = float(table(weights, "angle_weights_heatmap")["untrained"].iloc[0])
    evidence = [
        f"`angle_weights`: best w = {best_w['point'].removeprefix('weights=')} ({num(best_w['spearman'])}); "
        f"without the cosine term (w1 = 0) {num(without.min())}-{num(without.max())}, with it "
        f"{num(with_cos.min())}-{num(with_cos.max())}; untrained model {num(untrained)}",
        f"the paper's w = 1, 1, 1: {num(paper_w['spearman'])}, {against_best(paper_w)}; the released "
        f"{', '.join(f'{w:g}' for w in released)} is nearest in ratio to the grid's "
        f"{', '.join(f'{w:g}' for w in near)}: {num(by_w.loc[[near]].iloc[0]['spearman'])}, "
        f"{against_best(by_w.loc[[near]].iloc[0])}",
        f"`angle_scales`: best ({best_s['point']}) {num(best_s['spearman'])}; the paper's scales "
        f"({_scales_point(ANGLE_PAPER[1])}): {num(paper_s['spearman'])}, {against_best(paper_s)}; the released "
        f"({_scales_point(ANGLE_RELEASED[1])}): {num(released_s['spearman'])}, {against_best(released_s)}",
    ]
    lr, rate = results / "cosent_scale_lr", float(str(flat_config(weights).get("trial.learning_rate")))
    if present(lr):
        slow = table(lr, "paired_comparison")
        condition = str(min(slow["condition"].unique(), key=lambda c: float(str(c).split("=")[-1])))
        at20 = row_at(slow, DEFAULT, condition)
        if at20 is not None:
            evidence.append(
                f"the confound: CoSENT alone at scale 20 and {condition} (`cosent_scale_lr`) reaches "
                f"{num(at20['spearman'])} (untrained {num(untrained)}; {against_best(at20)}), where these grids train "
                f"at lr {rate:g}"
            )
    separates = paper_w["verdict"] == "worse" and paper_s["verdict"] == "worse"
    answer = (
        f"Drop the cosine term and lower the scales on this set-up: w1 = 0 scores {num(without.min())}-"
        f"{num(without.max())} against {num(with_cos.min())}-{num(with_cos.max())} with it, the paper's 1, 1, 1 is "
        f"{num(paper_w['diff_to_best'])} below the best {best_w['point'].removeprefix('weights=')}, and the lowest "
        f"scales ({best_s['point']}) beat the paper's {' / '.join(f'{s:g}' for s in ANGLE_PAPER[1])} by "
        f"{num(paper_s['diff_to_best'])}; the cosine "
        "term's learning rate is the confound."
    )
    facts = [folder_facts(weights), folder_facts(scales)]
    return Section(
        question,
        answer,
        strength(facts, bool(separates), 2 if separates else 1, [f"the learning rate (CoSENT term at lr {rate:g})"]),
        evidence,
        [scope(weights, facts[0].n_seeds), scope(scales, facts[1].n_seeds)],
        [
            f"AnglE paper: w 1, 1, 1 and temperatures 0.05 / 0.05 / 1.0 (scales {_scales_point(ANGLE_PAPER[1])}): "
            f"{'disagrees' if separates else 'agrees'} here",
            f"released defaults cosine_w {released[0]:g}, ibn_w {released[1]:g}, angle_w {released[2]:g}, all scales "
            f"20; {ANGLE_SOURCE}: their dropped cosine term agrees",
        ],
        ["the same grids at a learning rate where CoSENT at scale 20 trains (`cosent_scale_lr`), a transformer model"],
    )


@functools.cache  # the page's (c) section and its summary both read it; the folder does not change meanwhile
def rerun_lines(folder: Path) -> tuple[list[str], dict[str, tuple[str, bool]], bool, dict[str, bool]]:
    """Per learning rate of the rerun (its points are "weights=w1,w2,w3, learning_rate=r", all in one verdict over
    every point): the best triple at that rate, plain CoSENT, the paper's 1, 1, 1, and the score ranges with and
    without the cosine term. Returns the lines, per rate whether every triple without the cosine term scores above
    every triple with it, and the overall best point."""
    paired = table(folder, "paired_comparison")
    parts = paired["point"].str.extract(r"weights=(?P<w>[\d.,]+), learning_rate=(?P<rate>[\d.]+)")
    rows = paired.assign(w=parts["w"], rate=parts["rate"].astype(float))
    untrained = float(table(folder, "angle_weights_heatmap")["untrained"].iloc[0])
    lines, apart, trains = [], {}, {}
    for rate, at in rows.groupby("rate", sort=True):
        top = at.loc[at["spearman"].idxmax()]
        on = at.set_index("w")
        without, with_cos = at[at["w"].str.startswith("0,")], at[~at["w"].str.startswith("0,")]
        alone, paper = on.loc[COSENT_ONLY.removeprefix("weights=")], on.loc[PAPER.removeprefix("weights=")]
        key = f"learning_rate={rate:g}"
        apart[key] = (str(top["w"]), bool(without["spearman"].min() > with_cos["spearman"].max()))
        trains[key] = bool(alone["spearman"] > untrained)
        lines.append(
            f"`{folder.name}` {key}: best w = {top['w']} ({num(top['spearman'])}); without the cosine term (w1 = 0) "
            f"{num(without['spearman'].min())}-{num(without['spearman'].max())}, with it "
            f"{num(with_cos['spearman'].min())}-{num(with_cos['spearman'].max())}; plain CoSENT (1, 0, 0) "
            f"{num(alone['spearman'])} ({'above' if trains[key] else 'at or below'} the untrained model's "
            f"{num(untrained)}), the paper's 1, 1, 1 {num(paper['spearman'])}; against the study's best point (all "
            f"{len(rows)} points in one verdict): CoSENT {_against(alone)}, 1, 1, 1 {_against(paper)}"
        )
    held = rows.loc[rows["in_confidence_set"].astype(bool), "point"]
    out = not held.str.contains(r"weights=(?:0\.5|1),").any()
    lines.append(
        f"`{folder.name}`: 95% confidence set for the best point: {'; '.join(held)}; every point with w1 > 0 "
        + ("is out of it (worse)" if out else "is not out of it")
    )
    return lines, apart, out, trains


def scales_rerun_lines(folder: Path) -> tuple[list[str], str]:
    """Per learning rate of the scales' rerun (points "cos_scale=a, ibn_scale=b, angle_scale=c, learning_rate=r", one
    verdict over all): the best scales and the paper's and the released ones against the study's best; and the
    answer's words."""
    paired = table(folder, "paired_comparison")
    parts = paired["point"].str.extract(r"^(?P<scales>.*), learning_rate=(?P<rate>[\d.]+)$")
    rows = paired.assign(scales=parts["scales"], rate=parts["rate"].astype(float))
    lines, words = [], []
    paper, released = _scales_point(ANGLE_PAPER[1]), _scales_point(ANGLE_RELEASED[1])
    trials = complete_trials(folder)
    for rate, at in rows.groupby("rate", sort=True):
        top, on = at.loc[at["spearman"].idxmax()], at.set_index("scales")
        within = _within_rate(trials, float(rate), str(top["scales"]), paper)
        lines.append(
            f"`{folder.name}` learning_rate={rate:g}: best {top['scales']} ({num(top['spearman'])}); the paper's "
            f"({paper}) {num(on.loc[paper, 'spearman'])}, {within} below this rate's best (validation, paired t "
            f"over seeds); against the study's best point (all {len(rows)} points in one verdict): the paper's "
            f"{_against(on.loc[paper], rows)}, the released ({released}) {num(on.loc[released, 'spearman'])}, "
            f"{_against(on.loc[released], rows)}"
        )
        words.append(
            f"at {rate:g} the best is {top['scales']} and the paper's scales are {within} below it (against the "
            f"study's best point, at another rate where it is not this one: {_against(on.loc[paper], rows)})"
            if not bool(top["best"])
            else f"at {rate:g} the best is {top['scales']} and the paper's {_against(on.loc[paper], rows)}"
        )
    held = rows.loc[rows["in_confidence_set"].astype(bool), "point"]
    lines.append(f"`{folder.name}`: 95% confidence set for the best point: {'; '.join(held)}")
    return lines, "; ".join(words)


def _against(row: pd.Series, rows: pd.DataFrame | None = None) -> str:
    if bool(row["best"]):
        return "the best"
    return versus_best(rows, row, "point") if rows is not None else against_best(row)


def _within_rate(trials: pd.DataFrame, rate: float, best: str, other: str) -> str:
    """``best - other`` at one learning rate, paired over seeds, with its t interval: ``0.093 [0.050, 0.136]``."""
    at = trials[trials["trial.learning_rate"] == rate]
    key = at.apply(lambda r: _scales_point((r["loss.cos_scale"], r["loss.ibn_scale"], r["loss.angle_scale"])), axis=1)
    wide = at.assign(point=key).pivot_table(index="trial.seed", columns="point", values="stsb_validation_spearman")
    mean, low, high = mean_interval((wide[best] - wide[other]).dropna().to_numpy(), 0.95)
    return f"{num(mean)} {interval(low, high)}"


def question_e(results: Path) -> Section:
    """The rerun at stable learning rates when it exists (the lr 0.05 studies' lines kept as evidence, marked);
    otherwise the old answer."""
    old = _old_answer(results)
    folder = results / RERUN
    if not present(folder):
        return old
    lines, per_rate, out, trains = rerun_lines(folder)
    facts = facts_of(folder)
    scales = results / SCALES_RERUN
    scales_lines, scales_words = scales_rerun_lines(scales) if present(scales) else ([], "")
    clean = [rate for rate in per_rate if trains[rate]]  # the rates where plain CoSENT beats the untrained model
    without = [rate for rate in clean if per_rate[rate][0].startswith("0,")]
    apart = [rate for rate in clean if per_rate[rate][1]]
    failed = [rate for rate in per_rate if not trains[rate]]
    bests = "; ".join(f"{per_rate[rate][0]} at {rate}" for rate in clean)
    passes = facts.design.passes
    answer = (
        ("Drop the cosine term, still" if out and clean and len(without) == len(clean) else "Not shown")
        + f": CoSENT alone trains (scores above the untrained model) at {len(clean)} of {len(per_rate)} learning "
        f"rates of `{RERUN}` ({facts.n_seeds} seeds)"
        + (
            f"; at {', '.join(failed)} plain CoSENT and every triple with a cosine term sit at or below the untrained "
            "model, so that rate says nothing about the term"
            if failed
            else ""
        )
        + f". At the {'rate' if len(clean) == 1 else 'rates'} where it trains the best triple has no cosine term "
        f"({bests}), and every triple with it, plain CoSENT and the paper's 1, 1, 1 included, is "
        f"{'out of' if out else 'not all out of'} the confidence set for the best point; every triple without the "
        f"term beats every triple with it at {len(apart)} of {len(clean)}. But these run "
        f"{facts.design.steps} steps"
        + (f", {passes:.1f} passes over the STSB pairs" if passes is not None else "")
        + (
            ", where plain CoSENT did well at one pass (`cosent_scale_lr`)"
            if present(results / "cosent_scale_lr")
            else ""
        )
        + ": the cosine term's cost may be a cost of repeated data. "
        + (
            f"The three AnglE scales at the same rates (`{SCALES_RERUN}`, {folder_facts(scales).n_seeds} seeds): "
            f"{scales_words}; the lr 0.05 `angle_scales` stays withdrawn."
            if present(scales)
            else "The three AnglE scales (`angle_scales`, lr 0.05) are withdrawn: not rerun at a stable learning rate."
        )
    )
    earlier = "the earlier studies at lr 0.05, where CoSENT alone diverges (the scales part withdrawn):"
    released = "; ".join(
        f"{when}: w {'/'.join(f'{w:g}' for w in weights)}, {words}" for when, weights, words in ANGLE_DEFAULTS
    )
    dropped = [when for when, weights, _ in ANGLE_DEFAULTS if weights[0] == 0]
    return Section(
        old.question,
        answer,
        strength([facts], out and bool(clean), len(without)),
        [*lines, *scales_lines, earlier, *old.evidence],
        [scope(folder, facts.n_seeds), *([scope(scales, folder_facts(scales).n_seeds)] if present(scales) else [])]
        + old.scope,
        [
            f"AnglE paper (Li and Li 2023): w 1, 1, 1 and temperatures 0.05 / 0.05 / 1.0 (scales "
            f"{_scales_point(ANGLE_PAPER[1])}): disagrees here, the paper's 1, 1, 1 is out of the confidence set",
            f"{ANGLE_SOURCE}, four changes: {released}; the cosine term is dropped from {dropped[0]} on: agrees with "
            "the rerun's best triples"
            if dropped
            else f"{ANGLE_SOURCE}: {released}",
        ],
        [
            ", ".join(
                ["the weights at one pass (no repeated data)", "a third learning rate where CoSENT trains"]
                + ([] if present(scales) else ["the three AnglE scales at a stable learning rate"])
                + ["a transformer"]
            )
        ],
    )
