"""The findings page's question (b), does the gap between scales shrink with more data. It leads with study 5 of
issue 35 (data held apart from steps): the cold-side and warm-side gaps by data size at a fixed step count (more data
only means fewer repeats) and at one pass (more data is also more steps), each size at its own learning rate. The
pre-registered contrasts (the configs' headers): 10 - 50 and 10 - 5 on captions30k test NDCG@10, and their change
from the smallest to the largest size (a difference in differences, paired over seeds). The older one-pass study at
one learning rate (`mnrl_scale_datasize`) and the fixed-step repetition study (`mnrl_scale_data`) follow as
evidence."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sweep.report import (
    Facts,
    Section,
    by_number,
    complete_trials,
    flat_config,
    folder_facts,
    interval,
    num,
    objective,
    present,
    scope,
    signed,
    status,
    strength,
    table,
    tidy,
    untested,
    write_gap_vs_condition,
)
from sweep.stats import DifferenceInDifferences, difference_in_differences, gap_by_condition

from .design import facts_of, versus_best
from .literature import DEFAULT, MINILM_SCALE, ST_3054
from .training import did_line

STEPS, PASS = "mnrl_scale_datasize_steps", "mnrl_scale_datasize_pass"
PRETRAINED = "mnrl_scale_minilm"  # the full all-MiniLM-L6-v2 briefly fine-tuned: (b)'s far end of the data axis
SIZE, RATE, SCALE, SEED = "data.train.max_samples", "trial.learning_rate", "loss.scale", "trial.seed"
VALIDATION, TEST = "captions30k_val_ndcg_at_10", "captions30k_test_ndcg_at_10"
NEAR, COLD, WARM = 10.0, 50.0, 5.0  # the pre-registered contrasts: 10 - 50 (cold side) and 10 - 5 (warm side)


@dataclass(frozen=True)
class Arm:
    """One arm of the study: each size's own learning rate, and the two sides' changes from smallest to largest."""

    name: str
    rates: dict[int, float]
    sides: dict[str, DifferenceInDifferences]
    near: DifferenceInDifferences  # the near-optimum gap 10 - 20, the one #3054 asks about
    tried: tuple[float, ...]  # the learning rates tried
    steps: dict[int, int]  # per size, the fewest optimizer steps a trial took


def _size_words(size: float | str) -> str:
    """A size (or its condition label ``data.train.max_samples=N``) in words."""
    value = float(str(size).rsplit("=", 1)[-1])
    return "all 84,247 pairs" if value >= 100_000 else f"{value:,.0f} pairs"


def own_rates(trials: pd.DataFrame) -> dict[int, float]:
    """Per size, the learning rate of its best (scale, rate) cell by mean validation NDCG@10 over seeds."""
    means = trials.groupby([SIZE, RATE, SCALE])[VALIDATION].mean()
    return {int(size): float(means[size].idxmax()[0]) for size in sorted(trials[SIZE].unique())}


def _frame(trials: pd.DataFrame, rates: dict[int, float], metric: str) -> pd.DataFrame:
    """The tidy frame of `sweep.stats` (condition, scale, seed, value): each size at its own rate."""
    chosen = trials[[rates[int(size)] == rate for size, rate in zip(trials[SIZE], trials[RATE], strict=True)]]
    return pd.DataFrame(
        {
            "condition": [f"{SIZE}={int(s)}" for s in chosen[SIZE]],
            "scale": chosen[SCALE].astype(float),
            "seed": chosen[SEED].astype(int),
            "value": chosen[metric].astype(float),
        }
    )


def arm(name: str, trials: pd.DataFrame) -> Arm:
    """The arm's own rates and, on test, the change of 10 - 50 and 10 - 5 from its smallest to its largest size."""
    rates = own_rates(trials)
    frame = _frame(trials, rates, TEST)
    conditions = by_number(list(frame["condition"].unique()))
    sides = {
        side: difference_in_differences(frame, NEAR, other, conditions[0], conditions[-1])
        for side, other in (("cold", COLD), ("warm", WARM))
    }
    near = difference_in_differences(frame, NEAR, DEFAULT, conditions[0], conditions[-1])
    tried = tuple(sorted(float(r) for r in trials[RATE].unique()))
    steps = trials.groupby(SIZE)["trained_steps"].min() if "trained_steps" in trials else pd.Series(dtype=float)
    return Arm(name, rates, sides, near, tried, {int(float(str(k))): int(v) for k, v in steps.items()})


@functools.cache  # the page asks for them from four places; the folders do not change while it is written
def arms(results: Path) -> tuple[list[Arm], list[Facts]] | None:
    """The fixed-step arm and the one-pass arm (its 30k cell read from the fixed-step folder: the same trials), or
    None until both folders exist."""
    steps, one_pass = results / STEPS, results / PASS
    if not (present(steps) and present(one_pass)):
        return None
    fixed = complete_trials(steps)
    shared = fixed[fixed[SIZE] == fixed[SIZE].max()]  # 468 steps over 30,000 pairs: one pass
    passes = pd.concat([complete_trials(one_pass), shared], ignore_index=True)
    return [arm("fixed steps (468)", fixed), arm("one pass", passes)], [facts_of(steps), facts_of(one_pass)]


def _own_rate_rows(folder: Path, rates: dict[int, float]) -> pd.DataFrame:
    """The folder's test rows of ``objective_comparison`` at each size's own rate, labelled by the size alone."""
    rows = table(folder, "objective_comparison")
    rows = rows[rows["metric"] == TEST]
    parts = rows["condition"].str.extract(r"max_samples=(?P<size>[0-9.]+), learning_rate=(?P<rate>[0-9.e-]+)")
    sizes, rates_run = parts["size"].astype(float).astype(int), parts["rate"].astype(float)
    own = [rates.get(size) == rate for size, rate in zip(sizes, rates_run, strict=True)]
    return rows[own].assign(condition=[f"{SIZE}={size}" for size in sizes[own]])


def write_gap_figure(results: Path, name: str, out_dir: Path) -> list[Path]:
    """The arm ``name``'s (``STEPS`` or ``PASS``) ``gap_vs_condition`` figure on captions30k test NDCG@10, each size
    at its own rate (the one-pass arm with the fixed-step arm's 30,000-pair cell), into ``out_dir``."""
    found = arms(results)
    if found is None:
        return []
    arm_of = dict(zip((STEPS, PASS), found[0], strict=True))
    folders = [results / STEPS] if name == STEPS else [results / PASS, results / STEPS]
    rows = pd.concat([_own_rate_rows(folder, arm_of[name].rates) for folder in folders], ignore_index=True)
    rows = rows.drop_duplicates(["condition", "scale"])  # the fixed-step arm's cells the one-pass arm lacks only
    return write_gap_vs_condition(rows, out_dir, note=f"{held_words(results, name)}; each size at its own rate")


def held_words(results: Path, name: str) -> str:
    """What the arm ``name`` holds fixed as the data grow, in words from its config: the steps, or one pass."""
    steps = flat_config(results / name).get("trial.max_steps")
    return f"{steps} steps at every size (fixed)" if steps else "one pass at each size (steps grow with the data)"


def moves(did: DifferenceInDifferences) -> bool:
    return did.ci_low > 0 or did.ci_high < 0


def side_words(did: DifferenceInDifferences) -> str:
    """How the gap changes, in words, with its interval."""
    change = "shrinks" if did.estimate < 0 else "grows"
    words = change if moves(did) else "does not change distinguishably"
    return f"{did.a:g} - {did.b:g} {words} ({signed(did.estimate)} {interval(did.ci_low, did.ci_high)})"


def evidence_lines(results: Path) -> list[str]:
    """Per arm: the rates chosen, and per side the gap at each end and its difference in differences."""
    found = arms(results)
    if found is None:
        return []
    lines = []
    for one in found[0]:
        rates = "; ".join(f"{_size_words(size)}: {rate:g}" for size, rate in one.rates.items())
        edge = [r for r in one.rates.values() if r in (one.tried[0], one.tried[-1])]
        bracket = (
            f" (of {', '.join(f'{r:g}' for r in one.tried)}: every choice at the edge of the rates tried, not "
            "bracketed)"
            if len(edge) == len(one.rates)
            else ""
        )
        lines.append(f"{one.name}: the learning rate each size trains best at (validation NDCG@10): {rates}{bracket}")
        if one.steps and len(set(one.steps.values())) > 1:
            steps = "; ".join(f"{_size_words(size)}: {n}" for size, n in one.steps.items())
            lines.append(f"{one.name}: optimizer steps by size: {steps}")
        did = one.near
        lines.append(
            f"{one.name}, near the optimum (10 - 20, the gap #3054 asks about; captions30k test NDCG@10): "
            f"{signed(did.gap1)} at {_size_words(did.cond1)}, {signed(did.gap2)} at {_size_words(did.cond2)}; "
            f"difference in differences {signed(did.estimate)} {interval(did.ci_low, did.ci_high)} ({did.design} t "
            f"over {did.n1} seeds)"
        )
        for side, did in one.sides.items():
            lines.append(
                f"{one.name}, {side} side ({did.a:g} - {did.b:g}, captions30k test NDCG@10): {signed(did.gap1)} at "
                f"{_size_words(did.cond1)}, {signed(did.gap2)} at {_size_words(did.cond2)}; difference in differences "
                f"{signed(did.estimate)} "
                f"{interval(did.ci_low, did.ci_high)} ({did.design} t over {did.n1} seeds)"
            )
    return lines


def arms_or_empty(results: Path) -> list[Arm]:
    found = arms(results)
    return found[0] if found is not None else []


def answer_apart(results: Path) -> tuple[str, bool, int, list[Facts]] | None:
    """The headline of (b) from study 5: per arm, how each side's gap changes from the smallest to the largest size;
    whether any change separates from 0, in how many arms the most replicated direction holds, and the facts."""
    found = arms(results)
    if found is None:
        return None
    arm_list, facts = found
    parts = [
        f"{one.name}, from {_size_words(one.sides['cold'].cond1)} to {_size_words(one.sides['cold'].cond2)}, the "
        f"cold-side gap {side_words(one.sides['cold'])}, the warm-side gap {side_words(one.sides['warm'])} and "
        f"the near-optimum gap {side_words(one.near)}"
        for one in arm_list
    ]
    directions = [(side, did.estimate < 0) for one in arm_list for side, did in one.sides.items() if moves(did)]
    replicated = max((directions.count(d) for d in directions), default=0)
    return "; ".join(parts), bool(directions), replicated, facts


def _size_lines(folder: Path, frame: pd.DataFrame, metric: str) -> list[str]:
    """Per data size: best scale, best - 20, best - its grid neighbours (paired t over seeds), the worst cost."""
    scales = sorted(float(s) for s in frame["scale"].unique())
    gaps = gap_by_condition(frame, scales)
    lines = []
    for condition in by_number(list(gaps["condition"].unique())):
        rows = gaps[gaps["condition"] == condition].set_index("scale")
        best = float(rows["best"].iloc[0])
        index = scales.index(best)
        near = [
            s
            for s in (scales[index - 1] if index else None, scales[index + 1] if index + 1 < len(scales) else None)
            if s is not None
        ]
        parts = [
            f"{s:g}: {num(rows.loc[s, 'gap'])} {interval(rows.loc[s, 'ci_low'], rows.loc[s, 'ci_high'])}"
            for s in dict.fromkeys([DEFAULT, *near])
            if s in rows.index and s != best
        ]
        worst = rows["gap"].idxmax()
        lines.append(
            f"`{folder.name}` {condition}: best scale {best:g}; best minus {'; '.join(parts) or 'nothing else'}; "
            f"worst scale {worst:g} costs {num(rows.loc[worst, 'gap'])} ({metric})"
        )
    return lines


def question_b(results: Path) -> Section:
    question = "(b) Does the gap between scales shrink with more data?"
    size, repeat = results / "mnrl_scale_datasize", results / "mnrl_scale_data"
    folder = size if present(size) else repeat
    if not present(folder):
        return untested(question, [size, repeat], "run `+experiment=mnrl_scale_datasize`")
    metric = objective(folder)
    frame = tidy(folder, metric)
    means = frame.groupby(["condition", "scale"])["value"].mean()
    bests = means.groupby(level="condition").idxmax().map(lambda key: key[1])
    others = [float(b) for b in bests if b != DEFAULT]
    a = max(set(others), key=others.count) if others else float(means.drop(DEFAULT, level="scale").idxmax()[1])
    gap_line, separates, estimate = did_line(folder, frame, a, "the near-optimum gap")
    evidence = [*_size_lines(folder, frame, metric), gap_line]
    facts = [folder_facts(folder)]
    if folder == size:
        confound = "data size tied to the number of steps at one learning rate (one pass each)"
        for extra in ("captions30k_test_ndcg_at_10", "sts_ood_spearman"):
            if extra in pd.read_csv(folder / "trials.csv", nrows=0).columns:
                gaps = gap_by_condition(tidy(folder, extra))
                bests_extra = "; ".join(f"{c}: {b:g}" for c, b in zip(gaps["condition"], gaps["best"], strict=True))
                evidence.append(f"best scale by data size on {extra}: {bests_extra}")
        head = "On captions30k at one pass,"
    else:
        steps = flat_config(folder).get("trial.max_steps")
        confound = f"data size tied to repetition (fixed {steps} steps: fewer rows means more passes over them)"
        evidence.append(f"{status(size)}: the one-pass data-size study")
        head = f"Untested with real data ({status(size)}); at a fixed {steps} steps, where more rows only means less "
        head += "repetition,"
    sides = _side_changes(frame, a)
    evidence += [line for line, _ in sides.values()]
    evidence += _pretrained_line(results / PRETRAINED)
    costs = _worst_costs(frame)
    trend = ("shrinks" if estimate.startswith("-") else "grows") if separates else "does not change distinguishably"
    answer = (
        f"{head} the near-optimum gap {a:g} - 20 {trend} ({estimate}, difference in differences from the "
        f"smallest to the largest size), but the two sides differ: "
        + " while ".join(f"the {side} gap {words}" for side, (_, words) in sides.items())
        + f"; the worst scale's cost goes from {num(costs[0][1])} (scale {costs[0][0]:g}) to {num(costs[-1][1])} "
        f"(scale {costs[-1][0]:g})."
    )
    apart = answer_apart(results)
    if apart is None:
        verdict = {"shrinks": "agrees", "grows": "disagrees"}.get(trend, "undecided")
        return Section(
            question,
            answer,
            strength(facts, separates, 1, [confound]),
            evidence,
            [scope(folder, facts[0].n_seeds)],
            [f"{ST_3054}: {verdict} here"],
            [
                f"the study with steps held apart from data size ({status(results / STEPS)}), a learning rate "
                "tuned per size, a gap whose difference in differences excludes 0",
            ],
        )
    words, moved, replicated, apart_facts = apart
    changes = {
        side: {("shrinks" if d.estimate < 0 else "grows") if moves(d) else "unclear" for d in sides}
        for side, sides in _sides_by_name(arms_or_empty(results)).items()
    }
    one_way = {side: next(iter(found)) for side, found in changes.items() if len(found) == 1}
    head = (
        f"Not as one gap: with more data the cold-side gap {one_way['cold']} and the warm-side gap "
        f"{one_way['warm']}, whether more data comes with more steps or not. "
        if len(one_way) == 2 and "unclear" not in one_way.values()
        else ""
    )
    agrees = {side for side, way in one_way.items() if way == "shrinks"}
    literature = (
        "agrees"
        if agrees == {"cold", "warm"}
        else f"agrees for the {next(iter(agrees))} side only"
        if agrees
        else "disagrees"
        if moved
        else "undecided"
    )
    unclear = [side for side, found in changes.items() if found != {"shrinks"} and found != {"grows"}]
    return Section(
        question,
        f"{head}With data held apart from steps and each size at its own learning rate (captions30k test "
        f"NDCG@10): {words}. The earlier one-pass study at one learning rate, superseded for this answer: {answer}",
        strength(apart_facts, moved, replicated),
        [*evidence_lines(results), *evidence],
        [scope(results / STEPS, apart_facts[0].n_seeds), scope(results / PASS, apart_facts[1].n_seeds)],
        [f"{ST_3054}: {literature} here"],
        [
            "a transformer instead of static embeddings, other data, sizes beyond 84k pairs, learning rates below "
            "the grid's lowest where a size chose it"
            + (f", more seeds for the {' and '.join(unclear)} side" if unclear else ""),
        ],
    )


def _sides_by_name(arm_list: list[Arm]) -> dict[str, list[DifferenceInDifferences]]:
    return {side: [one.sides[side] for one in arm_list] for side in ("cold", "warm")}


def _pretrained_line(folder: Path) -> list[str]:
    """Each scale of the full MiniLM's short fine-tune against its best: the far end of the data axis (a model
    already trained on about a billion pairs), confounded by the scale it was trained at."""
    if not present(folder):
        return []
    rows = table(folder, "paired_comparison")
    parts = [f"{r['scale']:g}: {versus_best(rows, r)}" for _, r in rows[rows["scale"] != 0].iterrows()]
    steps = flat_config(folder).get("trial.max_steps")
    return [
        f"far beyond these sizes, a model already trained at scale {MINILM_SCALE:g} on about a billion pairs and "
        f"fine-tuned {steps} steps on NLI (`{folder.name}`, confounded by that pretraining scale): {'; '.join(parts)}"
    ]


def _worst_costs(frame: pd.DataFrame) -> list[tuple[float, float]]:
    """Per condition (numeric order): the worst scale and its cost (best mean minus worst mean)."""
    means = frame.groupby(["condition", "scale"])["value"].mean()
    conditions = by_number(list(frame["condition"].unique()))
    return [(float(means[c].idxmin()), float(means[c].max() - means[c].min())) for c in conditions]


def _side_changes(frame: pd.DataFrame, a: float) -> dict[str, tuple[str, str]]:
    """The gap from ``a`` to the nearest scale colder than the default (the cold side) and to the warmest scale (the
    warm side), and how each changes from the smallest to the largest condition (difference in differences, paired
    by seed): {side: (evidence line, words for the answer)}."""
    conditions = by_number(list(frame["condition"].unique()))
    scales = sorted(float(s) for s in frame["scale"].unique())
    colder = [s for s in scales if s > DEFAULT]
    out = {}
    for side, other in (("cold", colder[0] if colder else None), ("warm", scales[0])):
        if other is None or other == a:
            continue
        did = difference_in_differences(frame, a, other, conditions[0], conditions[-1])
        change = f"{signed(did.estimate)} {interval(did.ci_low, did.ci_high)}"
        trend = ("shrinks" if did.estimate < 0 else "grows") if moves(did) else "does not change"
        words = f"{a:g} - {other:g} {trend}"
        out[side] = (
            f"{side} side: gap {a:g} - {other:g} {signed(did.gap1)} at {did.cond1}, {signed(did.gap2)} at "
            f"{did.cond2}; difference in differences {change} ({did.design} t over {did.n1} seeds)",
            f"{words} ({change})",
        )
    return out
