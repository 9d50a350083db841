"""Analytic checks of sweep.stats.concentration (similarity concentration, alignment, uniformity)."""

import io
import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from scipy.stats import norm

from sweep.stats.concentration import (
    SUMMARY_KEYS,
    alignment,
    at_scale,
    concentration_statistics,
    effective_rank,
    in_batch_statistics,
    pair_cosines,
    prob_random_above_positive,
    random_pair_indices,
    summarize,
    uniformity,
)
from sweep.stats.histogram import histogram_figure

EXTRA_KEYS = {
    "sim_gap",
    "sim_tolerance",
    "sim_p_rand_above_pos",
    "sim_anisotropy",
    "sim_alignment",
    "sim_uniformity",
    "sim_effective_rank",
}
SOFTMAX_KEYS = {
    "sim_softmax_scale",
    "sim_softmax_pos_prob",
    "sim_softmax_entropy",
    "sim_effective_negatives",
    "sim_hardest_negative_weight",
}


def _keys(*distributions: str) -> set[str]:
    return {f"sim_{d}_{k}" for d in distributions for k in SUMMARY_KEYS}


def _random(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


# --- orthonormal vectors -------------------------------------------------------------------------


def test_orthonormal_uniformity_rank_and_random_cosines():
    eye = np.eye(16, dtype=np.float32)
    assert uniformity(eye) == pytest.approx(-4.0, abs=1e-6)  # every squared distance is 2: -2t
    assert uniformity(eye, t=1.0) == pytest.approx(-2.0, abs=1e-6)
    assert uniformity(3.0 * torch.from_numpy(eye)) == pytest.approx(-4.0, abs=1e-6)  # normalizes
    assert effective_rank(eye) == pytest.approx(16.0, abs=1e-9)
    assert effective_rank(np.tile(eye[:1], (5, 1))) == pytest.approx(1.0, abs=1e-9)

    metrics, dists = concentration_statistics(eye[:8], eye[8:], np.linspace(0, 1, 8), n_random_pairs=500)
    np.testing.assert_allclose(dists["rand"], 0.0, atol=1e-12)
    assert metrics["sim_rand_mean"] == pytest.approx(0.0, abs=1e-12)
    assert metrics["sim_anisotropy"] == metrics["sim_rand_mean"]
    assert metrics["sim_uniformity"] == pytest.approx(-4.0, abs=1e-6)
    assert metrics["sim_effective_rank"] == pytest.approx(16.0, abs=1e-9)
    assert metrics["sim_alignment"] == pytest.approx(2.0, abs=1e-12)  # orthogonal "positives"


def test_effective_rank_of_known_spectrum():
    x = np.array([[2.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.0, 0.5]], np.float32)  # unit rows: e1 x 3, e2
    p = np.array([math.sqrt(3), 1.0]) / (math.sqrt(3) + 1.0)  # singular values sqrt(3), 1
    assert effective_rank(x) == pytest.approx(math.exp(-(p * np.log(p)).sum()), abs=1e-9)


def test_uniformity_subsamples_with_seed():
    x = _random(300, 8, seed=1)
    assert uniformity(x, max_points=100, seed=3) == uniformity(x, max_points=100, seed=3)
    assert uniformity(x, max_points=100, seed=3) != uniformity(x, max_points=100, seed=4)
    assert uniformity(x, max_points=None) == uniformity(x, max_points=300)


# --- pairs, alignment -----------------------------------------------------------------------------


def test_identical_pairs_align_perfectly():
    x = _random(50, 12, seed=0)
    np.testing.assert_allclose(pair_cosines(x, 5.0 * x), 1.0, atol=1e-12)
    assert alignment(x, torch.from_numpy(2.0 * x)) == pytest.approx(0.0, abs=1e-12)


def test_alignment_known_pairs():
    u, v = np.array([[1.0, 0.0]], np.float32), np.array([[0.0, 3.0]], np.float32)
    assert alignment(u, v) == pytest.approx(2.0)  # ||u - v||^2 = 2 for orthogonal unit vectors
    assert alignment(u, v, alpha=1.0) == pytest.approx(math.sqrt(2.0))
    w = np.array([[0.5, math.sqrt(3) / 2]], np.float32)  # 60 degrees: 2 - 2 cos = 1
    assert alignment(u, w) == pytest.approx(1.0, abs=1e-6)
    assert pair_cosines(np.vstack([u, u]), np.vstack([v, w])) == pytest.approx([0.0, 0.5], abs=1e-6)


def test_random_pair_indices():
    i, j = random_pair_indices(5, 2000, seed=7)
    assert i.shape == j.shape == (2000,)
    assert np.all(i != j) and i.min() >= 0 and j.min() >= 0 and max(i.max(), j.max()) == 4
    assert len(set(zip(i.tolist(), j.tolist(), strict=True))) == 20  # every ordered pair i != j is reachable
    i2, j2 = random_pair_indices(5, 2000, seed=7)
    assert np.array_equal(i, i2) and np.array_equal(j, j2)
    assert not np.array_equal(i, random_pair_indices(5, 2000, seed=8)[0])
    with pytest.raises(ValueError):
        random_pair_indices(1, 10, seed=0)


# --- summarize -------------------------------------------------------------------------------------


def test_summarize_gaussian():
    s = summarize(np.random.default_rng(0).standard_normal(200_000).astype(np.float32))
    assert list(s) == list(SUMMARY_KEYS)
    for key, p in {"q05": 0.05, "q25": 0.25, "q50": 0.5, "q75": 0.75, "q95": 0.95}.items():
        assert s[key] == pytest.approx(norm.ppf(p), abs=0.01), key
    assert s["mean"] == pytest.approx(0.0, abs=0.01)
    assert s["std"] == pytest.approx(1.0, abs=0.01)
    assert s["iqr"] == pytest.approx(norm.ppf(0.75) - norm.ppf(0.25), abs=0.02)
    assert s["min"] < -4.0 and s["max"] > 4.0


def test_summarize_exact():
    s = summarize(np.array([1.0, 2.0, 3.0, 4.0]))
    assert s == pytest.approx(
        {
            "mean": 2.5,
            "std": math.sqrt(1.25),
            "q05": 1.15,
            "q25": 1.75,
            "q50": 2.5,
            "q75": 3.25,
            "q95": 3.85,
            "iqr": 1.5,
            "min": 1.0,
            "max": 4.0,
        }
    )
    with pytest.raises(ValueError):
        summarize(np.array([]))


# --- in-batch softmax ------------------------------------------------------------------------------


def test_in_batch_scale_zero_is_uniform():
    a, p = _random(100, 8, seed=0), _random(100, 8, seed=1)
    out = in_batch_statistics(a, p, batch_size=16, scale=0.0)
    assert out["softmax_positive_prob"] == pytest.approx(1 / 16, abs=1e-12)
    assert out["softmax_entropy"] == pytest.approx(math.log(16), abs=1e-12)
    assert out["positive"].shape == (96,)  # 6 full batches, the incomplete 7th is dropped
    assert out["negative"].shape == (96 * 15,)

    only = in_batch_statistics(a[:10], p[:10], batch_size=64, scale=0.0)  # sole incomplete batch kept
    assert only["softmax_positive_prob"] == pytest.approx(1 / 10, abs=1e-12)
    assert only["softmax_entropy"] == pytest.approx(math.log(10), abs=1e-12)
    assert only["positive"].shape == (10,)


def test_in_batch_aligned_orthogonal_pairs_at_large_scale():
    eye = np.eye(32, dtype=np.float32)
    out = in_batch_statistics(eye, eye, batch_size=8, scale=100.0, seed=3)
    np.testing.assert_allclose(out["positive"], 1.0, atol=1e-12)
    np.testing.assert_allclose(out["negative"], 0.0, atol=1e-12)
    assert out["softmax_positive_prob"] == pytest.approx(1.0, abs=1e-12)
    assert out["softmax_entropy"] == pytest.approx(0.0, abs=1e-9)
    mid = in_batch_statistics(eye, eye, batch_size=8, scale=1.0)  # logits 1 vs 0: e / (e + 7)
    assert mid["softmax_positive_prob"] == pytest.approx(math.e / (math.e + 7), abs=1e-12)


def test_in_batch_positive_matches_pair_cosines():
    a, p = _random(64, 8, seed=2), _random(64, 8, seed=3)
    out = in_batch_statistics(a, p, batch_size=16, scale=20.0, seed=5)
    np.testing.assert_allclose(np.sort(out["positive"]), np.sort(pair_cosines(a, p)), atol=1e-12)


# --- P(random > positive) --------------------------------------------------------------------------


def test_prob_random_above_positive():
    low, high = np.linspace(-0.5, 0.1, 50), np.linspace(0.5, 0.9, 30)
    assert prob_random_above_positive(positive=high, random=low) == 0.0
    assert prob_random_above_positive(positive=low, random=high) == 1.0
    assert prob_random_above_positive(low, low) == pytest.approx(0.5)
    assert prob_random_above_positive(np.zeros(3), np.zeros(7)) == pytest.approx(0.5)  # all ties


def test_prob_random_above_positive_matches_pairwise_count():
    rng = np.random.default_rng(0)
    pos, rnd = np.round(rng.normal(0.3, 0.2, 120), 1), np.round(rng.normal(0.0, 0.2, 90), 1)  # many ties
    diff = rnd[:, None] - pos[None, :]
    expected = (diff > 0).mean() + 0.5 * (diff == 0).mean()
    assert prob_random_above_positive(pos, rnd) == pytest.approx(expected, abs=1e-12)


# --- concentration_statistics ----------------------------------------------------------------------


def test_concentration_statistics_keys_finite_and_thresholds():
    n = 41
    e1, e2 = _random(n, 16, seed=0), _random(n, 16, seed=1)
    gold = np.linspace(0.0, 1.0, n)  # contains exactly 0.2 and 0.8: thresholds are inclusive
    a, p = _random(80, 16, seed=2), _random(80, 16, seed=3)
    metrics, dists = concentration_statistics(
        e1,
        torch.from_numpy(e2),
        gold,
        train_anchors=a,
        train_positives=p,
        batch_size=16,
        scale=20.0,
        n_random_pairs=1000,
        seed=0,
    )
    assert set(metrics) == _keys("high", "low", "rand", "pos", "neg") | EXTRA_KEYS | SOFTMAX_KEYS
    assert all(math.isfinite(v) and isinstance(v, float) for v in metrics.values())
    assert set(dists) == {"high", "low", "rand", "pos", "neg"}

    cos = pair_cosines(e1, e2)
    np.testing.assert_allclose(dists["high"], cos[gold >= 0.8])
    np.testing.assert_allclose(dists["low"], cos[gold <= 0.2])
    assert dists["high"].size == 9 and dists["low"].size == 9
    assert dists["rand"].size == 1000 and dists["neg"].size == 80 * 15
    np.testing.assert_allclose(dists["pos"], pair_cosines(a, p))
    assert metrics["sim_gap"] == pytest.approx(dists["pos"].mean() - dists["rand"].mean())
    assert metrics["sim_alignment"] == pytest.approx(alignment(a, p))
    assert metrics["sim_softmax_pos_prob"] == pytest.approx(
        in_batch_statistics(a, p, batch_size=16, scale=20.0, seed=0)["softmax_positive_prob"]
    )

    again, _ = concentration_statistics(
        e1, e2, gold, train_anchors=a, train_positives=p, batch_size=16, n_random_pairs=1000, seed=0
    )
    assert again == metrics  # deterministic for a seed


def test_concentration_statistics_without_train_uses_high_pairs():
    e1, e2 = _random(30, 8, seed=4), _random(30, 8, seed=5)
    gold = np.linspace(0.0, 1.0, 30)
    metrics, dists = concentration_statistics(e1, e2, gold, n_random_pairs=500, high_threshold=0.5)
    assert set(metrics) == _keys("high", "low", "rand") | EXTRA_KEYS
    high = gold >= 0.5
    assert metrics["sim_gap"] == pytest.approx(dists["high"].mean() - dists["rand"].mean())
    assert metrics["sim_alignment"] == pytest.approx(alignment(e1[high], e2[high]))
    assert metrics["sim_p_rand_above_pos"] == pytest.approx(prob_random_above_positive(dists["high"], dists["rand"]))


def test_concentration_statistics_skips_empty_distributions():
    e1, e2 = _random(20, 8, seed=6), _random(20, 8, seed=7)
    metrics, dists = concentration_statistics(e1, e2, np.full(20, 0.5), n_random_pairs=200)
    assert set(dists) == {"rand"}  # no pair reaches either threshold
    assert set(metrics) == _keys("rand") | {"sim_anisotropy", "sim_uniformity", "sim_effective_rank"}
    assert all(math.isfinite(v) for v in metrics.values())


def test_concentration_statistics_deduplicates_sentences_and_rejects_nan():
    eye = np.eye(6, dtype=np.float32)
    metrics, dists = concentration_statistics(eye, eye, np.ones(6), n_random_pairs=300)
    np.testing.assert_allclose(dists["rand"], 0.0, atol=1e-12)  # duplicates would give cosine 1
    assert metrics["sim_high_mean"] == pytest.approx(1.0) and metrics["sim_alignment"] == pytest.approx(0.0)
    assert metrics["sim_gap"] == pytest.approx(1.0) and metrics["sim_p_rand_above_pos"] == 0.0
    bad = eye.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        concentration_statistics(bad, eye, np.ones(6))


# --- histogram ---------------------------------------------------------------------------------------


def test_histogram_figure():
    rng = np.random.default_rng(0)
    dists = {"high": rng.uniform(0.5, 1.0, 200), "rand": rng.uniform(-0.2, 0.3, 500), "pos": np.array([1.0000001, 0.9])}
    fig = histogram_figure(dists, title="scale 20")
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert len(ax.patches) == len(dists)
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text().split(" ")[0] for t in legend.get_texts()] == list(dists)
    assert ax.get_xlabel() == "cosine similarity" and ax.get_ylabel() == "density"
    assert ax.get_title() == "scale 20" and ax.get_xlim() == (-1.0, 1.0)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_statistics_moved_to_another_scale_equal_those_computed_there(similarity: str) -> None:
    """A study computes its untrained model's statistics once and moves them to each trial's scale (`at_scale`)."""
    e1, e2, gold = _random(80, 16, 1), _random(80, 16, 2), np.random.default_rng(3).uniform(size=80)
    train = {"train_anchors": _random(64, 16, 4), "train_positives": _random(64, 16, 5)}
    train["train_negatives"] = [_random(64, 16, 6)]
    settings = {"batch_size": 16, "similarity": similarity, "seed": 7}

    def at(scale: float) -> dict[str, float]:
        return concentration_statistics(e1, e2, gold, scale=scale, loss_scales=(1.0, 20.0), **settings, **train)[0]

    moved = at_scale(at(5.0), scale=50.0, **settings, **train)
    assert moved == at(50.0) and moved != at(5.0)
