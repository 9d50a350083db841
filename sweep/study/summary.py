"""A study's results: the table of its trials (printed by `python -m sweep`, logged as ``results.csv``) and the
summary its parent run records."""

from __future__ import annotations

from typing import Any, cast

import optuna
import pandas as pd
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from sweep.evaluation import extra_sets
from sweep.names import (
    ATTR_COLLAPSED,
    ATTR_DISCARDED,
    ATTR_SCALE,
    ATTR_TEMPERATURE,
    ATTR_TEST_SPEARMAN,
    ATTR_VALIDATION_SPEARMAN,
    ATTR_WALL_TIME_S,
    PARAM_SEED,
    TAG_BEST_PARAMS,
)
from sweep.stats import comparison_line, per_scale, seed_paired_comparison

# Columns of the table: `objective` is what Optuna optimised (`eval.objective`: the full model's STSB validation
# Spearman, the layer grid's mean or one grid cell); `stsb_val` and `stsb_test` are always the full model's.
OBJECTIVE = "objective"
STSB_VALIDATION = "stsb_val"
STSB_TEST = "stsb_test"
COLLAPSED = "collapsed"  # present when some trial's model collapsed (sweep.stats.collapse): never the best


def results_table(study: optuna.Study) -> pd.DataFrame:
    """One row per trial: its parameters, scale, temperature, objective, validation/test Spearman, wall time,
    state, and ``collapsed`` when some trial's model collapsed; sorted by scale."""
    rows: list[dict[str, Any]] = []
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.WAITING or t.user_attrs.get(ATTR_DISCARDED):
            continue
        rows.append(
            {
                "trial": t.number,
                **{k: v for k, v in t.params.items() if k not in ("loss.scale", "loss.temperature")},
                "scale": t.user_attrs.get(ATTR_SCALE),
                "temperature": t.user_attrs.get(ATTR_TEMPERATURE),
                OBJECTIVE: t.value,
                STSB_VALIDATION: t.user_attrs.get(ATTR_VALIDATION_SPEARMAN),
                STSB_TEST: t.user_attrs.get(ATTR_TEST_SPEARMAN),
                **extra_sets.table_columns(t.user_attrs),
                "wall_s": t.user_attrs.get(ATTR_WALL_TIME_S),
                "state": t.state.name,
                COLLAPSED: ATTR_COLLAPSED in t.user_attrs,
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    if not table[COLLAPSED].any():
        table = table.drop(columns=COLLAPSED)
    return table.sort_values([c for c in ("scale", "trial") if c in table.columns]).reset_index(drop=True)


def objective_is_stsb_validation(table: pd.DataFrame) -> bool:
    """Whether every trial's objective is its STSB validation Spearman (``eval.objective=full``)."""
    return table.empty or table[OBJECTIVE].equals(table[STSB_VALIDATION])


SEED = PARAM_SEED  # the results table's seed column (a swept parameter, `study.seeds`)


def condition_columns(table: pd.DataFrame) -> list[str]:
    """The swept parameters other than the scale and the seed: one condition per combination of their values."""
    return [c for c in table.columns if "." in c and c != SEED]


def _complete_by_condition(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(``name=value, ...`` or "", COMPLETE trials with a scale whose model did not collapse) per condition."""
    if table.empty:
        return []
    complete = table[(table.state == "COMPLETE") & table["scale"].notna()]
    if COLLAPSED in complete:  # a collapsed model's Spearman is noise: not a measurement of its scale
        complete = complete[~complete[COLLAPSED].astype(bool)]
    names = condition_columns(complete)
    if not names:
        return [("", complete)] if not complete.empty else []
    return [
        (", ".join(f"{n}={v}" for n, v in zip(names, key if isinstance(key, tuple) else (key,), strict=True)), group)
        for key, group in complete.groupby(names, sort=True)
    ]


def _scores(group: pd.DataFrame, column: str) -> pd.DataFrame:
    seeds = group[SEED] if SEED in group else 0
    return pd.DataFrame({"scale": group["scale"], "seed": seeds, "value": group[column]})


def per_scale_table(table: pd.DataFrame, column: str, level: float = 0.95) -> pd.DataFrame:
    """The COMPLETE trials' ``column`` per condition and scale: seeds, mean, t-interval over seeds
    (`sweep.stats.seed_paired.per_scale`)."""
    parts = [
        per_scale(_scores(group, column), level).assign(condition=label)
        for label, group in _complete_by_condition(table)
    ]
    if not parts:
        return pd.DataFrame()
    summary = pd.concat(parts, ignore_index=True)
    return summary if summary["condition"].ne("").any() else summary.drop(columns="condition")


def objective_lines(
    table: pd.DataFrame, metric: str, level: float = 0.95, minimize: bool = False, raced: bool = False
) -> list[str]:
    """Per condition, the best scale by the mean objective over seeds and the scales not distinguishable from it,
    paired by seed (`sweep.stats.seed_paired`): the answer for an objective whose per-pair scores are not logged.
    ``raced`` (`study.race`): only the scales with the most seeds, the race's last round, on all their seeds (the
    scales dropped earlier would cut the comparison to the seeds every scale has), at the ``level`` the caller gives
    (a race's round level, `sweep.stats.race.round_level`)."""
    lines = []
    for label, group in _complete_by_condition(table):
        scores = _scores(group, OBJECTIVE)
        if raced:
            seeds = scores.groupby("scale")["seed"].transform("nunique")
            scores = scores[seeds == seeds.max()]
        compared = seed_paired_comparison(scores, level=level, minimize=minimize)
        if not compared.empty:
            line = comparison_line(compared, metric, level)
            lines.append(f"{label}: {line}" if label else line)
    return lines


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The study's best COMPLETE trial by its direction, leaving out the trials whose model collapsed (None when
    there is no other); the first of equal ones, as Optuna's ``best_trial``."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    usable = [t for t in complete if ATTR_COLLAPSED not in t.user_attrs]
    if not usable:
        return None
    pick = min if study.direction == StudyDirection.MINIMIZE else max
    return pick(usable, key=lambda t: cast(float, t.value))


def parent_summary(study: optuna.Study, metric: str, objective: str) -> tuple[dict[str, float], dict[str, str]]:
    """The parent run's summary metrics and tags (the best params, once a trial completed), best by the study's
    direction among the trials whose model did not collapse: ``best_objective`` (what Optuna optimised,
    `eval.objective`), ``best_{metric}`` too when that is the metric itself (``eval.objective=full``),
    ``n_complete_trials``, and ``n_collapsed_trials`` when some collapsed."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    collapsed = {"n_collapsed_trials": n} if (n := sum(ATTR_COLLAPSED in t.user_attrs for t in complete)) else {}
    best = best_trial(study)
    if best is None:
        return {"n_complete_trials": len(complete), **collapsed}, {}
    assert best.value is not None  # a complete trial
    summary = {"best_objective": best.value, "n_complete_trials": len(complete), **collapsed}
    if objective == "full":
        summary[f"best_{metric}"] = best.value
    return summary, {TAG_BEST_PARAMS: str(best.params)}
