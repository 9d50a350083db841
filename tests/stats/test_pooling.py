"""Pooling scale a vs scale b over conditions, on simulated studies whose truth is known: the pooled interval covers
the true mean gap over conditions, the sign count, the one-condition fallback, and which units are refused as
duplicates (same config and seed; the same values at every scale) and which are not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.stats.pooling import (
    ONE_CONDITION,
    RANDOM_EFFECTS,
    by_condition,
    drop_duplicates,
    paired_differences,
    pool,
)

SCALES = (5.0, 10.0, 20.0)


def study(
    rng: np.random.Generator,
    gaps: list[float],
    n_seeds: int = 3,
    source: str = "study",
    seed_sd: float = 0.02,
    own_sd: float = 0.005,
) -> pd.DataFrame:
    """Tidy rows of one study: condition i has true gap ``gaps[i]`` between scales 10 and 20 (5 sits 0.05 below
    20); each seed adds an effect shared by its trials, each trial its own noise; every condition its own config."""
    rows = []
    for index, gap in enumerate(gaps):
        truth = {5.0: 0.65, 10.0: 0.70 + gap, 20.0: 0.70}
        for seed in range(n_seeds):
            shared = rng.normal(0, seed_sd)
            for scale in SCALES:
                value = truth[scale] + shared + rng.normal(0, own_sd)
                rows.append({"source": source, "condition": f"c={index}", "seed": float(seed), "scale": scale})
                rows[-1] |= {"value": value, "config": f"{source};c={index}"}
    return pd.DataFrame(rows)


def test_the_pooled_interval_covers_the_mean_gap_over_conditions():
    rng = np.random.default_rng(0)
    covered, beats = [], []
    for _ in range(300):
        gaps = list(0.01 + rng.normal(0, 0.006, 5))  # conditions drawn around a pooled gap of 0.01
        result = pool(paired_differences(study(rng, gaps), 10.0, 20.0))
        assert (result.method, result.n_conditions, result.n_pairs) == (RANDOM_EFFECTS, 5, 15)
        covered.append(result.ci_low <= 0.01 <= result.ci_high)
        beats.append(result.n_a_beats_b)
    assert 0.91 <= np.mean(covered) <= 0.99  # 95% +- 3 standard errors of 300 draws
    assert np.mean(beats) > 10  # 10 beats 20 in most seed pairs


def test_one_condition_falls_back_to_its_seed_pairs():
    frame = study(np.random.default_rng(1), [0.02], n_seeds=4)
    result = pool(paired_differences(frame, 10.0, 20.0))
    assert result.method == ONE_CONDITION and result.n_pairs == 4
    assert result.ci_low < result.mean < result.ci_high


def test_the_per_condition_table_counts_the_pairs_a_wins():
    rows = [
        (seed, scale, value)
        for seed, (a, b) in enumerate([(0.7, 0.6), (0.7, 0.8), (0.7, 0.65)])
        for scale, value in ((10.0, a), (20.0, b))
    ]
    frame = pd.DataFrame(rows, columns=["seed", "scale", "value"]).assign(source="s", condition="", config="x")
    table = by_condition(paired_differences(frame, 10.0, 20.0))
    assert table[["n_pairs", "n_a_beats_b"]].iloc[0].tolist() == [3, 2]
    assert table["mean"].iloc[0] == pytest.approx((0.1 - 0.1 + 0.05) / 3)


def test_a_rerun_with_the_same_config_and_seed_is_dropped_and_named():
    rng = np.random.default_rng(2)
    first = study(rng, [0.01, 0.02], source="first")
    rerun = first.assign(source="rerun")  # the same trials (same configs), published twice
    kept, dropped = drop_duplicates(pd.concat([first, rerun], ignore_index=True))
    assert kept.equals(first)
    assert {(d.source, d.condition, d.kept_source, d.kept_condition, d.reason) for d in dropped} == {
        ("rerun", "c=0", "first", "c=0", "same config"),
        ("rerun", "c=1", "first", "c=1", "same config"),
    }
    assert sorted(d.seed for d in dropped) == [0, 0, 1, 1, 2, 2]
    noisier = rerun.assign(value=first["value"] + 0.01)  # the same config and seed: one run, whatever its values
    _, dropped = drop_duplicates(pd.concat([first, noisier], ignore_index=True))
    assert {d.reason for d in dropped} == {"same config"} and len(dropped) == 6


def test_values_within_the_tolerance_are_one_run_and_other_seeds_or_values_are_not():
    rng = np.random.default_rng(3)
    first = study(rng, [0.01], source="first")
    identical = first.assign(source="other", config="other")  # another config (a key that does not matter)
    _, dropped = drop_duplicates(pd.concat([first, identical], ignore_index=True))
    assert [d.reason for d in dropped] == ["bit-identical values"] * 3
    rounding = identical.assign(value=first["value"] + 3e-6)
    _, dropped = drop_duplicates(pd.concat([first, rounding], ignore_index=True))
    assert [d.reason for d in dropped] == ["values within 0.0001"] * 3
    _, dropped = drop_duplicates(pd.concat([first, rounding], ignore_index=True), tolerance=0)
    assert dropped == []  # tolerance 0: only bit-identical values
    shifted_seeds = first.assign(source="other", config="other", seed=first["seed"] + 3)
    replication = study(rng, [0.01], source="replication")  # same design, new noise
    frame = pd.concat([first, shifted_seeds, replication.assign(config=first["config"] + "-new")], ignore_index=True)
    kept, dropped = drop_duplicates(frame)
    assert dropped == [] and len(kept) == len(frame)
