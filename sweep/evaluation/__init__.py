"""Layer 5, evaluation beyond the STSB Spearman: the extra evaluation sets (`eval.extra`), the layer x dim grid and
the per-pair predictions each trial logs.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.evaluation.extra_sets import KINDS, ExtraEvaluators, TrialScorer, metric_names
    from sweep.evaluation.layer_grid import log_layer_grid, stsb_layer_grid
    from sweep.evaluation.layer_grid_config import grid_sets, validate_layer_grid
    from sweep.evaluation.objective import allowed_objectives, objective_name, objective_value
    from sweep.evaluation.predictions import (
        load_predictions,
        log_predictions,
        log_table,
        prediction_table,
        score_pairs,
        untrained_part,
    )

__all__ = [
    "ExtraEvaluators",
    "KINDS",
    "TrialScorer",
    "allowed_objectives",
    "grid_sets",
    "load_predictions",
    "log_layer_grid",
    "log_predictions",
    "log_table",
    "metric_names",
    "objective_name",
    "objective_value",
    "prediction_table",
    "score_pairs",
    "stsb_layer_grid",
    "untrained_part",
    "validate_layer_grid",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "extra_sets": (
        "ExtraEvaluators",
        "KINDS",
        "TrialScorer",
        "metric_names",
    ),
    "layer_grid": (
        "log_layer_grid",
        "stsb_layer_grid",
    ),
    "layer_grid_config": (
        "grid_sets",
        "validate_layer_grid",
    ),
    "objective": (
        "allowed_objectives",
        "objective_name",
        "objective_value",
    ),
    "predictions": (
        "load_predictions",
        "log_predictions",
        "log_table",
        "prediction_table",
        "score_pairs",
        "untrained_part",
    ),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
