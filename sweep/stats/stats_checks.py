"""The checks of the `stats` section's keys that training does not read (the probe's held-out loss scales, the paired
bootstrap's settings), apart from the probe that measures them (`sweep.stats.probe`), so that the validation pass
imports no torch."""

from __future__ import annotations

from sweep.config.checks import Problems, require_int, require_number
from sweep.config.schema import StatsConfig
from sweep.errors import ConfigError


def check_stats(stats: StatsConfig) -> None:
    """The statistics keys the probe (`sweep.stats.probe`) and the paired bootstrap read that training does not:
    ``loss_scales`` and ``paired.*``."""
    problems = Problems()
    scales = stats.loss_scales  # a list of numbers or null (sweep.config.schema)
    if scales is not None and any(scale < 0 for scale in scales):
        problems.add(ConfigError("stats.loss_scales", list(scales), "must be null or a list of scales >= 0"))
    problems.check(require_int, "stats.paired.resamples", stats.paired.resamples, minimum=2)
    if not 0 < stats.paired.level < 1:
        problems.add(ConfigError("stats.paired.level", stats.paired.level, "must be a number in (0, 1), e.g. 0.95"))
    margin = stats.paired.margin
    problems.check(require_number, "stats.paired.margin", margin, 0.0, 1.0, note="a Spearman difference, e.g. 0.01")
    problems.raise_any()
