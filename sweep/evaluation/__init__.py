"""Layer 6, evaluation beyond the STSB Spearman: the extra evaluation sets (`eval.extra`), the layer x dim grid and
the per-pair predictions each trial logs."""

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
