"""Layer 5, statistics: similarity concentration, the per-trial probe and its histogram, collapse (cosines without
spread), and the paired bootstrap across scales.

Imported from their own modules, not re-exported here: ``sweep.stats.seed_paired`` (scales compared over seeds),
``sweep.stats.interactions`` (does the scale's effect change with a condition; statsmodels, slow to import) and
``sweep.stats.pooling`` (one comparison pooled over distinct conditions, duplicates dropped), ``sweep.stats.race``
(one round of a race over seeds, `study.race`) and ``sweep.stats.tuned_condition`` (each scale at its own best
learning rate or other condition, compared with the best over seeds)."""

from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
from sweep.stats.concentration import concentration_statistics, in_batch_statistics, pair_cosines
from sweep.stats.histogram import histogram_figure
from sweep.stats.paired_bootstrap import PairedComparison, paired_bootstrap
from sweep.stats.probe import ConcentrationProbe, EmbeddingKeepingEvaluator, Encodings

__all__ = [
    "COLLAPSE_STD",
    "ConcentrationProbe",
    "EmbeddingKeepingEvaluator",
    "Encodings",
    "PairedComparison",
    "collapse_reason",
    "concentration_statistics",
    "histogram_figure",
    "in_batch_statistics",
    "pair_cosines",
    "paired_bootstrap",
]
