"""The best scale against the untrained model (sweep.stats.untrained) on simulated studies whose truth is known:
training that helps, does nothing and hurts, with three seeds and with one."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.stats.bootstrap import pair_resamples
from sweep.stats.untrained import HELPED, HURT, SAME, UNCLEAR, against_untrained

N_PAIRS = 400
UNTRAINED_NOISE = 0.5  # the untrained model's cosines: gold plus this much noise


def simulated(trained_noise: float | None, n_seeds: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(gold, predictions (seeds, 2, pairs)): the untrained model's cosines (the same for every seed: a pretrained
    base) and each seed's trained ones, gold plus ``trained_noise`` (None: the untrained cosines barely moved)."""
    rng = np.random.default_rng(seed)
    gold = rng.uniform(size=N_PAIRS)
    untrained = gold + rng.normal(scale=UNTRAINED_NOISE, size=N_PAIRS)
    trained = [
        untrained + rng.normal(scale=1e-3, size=N_PAIRS)
        if trained_noise is None
        else gold + rng.normal(scale=trained_noise, size=N_PAIRS)
        for _ in range(n_seeds)
    ]
    return gold, np.stack([np.stack([untrained, t]) for t in trained])


def compare(trained_noise: float | None, n_seeds: int, seed: int = 0):
    gold, predictions = simulated(trained_noise, n_seeds, seed)
    per_seed, covariance = pair_resamples(gold, predictions.transpose(1, 0, 2), 400, seed)
    return against_untrained(per_seed, covariance, best=1), per_seed


@pytest.mark.parametrize(
    ("trained_noise", "verdict", "sign"),
    [(0.2, HELPED, 1), (None, SAME, 0), (1.5, HURT, -1)],
    ids=["training helps", "training does nothing", "training hurts"],
)
def test_three_seeds_tell_help_nothing_and_harm_apart(trained_noise, verdict, sign):
    comparison, per_seed = compare(trained_noise, n_seeds=3)
    assert comparison.verdict == verdict
    assert comparison.untrained == pytest.approx(per_seed[0].mean())
    assert comparison.difference == pytest.approx(per_seed[1].mean() - per_seed[0].mean())
    assert comparison.low <= comparison.difference <= comparison.high
    if sign:  # the interval leaves zero on the side the truth is on
        assert np.sign(comparison.low) == np.sign(comparison.high) == sign
    else:
        assert -0.01 <= comparison.low <= comparison.high <= 0.01
    assert comparison.hurt == (verdict == HURT)
    assert comparison.headline().startswith("TRAINING HURT") == (verdict == HURT)
    assert comparison.clause().startswith(f"{verdict} (" if verdict != SAME else f"{SAME} (within 0.01) (")


def test_one_seed_never_says_as_good_and_says_its_interval_is_the_pairs_alone():
    """Seed noise is unknown with one seed: no 'as good', and help or harm is 'on these pairs' (the answer line
    already says that seed noise is left out)."""
    nothing, _ = compare(None, n_seeds=1)
    assert nothing.verdict == UNCLEAR
    helped, _ = compare(0.2, n_seeds=1)
    assert helped.verdict == HELPED and helped.clause().startswith("above no training on these pairs (")
    hurt, _ = compare(1.5, n_seeds=1)
    assert hurt.verdict == HURT and "one seed" in hurt.headline()


def test_seed_noise_larger_than_the_gain_is_no_verdict():
    """Seeds that disagree about the sign of the gain leave it undecided, however many pairs."""
    gold, predictions = simulated(0.5, n_seeds=3, seed=3)
    per_seed, covariance = pair_resamples(gold, predictions.transpose(1, 0, 2), 400, 3)
    per_seed[1] = per_seed[0] + np.array([0.05, -0.04, 0.01])
    assert against_untrained(per_seed, covariance, best=1).verdict == UNCLEAR


def test_the_seed_error_is_pooled_over_every_scale_as_in_the_answer():
    """Two seeds give the untrained-vs-best contrast alone one degree of freedom; the other scales' seeds narrow it,
    as they narrow the answer's own intervals."""
    gold, predictions = simulated(0.3, n_seeds=2, seed=5)
    others = np.stack(
        [
            np.stack([gold + np.random.default_rng(10 * k + r).normal(scale=0.35, size=N_PAIRS) for r in range(2)])
            for k in range(4)
        ]
    )
    stacked = np.concatenate([predictions.transpose(1, 0, 2), others])
    per_seed, covariance = pair_resamples(gold, stacked, 400, 5)
    alone = against_untrained(per_seed[:2], covariance[:2, :2], best=1)
    pooled = against_untrained(per_seed, covariance, best=1)
    assert pooled.difference == alone.difference
    assert pooled.high - pooled.low < alone.high - alone.low


def test_the_rows_must_be_the_untrained_model_then_the_scales():
    with pytest.raises(ValueError, match="the untrained model, then the scales"):
        against_untrained(np.zeros((3, 2)), None, best=0)
