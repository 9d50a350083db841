"""``predictions.npz`` (`sweep.report.predictions_file`): what it keeps of the cosines gives the same statistics, byte
for byte, as the cosines themselves, ties and a collapsed trial included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from sweep.report.folder_comparison import folder_comparison
from sweep.report.paired_table import write_paired_comparison
from sweep.report.predictions_file import (
    LEGACY_PREDICTIONS_CSV,
    PREDICTIONS_FILE,
    read_predictions,
    write_predictions,
)
from sweep.report.results_folder import load_results_folder
from sweep.stats.bootstrap import paired_bootstrap

SCALES, SEEDS, PAIRS = (1.0, 10.0, 20.0), (0, 1, 2), {"validation": 300, "test": 200}
COLLAPSED = (20.0, 1)  # this trial's cosines have no spread: the check names its std and mean


def simulated_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials.csv, the long predictions table) of 3 scales x 3 seeds: gold and cosines rounded so that many tie,
    scale 1 worse, seed 0's cosines to 4 decimals (more than 255 distinct), one trial of scale 20 collapsed (cosines
    about 0.9 +- 1e-5, written as the logger writes them)."""
    rng = np.random.default_rng(0)
    trials, parts = [], []
    for number, (scale, seed) in enumerate((s, k) for s in SCALES for k in SEEDS):
        trials.append({"trial_number": number, "state": "COMPLETE", "loss.scale": scale, "trial.seed": seed})
        for split, pairs in PAIRS.items():
            gold = np.round(np.random.default_rng(len(split)).uniform(0, 5, pairs), 1)  # 51 values: ties
            noise = rng.normal(0, 2.0 if scale == 1.0 else 1.0, pairs)
            cosine = np.round((gold + noise) / 10, 4 if seed == 0 else 2)  # seeds 1, 2: ties within a trial
            if (scale, seed) == COLLAPSED:
                cosine = 0.9 + rng.normal(0, 1e-5, pairs)
            cosine = np.array([float(f"{c:.7g}") for c in cosine])
            parts.append(pd.DataFrame({"trial_number": number, "split": split, "gold": gold, "cosine": cosine}))
    return pd.DataFrame(trials), pd.concat(parts, ignore_index=True)


def arrays(fetch, table: pd.DataFrame, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gold, shipped values (scales, seeds, pairs), cosines (scales, seeds, pairs)) of one split."""
    rows = table[table["split"] == split]
    numbers = [[s * len(SEEDS) + k for k in range(len(SEEDS))] for s in range(len(SCALES))]
    shipped = np.array([[fetch(str(n), split)["cosine"].to_numpy() for n in row] for row in numbers])
    cosines = np.array([[rows[rows["trial_number"] == n]["cosine"].to_numpy() for n in row] for row in numbers])
    return rows[rows["trial_number"] == 0]["gold"].to_numpy(), shipped, cosines


def test_the_file_keeps_every_ranking_tie_and_the_collapsed_cosines(tmp_path: Path) -> None:
    _, table = simulated_study()
    write_predictions(table, tmp_path / PREDICTIONS_FILE)
    fetch = read_predictions(tmp_path)
    assert fetch is not None and fetch("99", "validation") is None
    for split in PAIRS:
        gold, shipped, cosines = arrays(fetch, table, split)
        assert np.array_equal(fetch("0", split)["gold"].to_numpy(), gold)
        assert all(len(np.unique(row)) < PAIRS[split] for row in cosines[:2, 1:].reshape(4, -1))  # cosines tie
        assert np.array_equal(rankdata(shipped, axis=-1), rankdata(cosines, axis=-1))  # the same order and ties
        assert (shipped[:2] != cosines[:2]).any()  # ranks, not cosines
        collapsed = SCALES.index(COLLAPSED[0]), SEEDS.index(COLLAPSED[1])
        assert np.array_equal(shipped[collapsed], cosines[collapsed])  # as logged: the check reads these
    archive = np.load(tmp_path / PREDICTIONS_FILE)
    assert archive["validation.rank_bytes"].shape == (2, 9, 300)  # dense ranks past 255: two byte planes
    assert archive["validation.collapsed"].tolist() == [7] and archive["validation.cosine"].shape == (1, 300)


def test_the_paired_statistics_are_the_same_from_the_file_as_from_the_cosines(tmp_path: Path) -> None:
    _, table = simulated_study()
    write_predictions(table, tmp_path / PREDICTIONS_FILE)
    fetch = read_predictions(tmp_path)
    for split in PAIRS:
        gold, shipped, cosines = arrays(fetch, table, split)
        ours, theirs = (paired_bootstrap(gold, p, list(SCALES), n_resamples=50, seed=3) for p in (shipped, cosines))
        pd.testing.assert_frame_equal(ours.table, theirs.table, check_exact=True)
        assert ours.line() == theirs.line() and ours.detail() == theirs.detail()
        reason = ours.table.set_index("scale").loc[COLLAPSED[0], "not_scoreable"]
        assert reason.startswith("collapsed with seed #1: cosine std ") and "every pair scores about 0.9000" in reason


def test_a_folder_recomputes_the_same_comparison_from_the_file_as_from_the_old_text(tmp_path: Path) -> None:
    """A folder shipping ``predictions.csv.gz`` (the format before) and the same folder converted by a redraw give
    the same paired_comparison.csv and .md, byte for byte."""
    trials, table = simulated_study()
    legacy, converted = tmp_path / "legacy", tmp_path / "converted"
    legacy.mkdir()
    trials.to_csv(legacy / "trials.csv", index=False)
    table.to_csv(legacy / LEGACY_PREDICTIONS_CSV, index=False, float_format="%.7g")
    copied = load_results_folder(legacy).copy_sources(converted)
    assert converted / PREDICTIONS_FILE in copied and not (converted / LEGACY_PREDICTIONS_CSV).exists()
    written = {}
    for folder in (legacy, converted):
        validation, test, lines = folder_comparison(load_results_folder(folder), n_resamples=40)
        paths = write_paired_comparison(validation, lines, tmp_path / f"out_{folder.name}", test)
        written[folder.name] = {path.name: path.read_bytes() for path in paths}
    assert written["legacy"] == written["converted"] and "paired_comparison.md" in written["legacy"]
    assert b"not scoreable (collapsed" in written["converted"]["paired_comparison.md"]


def test_the_same_predictions_give_the_same_bytes_and_one_gold_per_split(tmp_path: Path) -> None:
    _, table = simulated_study()
    first, second = write_predictions(table, tmp_path / "a.npz"), write_predictions(table, tmp_path / "b.npz")
    assert first.read_bytes() == second.read_bytes()  # a rewrite leaves git nothing to commit
    other = table.copy()
    other.loc[(other["trial_number"] == 4) & (other["split"] == "test"), "gold"] += 1.0
    with pytest.raises(ValueError, match="test: trial 4's pairs differ from trial 0's"):
        write_predictions(other, tmp_path / "c.npz")
