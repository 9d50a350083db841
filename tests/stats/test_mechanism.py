"""What the loss sees (defect 2: its candidates, similarity and current scale) and the mechanism statistics of
Wang & Liu 2021 (tolerance, effective number of negatives, weight on the hardest negative), and the MNRL loss of
held-out batches at every grid scale, checked analytically."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from datasets import Dataset
from omegaconf import OmegaConf

from sweep.errors import ConfigError
from sweep.stats.concentration import concentration_statistics, in_batch_statistics
from sweep.stats.probe import ConcentrationProbe, Encodings, loss_scales
from sweep.study.validation import trial_config


def _random(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


STATS = OmegaConf.create(
    {"high_threshold": 0.8, "low_threshold": 0.2, "n_random_pairs": 100, "seed": 0, "histogram": False}
)


class Recorder:
    """Stands in for a TrialRun: keeps what is logged."""

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}

    def log_metrics(self, metrics, step=0):
        self.metrics.update(metrics)

    def log_dict(self, data, artifact_file):
        pass


def encodings(n: int = 64, d: int = 8, negatives: bool = True, scale_norm: float = 1.0) -> Encodings:
    train = {
        "train_anchors": scale_norm * _random(n, d, 1),
        "train_positives": scale_norm * _random(n, d, 2),
    }
    if negatives:
        train["train_negatives"] = [scale_norm * _random(n, d, 3)]
    return Encodings(_random(20, d, 4), _random(20, d, 5), np.linspace(0, 1, 20), train)


def test_the_softmax_counts_the_hard_negatives_as_the_loss_does():
    """Scale 0 with (anchor, positive, negative) batches of 8: 16 candidates, entropy ln 16 (the loss's ln 16)."""
    run = Recorder()
    probe = ConcentrationProbe(STATS, None, batch_size=8, scale=0.0, eval_batch_size=8, loss_scales=(0.0, 20.0))
    probe.log(encodings(), run, step=0)
    assert run.metrics["sim_softmax_entropy"] == pytest.approx(math.log(16), abs=1e-12)
    assert run.metrics["sim_softmax_pos_prob"] == pytest.approx(1 / 16, abs=1e-12)
    assert run.metrics["sim_effective_negatives"] == pytest.approx(15, abs=1e-9)
    assert run.metrics["sim_hardest_negative_weight"] == pytest.approx(1 / 15, abs=1e-12)
    assert run.metrics["sim_loss_at_scale_0"] == pytest.approx(math.log(16), abs=1e-12)


def test_dot_similarity_uses_the_raw_embeddings():
    """With similarity=dot the logits are scale * a.c of the unnormalised embeddings, as in the loss."""
    a, p = 3.0 * _random(16, 4, 0), 2.0 * _random(16, 4, 1)
    dot = in_batch_statistics(a, p, batch_size=16, scale=0.5, similarity="dot", seed=0)
    logits = 0.5 * torch.as_tensor(a) @ torch.as_tensor(p).T
    expected = torch.log_softmax(logits, dim=1).diagonal().exp().mean()
    assert dot["softmax_positive_prob"] == pytest.approx(float(expected), rel=1e-9)
    cosine = in_batch_statistics(a, p, batch_size=16, scale=0.5, seed=0)
    assert cosine["softmax_positive_prob"] != pytest.approx(dot["softmax_positive_prob"], rel=1e-3)


def test_the_probe_follows_the_loss_current_scale():
    run = Recorder()
    probe = ConcentrationProbe(STATS, None, batch_size=8, scale=20.0, eval_batch_size=8)
    probe.scale = lambda: 0.0  # e.g. a learned scale read from the loss at measurement time
    probe.log(encodings(), run, step=0)
    assert run.metrics["sim_softmax_entropy"] == pytest.approx(math.log(16), abs=1e-12)
    assert run.metrics["sim_softmax_scale"] == 0.0


def test_orthonormal_candidates_at_large_scale():
    """Orthonormal anchors equal to their positives: the positive takes all the weight; the negatives share
    theirs equally (all at cosine 0), so the effective number of negatives is their count at any scale."""
    eye = np.eye(16)
    out = in_batch_statistics(eye, eye, batch_size=8, scale=50.0, loss_scales=(0.0, 1.0, 50.0))
    assert out["softmax_positive_prob"] == pytest.approx(1.0, abs=1e-12)
    assert out["effective_negatives"] == pytest.approx(7.0, abs=1e-9)
    assert out["hardest_negative_weight"] == pytest.approx(1 / 7, abs=1e-12)
    assert out["loss_at_scale"][0.0] == pytest.approx(math.log(8), abs=1e-12)
    assert out["loss_at_scale"][1.0] == pytest.approx(math.log(math.e + 7) - 1, abs=1e-12)
    assert out["loss_at_scale"][50.0] == pytest.approx(math.log1p(7 * math.exp(-50)), abs=1e-12)


def test_one_hard_negative_takes_the_weight_at_large_scale():
    """Orthonormal anchors whose positives point away (cosine -1) and whose hard negatives copy them (cosine 1):
    of each anchor's 7 negatives one is at cosine 1 and six at 0, so at scale 200 it carries all the weight."""
    eye = np.eye(4)
    out = in_batch_statistics(eye, -eye, batch_size=4, scale=200.0, negatives=[eye])
    assert out["effective_negatives"] == pytest.approx(1.0, abs=1e-6)
    assert out["hardest_negative_weight"] == pytest.approx(1.0, abs=1e-6)
    assert out["loss_at_scale"] == {}


def test_effective_negatives_grow_with_temperature():
    """Wang & Liu 2021: the entropy over negatives can only grow with the temperature (falls with the scale)."""
    a, p, n = _random(64, 8, 0), _random(64, 8, 1), _random(64, 8, 2)
    values = [
        in_batch_statistics(a, p, batch_size=16, scale=s, negatives=[n])["effective_negatives"] for s in (0, 5, 20, 50)
    ]
    assert values[0] == pytest.approx(31.0) and all(x > y for x, y in zip(values, values[1:], strict=False))


def test_tolerance_is_the_mean_cosine_of_gold_similar_pairs():
    e = _random(10, 4, 0)
    gold = np.array([1.0] * 5 + [0.0] * 5)
    metrics, _ = concentration_statistics(e, e, gold, n_random_pairs=10)  # identical pairs: cosine 1
    assert metrics["sim_tolerance"] == pytest.approx(1.0, abs=1e-12)


def test_loss_scales_come_from_the_study_grid(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale")
    assert loss_scales(cfg.stats, cfg.study.search_space, cfg.loss) == [
        0.0,
        1.0,
        2.0,
        5.0,
        10.0,
        15.0,
        20.0,
        30.0,
        50.0,
    ]
    for overrides, scales in [("loss.scale=7", [7.0]), ("+stats.loss_scales=[1,3]", [1.0, 3.0])]:
        one = compose_cfg(overrides)
        assert loss_scales(one.stats, one.study.search_space, one.loss) == scales
    temperatures = compose_cfg("+study.search_space.loss.temperature=[0.05,0.1]")
    assert loss_scales(temperatures.stats, temperatures.study.search_space, temperatures.loss) == [10.0, 20.0]


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("+stats.loss_scales=[1,-2]", "stats.loss_scales"),
        ("stats.paired.resamples=0", "stats.paired.resamples"),
        ("stats.paired.level=1.5", "stats.paired.level"),
    ],
)
def test_bad_statistics_keys_are_refused_naming_the_key(compose_cfg, override, key):
    with pytest.raises(ConfigError) as error:
        trial_config(compose_cfg(override))
    assert error.value.key == key and "\n" not in str(error.value)


class StubModel:
    """Stands in for a SentenceTransformer: one random 8-dim embedding per text."""

    def encode(self, texts, batch_size, convert_to_numpy):
        return _random(len(texts), 8, len(texts))


def test_the_statistics_record_how_many_heldout_pairs_they_rest_on():
    """`sim_heldout_pairs` is the number of held-out pairs behind pos/neg: of scored rows, only the positives."""
    heldout = Dataset.from_dict(
        {"sentence1": ["a", "b", "c", "d"], "sentence2": ["e", "f", "g", "h"], "score": [0.9, 0.1, 1.0, 0.5]}
    )
    probe = ConcentrationProbe(STATS, heldout, batch_size=2, scale=20.0, eval_batch_size=8)
    run = Recorder()
    probe.log(
        Encodings(_random(20, 8, 4), _random(20, 8, 5), np.linspace(0, 1, 20), probe.encode_heldout(StubModel())),
        run,
        step=0,
        suffix="_init",
    )
    assert run.metrics["sim_heldout_pairs_init"] == 2
    without = ConcentrationProbe(STATS, None, batch_size=2, scale=20.0, eval_batch_size=8)
    without.log(Encodings(_random(20, 8, 4), _random(20, 8, 5), np.linspace(0, 1, 20), {}), run, step=1)
    assert run.metrics["sim_heldout_pairs"] == 0
