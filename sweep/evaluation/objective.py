"""The trial objective (``eval.objective``): which number Optuna optimises, chosen and computed in one place.

- ``full`` (default): the full model's STSB validation Spearman;
- ``grid_mean`` or ``cell`` (with ``eval.cell`` = ``"L{layer}_D{dim}"``): the mean of the layer x dim grid
  (``eval.layer_grid``) or one of its cells;
- ``mean`` or a metric name of an extra set (``eval.extra``): that metric, or the mean of STSB validation Spearman
  and each set's first metric.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sweep.config import EvalConfig
from sweep.evaluation import extra_sets

if TYPE_CHECKING:  # the layer grid's table; the validation pass reads the names here without importing pandas
    import pandas as pd

GRID_OBJECTIVES = ("full", "grid_mean", "cell")
CELL = re.compile(r"^L(\d+)_D(\d+)$")


def allowed_objectives(ev: EvalConfig) -> tuple[str, ...]:
    """Every value ``eval.objective`` may take with the extra sets of the `eval` section."""
    return (*GRID_OBJECTIVES, *extra_sets.objectives(ev))


def objective_name(ev: EvalConfig, metric: str) -> str:
    """The objective's name, the study's metric name (what optuna-dashboard shows instead of "Objective 0"): the
    MLflow metric it is, ``metric`` (``study.metric``) for ``full`` (``_grid_mean`` or ``_L{layer}_D{dim}`` added
    for the layer grid's), else ``eval.objective`` of the `eval` section (an extra set's metric, or ``mean``)."""
    objective = ev.objective
    if objective == "full":
        return metric
    if objective == "grid_mean":
        return f"{metric}_grid_mean"
    if objective == "cell":
        return f"{metric}_{ev.cell}"
    return objective


def objective_value(
    ev: EvalConfig,
    stsb_validation: float,
    grid: pd.DataFrame | None = None,
    extra: extra_sets.ExtraEvaluators | None = None,
    extra_scores: Mapping[str, float] | None = None,
) -> float:
    """The trial's objective from its scores: the STSB validation Spearman of the full model, the layer grid
    (`grid`, needed for ``grid_mean`` and ``cell``) or the extra sets (`extra` and `extra_scores`)."""
    objective = ev.objective
    if objective == "full":
        return stsb_validation
    if objective in GRID_OBJECTIVES:
        if grid is None:
            raise ValueError(f"eval.objective={objective} needs the layer grid's table")
        if objective == "grid_mean":
            return float(grid.spearman.mean())
        match = CELL.match(str(ev.cell))
        if match is None:
            raise ValueError(f"eval.cell={ev.cell} is not L<layer>_D<dim>")
        layer, dim = (int(x) for x in match.groups())
        return float(grid.loc[(grid.layer == layer) & (grid.dim == dim), "spearman"].item())
    if extra is None or extra_scores is None:
        raise ValueError(f"eval.objective={objective} needs the extra sets' scores")
    if objective == extra_sets.MEAN_OBJECTIVE:
        values = [stsb_validation, *extra.primary(extra_scores)]
        return sum(values) / len(values)
    return extra_scores[objective]
