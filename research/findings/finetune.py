"""Question (d) of the findings page (`page`): BGE's advice to fine-tune a normalized model at
temperature 0.01-0.05, read from the studies that fine-tune all-MiniLM-L6-v2: which temperature each one chooses on
its own objective, and, for the MNRL fine-tune on in-domain pairs, what each temperature gains in its domain and costs
outside it against the untrained model."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sweep.report import (
    START,
    STSB_TEST,
    STSB_VALIDATION,
    TRIALS_CSV,
    Control,
    Section,
    against_best,
    best_row,
    folder_facts,
    interval,
    metric_words,
    num,
    objective,
    present,
    read_csv,
    scope,
    signed,
    status,
    strength,
    table,
    temperature,
    tidy,
    untested,
)
from sweep.stats import mean_interval

from .design import facts_of, versus_best
from .literature import (
    BGE_ADVICE,
    BGE_ADVICE_SOURCE,
    BGE_TRAINED,
    BGE_V15,
    FLAG_README,
    FLAG_README_SOURCE,
    MINILM_SCALE,
    START_MODEL,
)
from .start_temperature import starts_words, study_lines, study_strength

FINETUNE = "mnrl_finetune_minilm"
FINETUNE_FOLDERS = ((FINETUNE, ""), ("gist_temperature_guide", ""), ("matryoshka2d", "wrapper.name=None"))
# A short fine-tune on data like the start model's own (40 steps on NLI): it says how far fine-tuning moves the start
# model, not which temperature to fine-tune at, and its coldest temperature (0.02) cannot test "the colder end is
# worse", so it is evidence beside the answer's studies rather than one of them.
SHORT_FINETUNE = "mnrl_scale_minilm"
# in the domain trained for, then outside it: what the fine-tune gains and what it costs
COST_METRICS = ("captions30k_test_ndcg_at_10", STSB_TEST, "sts_ood_spearman")
LEVEL = 0.95


def chosen_table(folder: Path) -> pd.DataFrame:
    """The verdict table of the metric the study chose on: ``objective_comparison`` (paired by seed) when
    ``eval.objective`` is not the STSB validation Spearman, else ``paired_comparison``."""
    metric = objective(folder)
    if metric == STSB_VALIDATION:
        return table(folder, "paired_comparison")
    both = table(folder, "objective_comparison")  # the chosen metric's rows, then its test partner's
    return both[both["metric"] == metric] if "metric" in both else both


def advice_line(folder: Path, condition: str) -> tuple[str, float, bool]:
    """Best scale, and each scale inside BGE's temperature range against it: the line, the best scale, and whether
    the warm end wins and the coldest scale tried in the range is worse."""
    paired = chosen_table(folder)
    best = best_row(paired, condition)
    low, high = 1 / BGE_ADVICE[1], 1 / BGE_ADVICE[0]
    rows = paired[(paired["condition"].astype("string").fillna("") == condition) & paired["scale"].between(low, high)]
    mine = paired[paired["condition"].astype("string").fillna("") == condition]
    parts = [f"{temperature(r['scale'])} (scale {r['scale']:g}): {versus_best(mine, r)}" for _, r in rows.iterrows()]
    coldest = rows.loc[rows["scale"].idxmax()] if not rows.empty else None
    holds = bool(low <= best["scale"] <= high and coldest is not None and coldest["verdict"] == "worse")
    label = f"`{folder.name}`" + (f" ({condition})" if condition else "")
    line = (
        f"{label}: best temperature {temperature(best['scale'])} (scale {best['scale']:g}, "
        f"{metric_words(objective(folder))} {num(best['spearman'])}); "
        f"in BGE's range: {'; '.join(parts) or 'no scale tried'}"
    )
    return line, float(best["scale"]), holds


def against_untrained(scores: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Each trained scale minus the untrained model (scale 0: zero gradient), paired by seed, from ``scores`` (one
    value per scale and seed): mean and a Student-t interval over seeds at ``level``, Bonferroni over the scales
    compared (columns scale, untrained, n_seeds, mean, ci_low, ci_high); empty when there is no scale 0."""
    frame = scores.pivot_table("value", "seed", "scale")
    if 0.0 not in frame.columns:
        return pd.DataFrame()
    trained = [s for s in frame.columns if s != 0.0]
    corrected = 1 - (1 - level) / max(len(trained), 1)
    rows = []
    for scale in trained:
        both = frame[[0.0, scale]].dropna()
        mean, low, high = mean_interval((both[scale] - both[0.0]).to_numpy(), corrected)
        rows.append((scale, float(both[0.0].mean()), len(both), mean, low, high))
    return pd.DataFrame(rows, columns=["scale", "untrained", "n_seeds", "mean", "ci_low", "ci_high"])


def untrained_differences(folder: Path) -> dict[str, pd.DataFrame]:
    """`against_untrained` for each metric of `COST_METRICS` the study logged (those with an untrained arm)."""
    columns = read_csv(folder / TRIALS_CSV).columns
    diffs = {metric: against_untrained(tidy(folder, metric)) for metric in COST_METRICS if metric in columns}
    return {metric: frame for metric, frame in diffs.items() if not frame.empty}


def cost_lines(name: str, diffs: dict[str, pd.DataFrame]) -> list[str]:
    """One evidence line per metric: every temperature of study ``name`` against the untrained model."""
    lines = []
    for metric, frame in diffs.items():
        parts = [
            f"{temperature(r['scale'])}: {signed(r['mean'])} {interval(r['ci_low'], r['ci_high'])}"
            for _, r in frame.sort_values("scale", ascending=False).iterrows()
        ]
        lines.append(
            f"`{name}`, {metric_words(metric)} by temperature minus the untrained model's "
            f"{num(frame['untrained'].iloc[0])} (paired t over {frame['n_seeds'].min():g} seeds, "
            f"Bonferroni over {len(frame)} temperatures): {'; '.join(parts)}"
        )
    return lines


def cost_summary(name: str, diffs: dict[str, pd.DataFrame], scale: float) -> str:
    """``; in `name` its temperature 0.05 moves, against the untrained model, <metric> +0.030 [..], ...``"""
    parts = [
        f"{metric_words(metric)} {signed(r['mean'])} {interval(r['ci_low'], r['ci_high'])}"
        for metric, frame in diffs.items()
        for _, r in frame[frame["scale"] == scale].iterrows()
    ]
    if not parts:
        return ""
    return f"; in `{name}` its temperature {temperature(scale)} moves, against the untrained model, " + ", ".join(parts)


def untrained_against_best(folder: Path) -> str:
    """``the untrained model is 0.003 below the best [-0.001, 0.007], equivalent`` on the metric the study chose on;
    empty when the study has no scale 0."""
    rows = chosen_table(folder)
    untrained = rows[rows["scale"] == 0.0]
    return f"the untrained model is {against_best(untrained.iloc[0])}" if not untrained.empty else ""


def _side(bests: tuple[float, ...], default: float) -> str:
    """Where the best temperatures (from scales) lie against a default temperature, in words."""
    temperatures = [1 / b for b in bests]
    if all(t > default for t in temperatures):
        return "warmer than"
    return "colder than" if all(t < default for t in temperatures) else "at or around"


# study 2 (static starts pretrained at scales 10, 20 and 50, then fine-tuned), by `follows`' word
CONTROLLED_WORDS = {
    "follows": "the best fine-tuning scale follows the start's",
    "shared": "one fine-tuning scale is in every start's confidence set (not shown equivalent)",
    "not followed": "the best fine-tuning scale does not follow the start's all the way",
    "unclear": "whether the best fine-tuning scale follows the start's is unclear at 3 pretraining seeds",
}


def question_d(results: Path) -> Section:
    question = f"(d) BGE's advice: fine-tune a normalized model at temperature {BGE_ADVICE[0]:g}-{BGE_ADVICE[1]:g}"
    used = [(results / name, condition) for name, condition in FINETUNE_FOLDERS if present(results / name)]
    if not used:
        return untested(question, [results / name for name, _ in FINETUNE_FOLDERS], f"run {FINETUNE}")
    lines, bests, holds = zip(*(advice_line(folder, condition) for folder, condition in used), strict=True)
    evidence = [*lines]
    finetune = results / FINETUNE
    diffs = untrained_differences(finetune) if present(finetune) else {}
    if present(finetune):
        evidence += cost_lines(FINETUNE, diffs)
    else:
        evidence.append(f"{status(finetune)}: MNRL fine-tuning of the full model untested")
    short = results / SHORT_FINETUNE
    moved = untrained_against_best(short) if present(short) else ""
    if present(short):
        line, _, _ = advice_line(short, "")
        evidence.append(f"a short fine-tune on data like the start model's own: {line}; {moved}")
        evidence += cost_lines(SHORT_FINETUNE, untrained_differences(short))
    static = results / "mnrl_scale"
    if present(static):
        line, _, _ = advice_line(static, "")
        evidence.append(f"for contrast, static embeddings trained from their start (not a fine-tune): {line}")
    controlled = study_lines(results)
    for said in controlled:
        evidence += [f"the start's own temperature controlled (`{said.arm.finetune}`): {line}" for line in said.lines]
    inside = all(1 / BGE_ADVICE[1] <= b <= 1 / BGE_ADVICE[0] for b in bests)
    temps = " and ".join(f"{temperature(b)} in {f.name}" for b, (f, _) in zip(bests, used, strict=True))
    chosen = {folder.name: b for b, (folder, _) in zip(bests, used, strict=True)}
    cost = cost_summary(FINETUNE, diffs, chosen[FINETUNE]) if FINETUNE in chosen else ""
    answer = (
        f"{'Only its warm end' if inside else 'Not here'}: fine-tuning all-MiniLM-L6-v2 the best temperature is "
        f"{temps}"
        + (", and the colder end of the range is worse" if all(holds) else "")
        + cost
        + (f"; in `{SHORT_FINETUNE}`, a short fine-tune, {moved}" if moved else "")
        + f"; but {START_MODEL}, so this may only say 'keep the start model's temperature'"
        + "".join(
            f". With the start's temperature controlled (`{said.arm.finetune}`: {starts_words(said)}; "
            f"*{study_strength(said).label}* by the rule: {study_strength(said).reason}), "
            f"{CONTROLLED_WORDS[said.word]}: {said.own_scale}"
            for said in controlled
        )
        + "."
    )
    facts = [facts_of(folder) for folder, _ in used]
    scopes = [scope(folder, fact.n_seeds) for (folder, _), fact in zip(used, facts, strict=True)]
    scopes += [scope(results / said.arm.finetune, said.facts[0].n_seeds) for said in controlled]
    controls = [Control(START, said.arm.finetune, study_strength(said), said.word == "follows") for said in controlled]
    return Section(
        question,
        answer,
        strength(facts, all(holds), sum(holds), controls=controls),
        evidence,
        scopes + ([scope(short, folder_facts(short).n_seeds)] if present(short) else []),
        [
            f"{BGE_ADVICE_SOURCE} (BGE's models were trained at {BGE_TRAINED[0]:g}-{BGE_TRAINED[1]:g}): "
            f"{'agrees at the warm end only' if inside else 'disagrees'} for a model trained at "
            f"{1 / MINILM_SCALE:g}",
            f"{BGE_V15}: the release moved the way these fine-tunes prefer, to a warmer temperature",
            f"{FLAG_README_SOURCE}: temperature {FLAG_README[0]:g}-{FLAG_README[1]:g}, default {FLAG_README[2]:g}: "
            f"the best here ({', '.join(sorted({temperature(b) for b in bests}))}) is "
            f"{'inside' if all(FLAG_README[0] <= 1 / b <= FLAG_README[1] for b in bests) else 'not always inside'} "
            f"that range and {_side(bests, FLAG_README[2])} its default",
        ],
        [
            f"fine-tuning a model trained at another temperature (e.g. a BGE model at 0.01-0.02), the full model "
            f"fine-tuned with MNRL on more data or other domains ({status(finetune)}), more steps, a tuned "
            f"learning rate",
        ],
    )
