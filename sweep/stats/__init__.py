"""Layer 4, statistics: similarity concentration, the per-trial probe and its histogram, collapse (cosines without
spread), the paired bootstrap across scales and its verdicts (the confidence set for the best scale), scales compared
over seeds, one comparison pooled over distinct conditions, interactions (does the scale's effect change with a
condition: gaps, difference in differences, a mixed model), each scale at its own best condition, one round of a race
over seeds, stopping a raced trial at a validation, and the best scale as a continuous quantity (a parabola in log
scale near the peak).

The public face: each name is imported from its module on first use (``from sweep.stats import pool``), so that a
report that only pools differences does not import torch and sentence-transformers (the probe's) nor statsmodels
(the interactions')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.stats.bootstrap import PairedComparison, paired_bootstrap
    from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
    from sweep.stats.concentration import concentration_statistics, in_batch_statistics, pair_cosines
    from sweep.stats.early_stop import StopDecision, stop_early
    from sweep.stats.histogram import histogram_figure
    from sweep.stats.interactions import (
        DifferenceInDifferences,
        InteractionTest,
        difference_in_differences,
        gap_by_condition,
        interaction_test,
    )
    from sweep.stats.optimum import Optimum, locate_optimum
    from sweep.stats.pooling import Pooled, drop_duplicates, paired_differences, pool
    from sweep.stats.probe import ConcentrationProbe, EmbeddingKeepingEvaluator, Encodings
    from sweep.stats.race import RoundDecision, race_round
    from sweep.stats.seed_paired import comparison_line, mean_interval, seed_paired_comparison
    from sweep.stats.tuned_condition import TunedComparison, tuned_comparison
    from sweep.stats.verdicts import DEFAULT_MARGIN, VERDICTS, Verdicts, scale_verdicts

__all__ = [
    "COLLAPSE_STD",
    "DEFAULT_MARGIN",
    "VERDICTS",
    "ConcentrationProbe",
    "DifferenceInDifferences",
    "EmbeddingKeepingEvaluator",
    "Encodings",
    "InteractionTest",
    "Optimum",
    "PairedComparison",
    "Pooled",
    "RoundDecision",
    "StopDecision",
    "TunedComparison",
    "Verdicts",
    "collapse_reason",
    "comparison_line",
    "concentration_statistics",
    "difference_in_differences",
    "drop_duplicates",
    "gap_by_condition",
    "histogram_figure",
    "in_batch_statistics",
    "interaction_test",
    "locate_optimum",
    "mean_interval",
    "pair_cosines",
    "paired_bootstrap",
    "paired_differences",
    "pool",
    "race_round",
    "scale_verdicts",
    "seed_paired_comparison",
    "stop_early",
    "tuned_comparison",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "collapse": ("COLLAPSE_STD", "collapse_reason"),
    "concentration": ("concentration_statistics", "in_batch_statistics", "pair_cosines"),
    "early_stop": ("StopDecision", "stop_early"),
    "histogram": ("histogram_figure",),
    "interactions": (
        "DifferenceInDifferences",
        "InteractionTest",
        "difference_in_differences",
        "gap_by_condition",
        "interaction_test",
    ),
    "optimum": ("Optimum", "locate_optimum"),
    "bootstrap": ("PairedComparison", "paired_bootstrap"),
    "pooling": ("Pooled", "drop_duplicates", "paired_differences", "pool"),
    "probe": ("ConcentrationProbe", "EmbeddingKeepingEvaluator", "Encodings"),
    "race": ("RoundDecision", "race_round"),
    "verdicts": ("DEFAULT_MARGIN", "VERDICTS", "Verdicts", "scale_verdicts"),
    "seed_paired": ("comparison_line", "mean_interval", "seed_paired_comparison"),
    "tuned_condition": ("TunedComparison", "tuned_comparison"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
