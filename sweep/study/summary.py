"""A study's results: the table of its trials (printed by `python -m sweep`, logged as ``results.csv``) and the
summary its parent run records."""

from __future__ import annotations

from typing import Any

import optuna
import pandas as pd
from optuna.trial import TrialState

from sweep.evaluation import extra_sets
from sweep.names import (
    ATTR_DISCARDED,
    ATTR_SCALE,
    ATTR_TEMPERATURE,
    ATTR_TEST_SPEARMAN,
    ATTR_VALIDATION_SPEARMAN,
    ATTR_WALL_TIME_S,
    TAG_BEST_PARAMS,
)

# Columns of the table: `objective` is what Optuna optimised (`eval.objective`: the full model's STSB validation
# Spearman, the layer grid's mean or one grid cell); `stsb_val` and `stsb_test` are always the full model's.
OBJECTIVE = "objective"
STSB_VALIDATION = "stsb_val"
STSB_TEST = "stsb_test"


def results_table(study: optuna.Study) -> pd.DataFrame:
    """One row per trial: its parameters, scale, temperature, objective, validation/test Spearman, wall time,
    state; sorted by scale."""
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
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.sort_values([c for c in ("scale", "trial") if c in table.columns]).reset_index(drop=True)


def objective_is_stsb_validation(table: pd.DataFrame) -> bool:
    """Whether every trial's objective is its STSB validation Spearman (``eval.objective=full``)."""
    return table.empty or table[OBJECTIVE].equals(table[STSB_VALIDATION])


def parent_summary(study: optuna.Study, metric: str, objective: str) -> tuple[dict[str, float], dict[str, str]]:
    """The parent run's summary metrics and tags (the best params, once a trial completed), best by the study's
    direction: ``best_objective`` (what Optuna optimised, `eval.objective`), ``best_{metric}`` too when that is
    the metric itself (``eval.objective=full``), and ``n_complete_trials``."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        return {"n_complete_trials": 0}, {}
    best = study.best_trial
    assert best.value is not None  # the best trial is a complete one
    summary = {"best_objective": best.value, "n_complete_trials": len(complete)}
    if objective == "full":
        summary[f"best_{metric}"] = best.value
    return summary, {TAG_BEST_PARAMS: str(best.params)}
