"""Layer 5, evaluation beyond the STSB Spearman: the extra evaluation sets (`eval.extra`), the layer x dim grid and
the per-pair predictions each trial logs.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.evaluation.extra_sets import ExtraEvaluators, TrialScorer, metric_names
    from sweep.evaluation.layer_grid import log_layer_grid, stsb_layer_grid
    from sweep.evaluation.objective import allowed_objectives, objective_value
    from sweep.evaluation.predictions import load_predictions, log_predictions

__all__ = [
    "ExtraEvaluators",
    "TrialScorer",
    "allowed_objectives",
    "load_predictions",
    "log_layer_grid",
    "log_predictions",
    "metric_names",
    "objective_value",
    "stsb_layer_grid",
]

# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "extra_sets": ("ExtraEvaluators", "TrialScorer", "metric_names"),
    "layer_grid": ("log_layer_grid", "stsb_layer_grid"),
    "objective": ("allowed_objectives", "objective_value"),
    "predictions": ("load_predictions", "log_predictions"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
