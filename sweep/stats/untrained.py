"""The best trained scale against the untrained model: did training help at all, paired on the same pairs and seeds.

A study answers "which scale", but every scale can train the model worse than not training it (too few steps, a
rate too high, data far from the evaluation). Each trial scores its untrained base model at step 0 on the same
evaluation pairs, so the best scale's final predictions and the untrained model's are compared *paired*: by seed
(the untrained model of that seed's trial; the same for every seed when the base model is a pretrained one) and by
evaluation pair. The comparison is the verdict method of `sweep.stats.verdicts` on the compared scales with the
untrained model as one more row, its pairs' covariance from `sweep.stats.bootstrap.pair_resamples`: the same seed
noise (pooled over every scale), pair noise, simultaneous level and margin as the answer line, so one seed never
yields a stronger word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweep.stats.verdicts import DEFAULT_MARGIN, scale_verdicts

HELPED = "above no training"
HURT = "below no training"
SAME = "as good as no training"
UNCLEAR = "cannot tell from no training"


@dataclass(frozen=True)
class UntrainedComparison:
    """The best trained scale minus the untrained model (``difference``, its interval ``low``-``high``, NaN bounds
    when no noise was estimated) and what it shows (``verdict``: `HELPED`, `HURT`, `SAME` or `UNCLEAR`)."""

    untrained: float  # the untrained model's Spearman, mean over seeds
    difference: float
    low: float
    high: float
    verdict: str
    n_seeds: int
    margin: float = DEFAULT_MARGIN

    @property
    def hurt(self) -> bool:
        """Whether training made the best scale, and so every scale, worse than the untrained model."""
        return self.verdict == HURT

    def interval(self) -> str:
        return "" if np.isnan(self.low) else f" [{self.low:+.3f}, {self.high:+.3f}]"

    def clause(self) -> str:
        """``above no training (0.645): +0.052 [+0.031, +0.070]``; one seed says its interval holds pair noise
        only (the answer line already says that seed noise is left out)."""
        words = f"{self.verdict} (within {self.margin:g})" if self.verdict == SAME else self.verdict
        on_pairs = " on these pairs" if self.n_seeds < 2 and self.verdict in (HELPED, HURT) else ""
        return f"{words}{on_pairs} ({self.untrained:.3f}): {self.difference:+.3f}{self.interval()}"

    def headline(self) -> str:
        """The first words of an answer whose best scale is below the untrained model, or "" when it is not."""
        if not self.hurt:
            return ""
        on_pairs = " on these pairs (one seed)" if self.n_seeds < 2 else ""
        return f"TRAINING HURT: every scale is below the untrained model ({self.untrained:.3f}){on_pairs}"


def against_untrained(
    per_seed: np.ndarray,
    pair_covariance: np.ndarray | None,
    best: int,
    level: float = 0.95,
    margin: float = DEFAULT_MARGIN,
    seed: int = 0,
) -> UntrainedComparison:
    """``per_seed`` (1 + scales, seeds): row 0 the untrained model's Spearman with each seed, then the compared
    scales' (the best at row ``best``); ``pair_covariance`` as `sweep.stats.verdicts.scale_verdicts` takes it (None:
    seeds carry all the noise). The interval is the verdicts' simultaneous one for best - untrained, the seed error
    pooled over every scale, so it is as wide as the answer's own: as good (within ``margin``), above (it excludes
    0 from below), below, or neither; one seed never gives 'as good'."""
    per_seed = np.asarray(per_seed, dtype=float)
    if per_seed.ndim != 2 or not 1 <= best < per_seed.shape[0]:
        raise ValueError(
            f"need per_seed (1 + scales, seeds): the untrained model, then the scales, and the best's row >= 1; "
            f"got shape {per_seed.shape}, best {best}"
        )
    verdicts = scale_verdicts(per_seed, pair_covariance, level, margin, reference=best, seed=seed)
    row = verdicts.table.iloc[0]  # best minus untrained: what training added
    low, high = float(row["ci_low"]), float(row["ci_high"])
    informative = verdicts.seed_df > 0 or (verdicts.n_seeds > 1 and verdicts.pairs)
    if np.isnan(low):
        verdict = UNCLEAR
    elif informative and -margin <= low and high <= margin:
        verdict = SAME
    else:
        verdict = HELPED if low > 0 else HURT if high < 0 else UNCLEAR
    means = per_seed.mean(axis=1)
    return UntrainedComparison(
        untrained=float(means[0]),
        difference=float(means[best] - means[0]),
        low=low,
        high=high,
        verdict=verdict,
        n_seeds=per_seed.shape[1],
        margin=margin,
    )
