"""The paired-comparison table of a study: per condition, which scales are not distinguishable from the best (or,
in a study that sweeps other keys instead of the scale, which grid points: a temperature schedule's in words).

Read from MLflow (each COMPLETE trial's ``predictions/stsb_validation.csv``) and computed by
:func:`sweep.stats.bootstrap.paired_bootstrap`; written by ``python -m sweep.report study`` as
``paired_comparison.csv`` and ``paired_comparison.md``, and logged on the parent run at the end of
``python -m sweep`` (`sweep.report.live_study.log_study_report`). A scale whose model collapsed is left out of its
condition's comparison, its row saying why (``not_scoreable``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from sweep.evaluation import load_predictions
from sweep.losses import ScaleSchedule, parse_spec
from sweep.report.against_untrained import ConditionArrays, compare_with_untrained
from sweep.report.predictions_file import Fetch
from sweep.report.results_folder import PAIRED_FILES, PAIRED_TEST_CSV
from sweep.report.summaries import (
    SCALE,
    SCHEDULE,
    SPEARMAN_OF_SPLIT,
    by_condition,
    complete_trials,
    condition_names,
    markdown_table,
    row_labels,
    swept_scales,
)
from sweep.stats import (
    DEFAULT_MARGIN,
    DETAIL_INDENT,
    ELIMINATED_AFTER,
    LINE_WORDS,
    RACE_ROUNDS,
    PairedComparison,
    UntrainedComparison,
    bullets,
    eliminated_after,
    paired_bootstrap,
    percent,
    round_level,
    seed_comparison,
)

if TYPE_CHECKING:  # a folder's comparison, from its shipped predictions, does not import MLflow
    from mlflow.tracking import MlflowClient

log = logging.getLogger(__name__)

SEED = "param.trial.seed"
COLUMNS = [
    "condition",
    "scale",
    "spearman",
    "diff_to_best",
    "ci_low",
    "ci_high",
    "best",
    "indistinguishable",
    "not_scoreable",
]
POINT = "point"  # the column that replaces "scale" when grid points are compared
SCHEDULE_NAME = SCHEDULE.removeprefix("loss.")  # a swept schedule key's condition name: scale_schedule.<key>
STSB_VALIDATION_LABEL = "STSB validation Spearman"  # what every line of the comparison is about
SPLIT_LABELS = {"validation": STSB_VALIDATION_LABEL, "test": "STSB test Spearman"}


def _common_seeds(group: pd.DataFrame) -> tuple[pd.DataFrame, list[object], list[object]]:
    """The group with a ``seed`` column, the seeds every scale has, and the scales, sorted."""
    group = group.assign(seed=group[SEED] if SEED in group else 0)
    seeds = sorted(set.intersection(*(set(g["seed"]) for _, g in group.groupby("scale"))))
    return group, seeds, sorted(group["scale"].unique())


def _labels(scales: list[object]) -> list[float] | list[str]:
    """Sorted scales as floats, or grid-point labels as strings."""
    return [str(s) for s in scales] if isinstance(scales[0], str) else [float(cast(float, s)) for s in scales]


def _condition_arrays(group: pd.DataFrame, fetch: Fetch, split: str) -> ConditionArrays | None:
    """The condition's predictions over the seeds that every scale of the group has."""
    group, seeds, scales = _common_seeds(group)
    if len(scales) < 2 or not seeds:
        return None
    gold, predictions, run_ids = None, [], []
    for scale in scales:
        rows, runs = [], []
        for seed in seeds:
            run_id = group[(group["scale"] == scale) & (group["seed"] == seed)]["run_id"].iloc[0]
            table = fetch(run_id, split)
            if table is None or (gold is not None and len(table) != len(gold)):
                log.warning("trial run %s has no usable %s predictions: no paired comparison", run_id, split)
                return None
            gold = table["gold"].to_numpy() if gold is None else gold
            rows.append(table["cosine"].to_numpy())
            runs.append(str(run_id))
        predictions.append(rows)
        run_ids.append(runs)
    assert gold is not None  # at least two scales, each with a seed
    return ConditionArrays(gold, np.asarray(predictions), _labels(scales), run_ids)


def _seed_arrays(group: pd.DataFrame, metric: str) -> tuple[np.ndarray, list[float] | list[str]] | None:
    """(per-seed values of the ``metric`` column (scales, seeds), scales), over the common seeds; None with fewer
    than two seeds (one seed and no per-pair predictions: nothing to compare with)."""
    if metric not in group:
        return None
    group, seeds, scales = _common_seeds(group)
    if len(scales) < 2 or len(seeds) < 2:
        return None
    wide = group[group["seed"].isin(seeds)].pivot_table(index="scale", columns="seed", values=metric, dropna=False)
    return wide.loc[scales].to_numpy(dtype=float), _labels(scales)


def _race_split(group: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the trials to compare, the trials of points a race dropped before its last round). In a raced study
    (`study.race`: its dropped points' trials carry ``eliminated_after``) the points with the most seeds are
    compared on those seeds, which is the race's last round (its survivors and what that round dropped), rather than
    every point on the seeds all share; elsewhere every trial is compared."""
    if ELIMINATED_AFTER not in group or group[ELIMINATED_AFTER].isna().all():
        return group, group.iloc[:0]
    seeds = group.assign(seed=group[SEED] if SEED in group else 0).groupby("scale")["seed"].transform("nunique")
    return group[seeds == seeds.max()], group[seeds < seeds.max()]


def _level(group: pd.DataFrame, level: float) -> float:
    """The level a condition's comparison is made at: ``level``, or in a raced study (its trials carry
    ``race_rounds``) the level its race compared each round at, `sweep.stats.race.round_level`: the race spent
    1 - ``level`` over its rounds, so the last round, which this comparison is, holds the best at ``level`` overall
    and agrees with the race on which points are out."""
    if RACE_ROUNDS not in group or group[RACE_ROUNDS].isna().all():
        return level
    return round_level(level, int(group[RACE_ROUNDS].max()))


def _with_race(
    result: PairedComparison, compared: pd.DataFrame, dropped: pd.DataFrame, metric: str
) -> PairedComparison:
    """The comparison with a raced study's record: ``eliminated_after`` on the points its last round dropped (out of
    the confidence set, as the race decided), and a row per point it dropped earlier: the mean of ``metric`` over its
    own seeds, ``n_seeds`` those seeds, the verdict ``eliminated after K seeds``, no interval."""
    if ELIMINATED_AFTER not in compared:
        return result
    last = compared.groupby("scale")[ELIMINATED_AFTER].max()
    table = result.table.assign(n_seeds=result.n_seeds, **{ELIMINATED_AFTER: result.table["scale"].map(last)})
    table.loc[table[ELIMINATED_AFTER].notna(), "in_confidence_set"] = False
    earlier = pd.DataFrame(
        [
            {
                "scale": scale,
                "spearman": rows[metric].mean() if metric in rows else float("nan"),
                "n_seeds": rows[SEED].nunique() if SEED in rows else 1,
                "verdict": eliminated_after(int(rows[ELIMINATED_AFTER].max()))
                if rows[ELIMINATED_AFTER].notna().any()
                else f"not compared (race in progress, {len(rows)} seeds)",
                ELIMINATED_AFTER: rows[ELIMINATED_AFTER].max(),
                "in_confidence_set": False,
                "best": False,
                "indistinguishable": False,
                "not_scoreable": "",
            }
            for scale, rows in dropped.groupby("scale")
        ]
    )
    merged = pd.concat([table, earlier], ignore_index=True) if not earlier.empty else table
    merged = merged.sort_values("scale", ignore_index=True)
    return PairedComparison(
        merged,
        result.n_pairs,
        result.n_seeds,
        result.n_resamples,
        result.level,
        result.margin,
        result.correction,
        result.optimum,
    )


def _comparison_groups(trials: pd.DataFrame) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    """(label, COMPLETE trials with a ``scale`` column) per condition, and what ``scale`` holds: with the scale
    swept, one group per condition; otherwise, when other keys are swept (AnglE's three scales, its weights), one
    group whose ``scale`` is each trial's grid point, ``name=value, ...``: every point against the best one."""
    complete, names = complete_trials(trials), condition_names(trials)
    if swept_scales(trials):
        unlogged = complete["scale"].isna()
        if unlogged.any():  # their params never reached MLflow (the tracking server was down past the limit)
            log.warning(
                "%d COMPLETE trial runs have no logged scale: left out of the paired comparison", unlogged.sum()
            )
            complete = complete[~unlogged]
        return by_condition(complete, names), "scale"
    if not names:
        return [], POINT
    return [("", complete.assign(scale=_point_labels(trials.loc[complete.index], complete, names)))], POINT


def _point_labels(trials: pd.DataFrame, complete: pd.DataFrame, names: list[str]) -> list[str]:
    """Each COMPLETE trial's grid point, ``name=value, ...``, a swept temperature schedule first and in words
    ("cosine 5-50", not its keys). ``trials``: the same rows as ``complete`` with their raw ``param.*`` columns."""
    schedule = [name for name in names if name.startswith(SCHEDULE_NAME)]
    others = [name for name in names if name not in schedule]
    labels = row_labels(complete, others)
    if not schedule:
        return labels
    words = [_schedule_words(row) for _, row in trials.iterrows()]
    return [", ".join(part for part in pair if part) for pair in zip(words, labels, strict=True)]


def _schedule_words(row: pd.Series) -> str:
    """A trial's temperature schedule in words ("constant 10", "cosine 5-50", "linear 50-5"): its spec when it has
    one, else its keys (a constant at its ``loss.scale``). MLflow hands params back as strings where a column mixes
    numbers and nulls ("None")."""

    def given(name: str) -> Any:
        value = row.get(name if name == SCALE else f"param.{SCHEDULE}{name}")
        return None if value is None or value == "None" or pd.isna(value) else value

    scale = float(given(SCALE)) if given(SCALE) is not None else None
    if given("spec") is not None:
        return parse_spec(str(given("spec"))).words(scale)
    numbers = {
        name: float(given(name))
        for name in ("min_scale", "max_scale", "start_scale", "end_scale")
        if given(name) is not None
    }
    period = int(float(given("period_steps"))) if given("period_steps") is not None else None
    return ScaleSchedule(str(given("kind")), period_steps=period, **numbers).words(scale)


def paired_comparisons(
    trials: pd.DataFrame,
    client: MlflowClient | None,
    split: str = "validation",
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    margin: float = DEFAULT_MARGIN,
    fetch: Fetch | None = None,
    chosen: Mapping[str, object] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """The table (one row per condition and scale, or per grid point in a ``point`` column, with n_pairs, n_seeds,
    n_resamples, level, margin) and one summary line per condition; empty when nothing was swept or the trials
    logged no predictions. ``fetch`` reads a trial's predictions (default: its MLflow artifact through ``client``);
    ``chosen`` (condition -> the scale validation chose, `chosen_scales`) compares that scale with the untrained
    model instead of the split's own best (test reads the choice, it never makes one)."""
    source = fetch or (lambda run_id, part: load_predictions(cast("MlflowClient", client), run_id, part))
    groups, column = _comparison_groups(trials) if not trials.empty else ([], "scale")
    results = []
    for label, group in groups:
        compared, dropped = _race_split(group)
        arrays = _condition_arrays(compared, source, split)
        if arrays is not None:
            result = paired_bootstrap(
                arrays.gold, arrays.predictions, arrays.labels, n_resamples, _level(compared, level), seed, margin
            )
            result = _with_race(result, compared, dropped, SPEARMAN_OF_SPLIT[split])
            pick = None if chosen is None else chosen.get(label)
            results.append((label, compare_with_untrained(result, arrays, source, split, n_resamples, seed, pick)))
    return _assembled(results, column, SPLIT_LABELS[split])


def seed_comparisons(
    trials: pd.DataFrame,
    split: str = "validation",
    level: float = 0.95,
    margin: float = DEFAULT_MARGIN,
    metric: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """`paired_comparisons` from one number per trial alone (`sweep.stats.bootstrap.seed_comparison`): the
    split's STSB Spearman for a results folder that ships no per-pair predictions, or any other ``metric`` column
    (an ``eval.objective``), its lines then named after it."""
    groups, column = _comparison_groups(trials) if not trials.empty else ([], "scale")
    results = []
    for label, group in groups:
        compared, dropped = _race_split(group)
        arrays = _seed_arrays(compared, metric or SPEARMAN_OF_SPLIT[split])
        if arrays is not None:
            result = seed_comparison(*arrays, level=_level(compared, level), margin=margin)
            results.append((label, _with_race(result, compared, dropped, metric or SPEARMAN_OF_SPLIT[split])))
    return _assembled(results, column, metric or SPLIT_LABELS[split])


def _assembled(results: list[tuple[str, PairedComparison]], column: str, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """One table of every condition's comparison (``scale`` renamed ``column``), and their lines."""
    if not results:
        return pd.DataFrame(columns=COLUMNS), []
    tables = [
        result.table.assign(
            condition=label,
            n_pairs=result.n_pairs,
            n_seeds=result.table["n_seeds"] if "n_seeds" in result.table else result.n_seeds,  # a race's own seeds
            n_resamples=result.n_resamples,
            level=result.level,
            margin=result.margin,
            correction=result.correction,
        )
        for label, result in results
    ]
    lines = [
        text
        for label, result in results
        for text in (result.line(f"{metric}, {label}" if label else metric), f"{DETAIL_INDENT}{result.detail()}")
        if text.strip()
    ]
    table = pd.concat(tables, ignore_index=True)
    table = table[COLUMNS + [c for c in table if c not in COLUMNS]]
    return table.rename(columns={"scale": column}), lines


def chosen_scales(validation: pd.DataFrame) -> dict[str, object]:
    """Condition -> the scale (or grid point) validation chose, from `paired_comparisons`' validation table."""
    column = POINT if POINT in validation else "scale"
    best = validation[validation["best"].eq(True)]
    return {str(condition): rows[column].iloc[0] for condition, rows in best.groupby("condition", sort=False)}


def _against_untrained(row: pd.Series) -> str:
    """``; on test, above no training (0.612): +0.051 [+0.020, +0.082]`` from a row's `UNTRAINED_COLUMNS`, or ""."""
    verdict = row.get("untrained_verdict")
    if not isinstance(verdict, str) or not verdict:
        return ""
    comparison = UntrainedComparison(
        float(row["untrained_spearman"]),
        float(row["diff_to_untrained"]),
        float(row["untrained_low"]),
        float(row["untrained_high"]),
        verdict,
        int(row["n_seeds"]),
        float(row["margin"]),
    )
    return f"; on test, {comparison.clause()}"


def confirmation_lines(validation: pd.DataFrame, test: pd.DataFrame, metric: str = SPLIT_LABELS["test"]) -> list[str]:
    """Per condition, whether test (``metric``: STSB test's Spearman, or an objective's test counterpart) confirms
    the scale chosen on validation: it does when that scale is in the test's confidence set for the best (test was
    never used to choose). With one seed nothing leaves a set, so the line says only what test ranks first."""
    column = POINT if POINT in validation else "scale"
    lines = []
    for condition, chosen in validation[validation["best"]].groupby("condition", sort=False):
        on_test = test[(test["condition"] == condition) & (test[column] == chosen[column].iloc[0])]
        if on_test.empty or "in_confidence_set" not in on_test:
            continue
        row, name = on_test.iloc[0], _name(chosen[column].iloc[0])
        held = test[(test["condition"] == condition) & test["in_confidence_set"].eq(True)]
        members = ", ".join(_name(v) for v in held.sort_values("p_best", ascending=False)[column])
        head = f"{metric}, {condition}" if condition else metric
        if row["n_seeds"] < 2:  # nothing leaves the set with one seed: a set of every scale would confirm anything
            top = _name(test[(test["condition"] == condition) & test["best"].eq(True)][column].iloc[0])
            ranks = "also ranks " + name if top == name else f"ranks {top}"
            lines.append(
                f"{head}: test {ranks} first{'' if top == name else f', not {name} chosen on validation'} "
                f"(one seed: no confidence set on test either; add study.seeds)"
            )
            continue
        verdict = "confirms" if row["in_confidence_set"] else "does not confirm"
        words = LINE_WORDS.get(row["verdict"], row["verdict"]).format(margin=row["margin"])
        lines.append(
            f"{head}: test {verdict} {name} chosen on validation ({words} on test; "
            f"{percent(row['level'])} confidence set for the best on test: {members}){_against_untrained(row)}"
        )
    return lines


def _name(value: object) -> str:
    return f"scale {value:g}" if isinstance(value, float) else f"point ({value})"


def write_paired_comparison(
    table: pd.DataFrame, lines: list[str], out_dir: Path, test: pd.DataFrame | None = None
) -> list[Path]:
    """``paired_comparison.csv`` and ``paired_comparison.md`` (the table and the summary lines of
    :func:`paired_comparisons`), and ``paired_comparison_test.csv`` with STSB test's table when given."""
    if table.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, markdown = (out_dir / name for name in PAIRED_FILES)
    table.to_csv(csv, index=False)
    written = [csv, markdown]
    body = ["", *markdown_table(table), ""]
    if test is not None and not test.empty:
        written.append(out_dir / PAIRED_TEST_CSV)
        test.to_csv(written[-1], index=False)
        body += ["STSB test (confirmation; never used to choose):", "", *markdown_table(test), ""]
    markdown.write_text("\n".join([bullets(lines), *body]))
    return written
