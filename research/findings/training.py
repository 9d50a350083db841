"""The findings page's evidence from the MNRL studies that change how a model trains rather than what scale it trains
at: the batch size (`mnrl_scale_batch`: does the best temperature move with ln C, the log of the in-batch candidates)
and training to convergence (`mnrl_scale_convergence`: are the high scales worse, or only slower)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sweep.report import (
    best_row,
    by_number,
    folder_facts,
    interval,
    metric_words,
    num,
    objective,
    present,
    read_csv,
    row_at,
    scope,
    signed,
    table,
    tidy,
)
from sweep.stats import difference_in_differences, gap_by_condition

from .design import versus_best
from .literature import DEFAULT

BATCH, CONVERGENCE, SHORT = "mnrl_scale_batch", "mnrl_scale_convergence", "mnrl_scale"
STEPS = "trained_steps"  # the metric a trial logs: below trial.max_steps when it stopped early


@dataclass
class Evidence:
    """What one study adds to a question: its evidence lines, its scope, the confounds it leaves and a sentence for
    the answer."""

    lines: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    confounds: list[str] = field(default_factory=list)
    summary: str = ""  # a sentence for the question's answer


def did_line(folder: Path, frame: pd.DataFrame, a: float, what: str) -> tuple[str, bool, str]:
    """How the gap ``a - 20`` changes from the first to the last condition (numeric order): the line, whether its
    interval excludes 0, and the estimate with its interval."""
    conditions = by_number(list(frame["condition"].unique()))
    did = difference_in_differences(frame, a, DEFAULT, conditions[0], conditions[-1])
    line = (
        f"`{folder.name}`: gap {a:g} - 20 {signed(did.gap1)} at {did.cond1}, {signed(did.gap2)} at {did.cond2}; "
        f"difference in differences {signed(did.estimate)} {interval(did.ci_low, did.ci_high)} ({did.design} t over "
        f"{did.n1} seeds, {did.level:.0%}); the best scales differ in {num(did.p_argmax_differs)} of the seed "
        f"resamples ({what})"
    )
    return line, bool(did.ci_low > 0 or did.ci_high < 0), f"{signed(did.estimate)} {interval(did.ci_low, did.ci_high)}"


def _batch_size(condition: str) -> int:
    return int(float(condition.rsplit("=", 1)[-1]))


def batch_evidence(results: Path) -> Evidence | None:
    """Per batch size B (C = B candidates per anchor with in-batch negatives only): the best scale and 20's gap to
    it on the study's objective, then whether the gap 10 - 20 and the best scale move from the smallest to the
    largest batch (difference in differences). None when the study has not run."""
    folder = results / BATCH
    if not present(folder):
        return None
    metric = objective(folder)
    frame = tidy(folder, metric)
    gaps = gap_by_condition(frame)
    parts = [
        f"batch {_batch_size(str(r.condition))} (ln C {math.log(_batch_size(str(r.condition))):.2f}): best scale "
        f"{r.best:g}, 20 is {num(r.gap)} {interval(r.ci_low, r.ci_high)} below it"
        for r in gaps.sort_values("condition", key=lambda c: c.map(_batch_size)).itertuples()
    ]
    bests = [float(b) for b in gaps["best"]]
    others = [b for b in bests if b != DEFAULT]
    a = max(set(others), key=others.count) if others else 10.0
    line, separates, change = did_line(folder, frame, a, "does the best scale move with ln C")
    stsb = gap_by_condition(tidy(folder, "stsb_validation_spearman")).sort_values(
        "condition", key=lambda c: c.map(_batch_size)
    )
    on_stsb = "; ".join(
        f"batch {_batch_size(str(c))}: {b:g}" for c, b in zip(stsb["condition"], stsb["best"], strict=True)
    )
    moves = len(set(bests)) > 1
    sizes = sorted(_batch_size(str(c)) for c in gaps["condition"].unique())
    where = "moves" if moves else f"stays at {a:g}"
    trend = ("shrinks" if change.startswith("-") else "grows") if separates else "does not change distinguishably"
    summary = (
        f" Across batch sizes {sizes[0]}-{sizes[-1]} (`{BATCH}`, chosen on {metric_words(metric)}) the best scale "
        f"{where}, while 20's gap to {a:g} {trend} with the batch (difference in differences {change})."
    )
    return Evidence(
        [
            f"`{BATCH}` ({metric_words(metric)}, paired t over seeds): {'; '.join(parts)}",
            line,
            f"`{BATCH}`: best scale by batch size on STSB validation (not chosen on): {on_stsb}",
        ],
        [scope(folder, folder_facts(folder).n_seeds)],
        ["the batch size tied to the number of steps (one pass over the same 30,000 pairs at one learning rate)"]
        if moves
        else [],
        summary,
    )


def _steps_by_scale(folder: Path) -> str:
    trials = read_csv(folder / "trials.csv")
    if STEPS not in trials:
        return "steps not recorded"
    done = trials[trials["state"] == "COMPLETE"].groupby("loss.scale")[STEPS]
    return ", ".join(
        f"{scale:g}: {low:g}-{high:g}"
        for scale, low, high in zip(done.min().index, done.min(), done.max(), strict=True)
    )


def convergence_evidence(results: Path) -> Evidence | None:
    """Trained until STSB validation stops improving: where each scale stopped, the best scale and 20 against it,
    and whether the worst high scale's gap to the best closes against the same seeds at 120 steps (`mnrl_scale`):
    if it closes, that scale was slower, if not, worse. None when the study has not run."""
    folder = results / CONVERGENCE
    if not present(folder):
        return None
    paired = table(folder, "paired_comparison")
    best = best_row(paired)
    lines = [
        f"`{CONVERGENCE}`: steps trained before validation stopped improving (5 evaluations of 40 steps without a "
        f"new best, cap 1,200), per scale min-max over seeds: {_steps_by_scale(folder)}",
        f"`{CONVERGENCE}`: best scale {best['scale']:g} ({num(best['spearman'])}); "
        + "; ".join(
            f"{s:g}: {versus_best(paired, row)}"
            for s in (DEFAULT, 30.0, 50.0)
            if (row := row_at(paired, s)) is not None
        ),
    ]
    at20 = row_at(paired, DEFAULT)
    summary = (
        f" Trained until validation stops improving (`{CONVERGENCE}`), {best['scale']:g} is still the best scale"
        + (f" and 20 is {at20['verdict']} from it" if at20 is not None else "")
    )
    short = results / SHORT
    if present(short):
        a = float(best["scale"])
        both = pd.concat(
            [
                tidy(short, objective(short)).assign(condition="120 steps (mnrl_scale)"),
                tidy(folder, objective(folder)).assign(condition="to convergence"),
            ]
        )
        shared = set(both.loc[both["condition"] == "to convergence", "scale"])
        both = both[both["scale"].isin(shared)]
        for high in (30.0, 50.0):
            if {a, high} <= shared and a != high:
                did = difference_in_differences(both, a, high, "120 steps (mnrl_scale)", "to convergence")
                lines.append(
                    f"gap {a:g} - {high:g}: {signed(did.gap1)} at 120 steps, {signed(did.gap2)} at convergence; change "
                    f"{signed(did.estimate)} {interval(did.ci_low, did.ci_high)} ({did.design} t over {did.n1} seeds, "
                    f"the same seeds' batch orders)"
                )
        top = row_at(paired, 50.0)
        if top is not None and {a, 50.0} <= shared:
            did = difference_in_differences(both, a, 50.0, "120 steps (mnrl_scale)", "to convergence")
            slower = "partly slower" if did.ci_high < 0 else "not slower"
            worse = "still worse" if top["verdict"] == "worse" else f"then {top['verdict']}"
            summary += (
                f"; scale 50 is {slower} and {worse}: its gap to {a:g} goes from {num(did.gap1)} at 120 steps to "
                f"{num(did.gap2)} once trained to a stop"
            )
    return Evidence(lines, [scope(folder, folder_facts(folder).n_seeds)], summary=summary + ".")
