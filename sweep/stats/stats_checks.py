"""The checks of the `stats` section (the probe's pairs, thresholds, seed and held-out loss scales, the paired
bootstrap's settings), apart from the probe that measures them (`sweep.stats.probe`), so that the validation pass
imports no torch."""

from __future__ import annotations

from sweep.config import Problems, StatsConfig, require_int, require_number, require_seed
from sweep.errors import ConfigError

MAX_RANDOM_PAIRS = 10_000_000  # stats.n_random_pairs: two index arrays and the cosines in memory, about 0.2 GB


def check_stats(stats: StatsConfig) -> None:
    """The keys of the `stats` section: the held-out and random pairs, the gold-score thresholds and the seed the
    probe (`sweep.stats.probe`) measures with, its ``loss_scales``, and the paired bootstrap's ``paired.*``."""
    problems = Problems()
    problems.check(require_int, "stats.heldout_pairs", stats.heldout_pairs, minimum=0, note="0: none")
    note = "pairs drawn with replacement, held in memory"
    problems.check(require_int, "stats.n_random_pairs", stats.n_random_pairs, maximum=MAX_RANDOM_PAIRS, note=note)
    gold = "an STSB gold score, 0..1"
    high = problems.check(require_number, "stats.high_threshold", stats.high_threshold, 0.0, 1.0, note=gold)
    low = problems.check(require_number, "stats.low_threshold", stats.low_threshold, 0.0, 1.0, note=gold)
    if high is not None and low is not None and low >= high:
        problems.add(ConfigError("stats.low_threshold", low, f"must be below stats.high_threshold={high:g}"))
    problems.check(require_seed, "stats.seed", stats.seed)
    scales = stats.loss_scales  # a list of numbers or null (sweep.config.schema)
    if scales is not None and any(scale < 0 for scale in scales):
        problems.add(ConfigError("stats.loss_scales", list(scales), "must be null or a list of scales >= 0"))
    problems.check(require_int, "stats.paired.resamples", stats.paired.resamples, minimum=2)
    if not 0 < stats.paired.level < 1:
        problems.add(ConfigError("stats.paired.level", stats.paired.level, "must be a number in (0, 1), e.g. 0.95"))
    margin = stats.paired.margin
    problems.check(require_number, "stats.paired.margin", margin, 0.0, 1.0, note="a Spearman difference, e.g. 0.01")
    problems.raise_any()
