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
    from sweep.stats.bootstrap import (
        DETAIL_INDENT,
        PairedComparison,
        bullets,
        pair_resamples,
        paired_bootstrap,
        seed_comparison,
    )
    from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
    from sweep.stats.concentration import concentration_statistics, in_batch_statistics, pair_cosines
    from sweep.stats.early_stop import HISTORY_COLUMNS, StopDecision, stop_early
    from sweep.stats.histogram import histogram_figure
    from sweep.stats.interactions import (
        DifferenceInDifferences,
        InteractionTest,
        difference_in_differences,
        gap_by_condition,
        interaction_test,
    )
    from sweep.stats.optimum import Optimum, locate_optimum
    from sweep.stats.pooling import (
        SAME_RUN_TOLERANCE,
        Duplicate,
        Pooled,
        by_condition,
        drop_duplicates,
        paired_differences,
        pool,
    )
    from sweep.stats.probe import ConcentrationProbe, EmbeddingKeepingEvaluator, Encodings, loss_scales
    from sweep.stats.race import ONE_LEFT, RoundDecision, race_round, race_rounds, round_level
    from sweep.stats.seed_paired import comparison_line, mean_interval, per_scale, seed_paired_comparison
    from sweep.stats.stats_checks import check_stats
    from sweep.stats.tuned_condition import (
        BETTER,
        CONDITION,
        EDGES,
        SCALE,
        SEED,
        TEST,
        VALIDATION,
        TunedComparison,
        tuned_comparison,
    )
    from sweep.stats.untrained import UntrainedComparison, against_untrained
    from sweep.stats.verdicts import (
        DEFAULT_MARGIN,
        ELIMINATED_AFTER,
        EQUIVALENT,
        LINE_WORDS,
        NOT_DISTINGUISHABLE,
        RACE_ROUNDS,
        VERDICTS,
        WORSE,
        Verdicts,
        eliminated_after,
        percent,
        scale_verdicts,
        verdict_groups,
    )

__all__ = [
    "BETTER",
    "COLLAPSE_STD",
    "CONDITION",
    "ConcentrationProbe",
    "DEFAULT_MARGIN",
    "DETAIL_INDENT",
    "DifferenceInDifferences",
    "Duplicate",
    "EDGES",
    "ELIMINATED_AFTER",
    "EQUIVALENT",
    "EmbeddingKeepingEvaluator",
    "Encodings",
    "HISTORY_COLUMNS",
    "InteractionTest",
    "LINE_WORDS",
    "NOT_DISTINGUISHABLE",
    "ONE_LEFT",
    "Optimum",
    "PairedComparison",
    "Pooled",
    "RACE_ROUNDS",
    "RoundDecision",
    "SAME_RUN_TOLERANCE",
    "SCALE",
    "SEED",
    "StopDecision",
    "TEST",
    "TunedComparison",
    "UntrainedComparison",
    "VALIDATION",
    "VERDICTS",
    "Verdicts",
    "WORSE",
    "against_untrained",
    "bullets",
    "by_condition",
    "check_stats",
    "collapse_reason",
    "comparison_line",
    "concentration_statistics",
    "difference_in_differences",
    "drop_duplicates",
    "eliminated_after",
    "gap_by_condition",
    "histogram_figure",
    "in_batch_statistics",
    "interaction_test",
    "locate_optimum",
    "loss_scales",
    "mean_interval",
    "pair_cosines",
    "pair_resamples",
    "paired_bootstrap",
    "paired_differences",
    "per_scale",
    "percent",
    "pool",
    "race_round",
    "race_rounds",
    "round_level",
    "scale_verdicts",
    "seed_comparison",
    "seed_paired_comparison",
    "stop_early",
    "tuned_comparison",
    "verdict_groups",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "bootstrap": (
        "DETAIL_INDENT",
        "PairedComparison",
        "bullets",
        "pair_resamples",
        "paired_bootstrap",
        "seed_comparison",
    ),
    "collapse": (
        "COLLAPSE_STD",
        "collapse_reason",
    ),
    "concentration": (
        "concentration_statistics",
        "in_batch_statistics",
        "pair_cosines",
    ),
    "early_stop": (
        "HISTORY_COLUMNS",
        "StopDecision",
        "stop_early",
    ),
    "histogram": ("histogram_figure",),
    "interactions": (
        "DifferenceInDifferences",
        "InteractionTest",
        "difference_in_differences",
        "gap_by_condition",
        "interaction_test",
    ),
    "optimum": (
        "Optimum",
        "locate_optimum",
    ),
    "pooling": (
        "Duplicate",
        "Pooled",
        "SAME_RUN_TOLERANCE",
        "by_condition",
        "drop_duplicates",
        "paired_differences",
        "pool",
    ),
    "probe": (
        "ConcentrationProbe",
        "EmbeddingKeepingEvaluator",
        "Encodings",
        "loss_scales",
    ),
    "race": (
        "ONE_LEFT",
        "RoundDecision",
        "race_round",
        "race_rounds",
        "round_level",
    ),
    "seed_paired": (
        "comparison_line",
        "mean_interval",
        "per_scale",
        "seed_paired_comparison",
    ),
    "stats_checks": ("check_stats",),
    "tuned_condition": (
        "BETTER",
        "CONDITION",
        "EDGES",
        "SCALE",
        "SEED",
        "TEST",
        "TunedComparison",
        "VALIDATION",
        "tuned_comparison",
    ),
    "untrained": (
        "UntrainedComparison",
        "against_untrained",
    ),
    "verdicts": (
        "DEFAULT_MARGIN",
        "ELIMINATED_AFTER",
        "EQUIVALENT",
        "LINE_WORDS",
        "NOT_DISTINGUISHABLE",
        "RACE_ROUNDS",
        "VERDICTS",
        "Verdicts",
        "WORSE",
        "eliminated_after",
        "percent",
        "scale_verdicts",
        "verdict_groups",
    ),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
