"""Contrasts between scales paired over seeds (`sweep.report.forest.seed_contrasts`) on simulated trials whose truth
is known, and the forest plot that draws them (`write_forest`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from sweep.report import forest
from sweep.report.forest import BEST, seed_contrasts, write_forest

TRUTH = {5.0: 0.70, 10.0: 0.76, 15.0: 0.765, 20.0: 0.75, 50.0: 0.60}  # the mean test score of each scale
CONTRASTS = ((BEST, 20.0), (10.0, 20.0), (15.0, 20.0))


def trials(
    rng: np.random.Generator, seeds: int = 3, noise: float = 0.004, rates: tuple[float, ...] = ()
) -> pd.DataFrame:
    """COMPLETE trials at every scale and seed (and learning rate), each seed's luck shared by all its trials (what
    pairing removes), an untrained scale-0 arm, validation a shifted copy of test. At the rate 0.01 every scale
    scores 0.05 lower, except 50, which is best there on validation only."""
    rows = []
    for seed in range(seeds):
        luck = rng.normal(0, 0.03)
        rows.append({"state": "COMPLETE", "loss.scale": 0.0, "trial.seed": seed, "val": 0.9, "test": 0.9})
        for rate in rates or (None,):
            for scale, mean in TRUTH.items():
                low = rate == 0.01
                test = mean + luck + rng.normal(0, noise) - (0.05 if low else 0.0)
                val = test + 0.1 + (0.5 if low and scale == 50.0 else 0.0)
                rows.append(
                    {"state": "COMPLETE", "loss.scale": scale, "trial.seed": seed, "val": val, "test": test}
                    | ({"trial.learning_rate": rate} if rate is not None else {})
                )
    return pd.DataFrame(rows)


def test_the_contrasts_are_paired_over_seeds_and_cover_the_truth() -> None:
    rng = np.random.default_rng(0)
    draws, covered = 400, 0
    for _ in range(draws):
        table = seed_contrasts(trials(rng), "val", "test", CONTRASTS).set_index("contrast")
        truth = {"best - 20": TRUTH[15.0] - TRUTH[20.0], "10 - 20": 0.01, "15 - 20": 0.015}
        covered += all(
            table.loc[c, "ci_low"] <= t <= table.loc[c, "ci_high"] for c, t in truth.items() if c != "best - 20"
        )
    assert covered / draws >= 0.88  # two 95% intervals at once: at least 90% up to simulation error
    exact = seed_contrasts(trials(np.random.default_rng(1), noise=0.0), "val", "test", CONTRASTS).set_index("contrast")
    assert exact.loc["10 - 20", "mean"] == pytest.approx(0.01) and exact.loc["10 - 20", "ci_high"] == pytest.approx(
        exact.loc["10 - 20", "ci_low"]
    )  # the seeds' shared luck is gone: no spread left


def test_the_best_is_chosen_on_validation_and_the_untrained_arm_is_no_candidate() -> None:
    table = seed_contrasts(trials(np.random.default_rng(2), noise=0.0), "val", "test", CONTRASTS)
    best = table[table["contrast"] == "best - 20"].iloc[0]
    assert best["a"] == 15.0 and (table["a"] != 0.0).all() and (table["n"] == 3).all()


def test_a_swept_rate_is_chosen_per_scale_or_per_condition_on_validation() -> None:
    frame = trials(np.random.default_rng(3), noise=0.0, rates=(0.003, 0.01))
    own = seed_contrasts(frame, "val", "test", [(BEST, 20.0), (50.0, 20.0)], "trial.learning_rate", "scale")
    own = own.set_index("contrast")
    assert own.loc["best - 20", "a"] == 50.0 and own.loc["50 - 20", "a_value"] == 0.01  # 50 is best at 0.01
    assert own.loc["50 - 20", "b_value"] == 0.003
    shared = seed_contrasts(frame, "val", "test", [(BEST, 20.0)], "trial.learning_rate", "condition").iloc[0]
    assert shared["a_value"] == shared["b_value"] == 0.01  # the best cell's rate, for every scale
    with pytest.raises(ValueError, match="per"):
        seed_contrasts(frame, "val", "test", CONTRASTS, "trial.learning_rate", "seed")


def test_missing_scales_give_no_contrast_and_one_seed_no_interval() -> None:
    frame = trials(np.random.default_rng(4), seeds=1)
    table = seed_contrasts(frame[frame["loss.scale"] != 15.0], "val", "test", CONTRASTS)
    assert list(table["contrast"]) == ["best - 20", "10 - 20"]
    assert table["ci_low"].isna().all() and (table["n"] == 1).all()


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Figure]:
    figures: dict[str, Figure] = {}
    original = forest._save_small
    monkeypatch.setattr(
        forest, "_save_small", lambda fig, png: figures.setdefault("forest", fig) and original(fig, png)
    )
    return figures


def rows(n_rows: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    out = []
    for i in range(n_rows):
        for contrast, a in (("best - 20", 10.0 if i % 4 else 20.0), ("10 - 20", 10.0), ("15 - 20", 15.0)):
            if contrast == "15 - 20" and i % 3 == 0:
                continue  # 15 not run in this study
            n = 1 if i == 5 else 3
            mean = 0.0 if a == 20.0 else rng.normal(0.01, 0.01)
            half = np.nan if n == 1 else 0.005
            out.append(
                {"row": f"study {i}\nset-up words; rate tuned; n={n}; test: STSB", "group": f"model {i // 10}"}
                | {"contrast": contrast, "n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half}
                | {"a": a, "b": 20.0}
            )
    return pd.DataFrame(out)


def test_the_forest_draws_one_panel_per_contrast_with_the_margin_and_stays_page_sized(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    table = rows()
    written = write_forest(table, tmp_path, "forest", margin=0.01, title="t")
    assert [p.name for p in written] == ["forest.png", "forest.csv"]
    assert written[0].stat().st_size <= 150_000, "a page's figure"
    pd.testing.assert_frame_equal(pd.read_csv(written[1]), table, check_dtype=False)
    axes = captured["forest"].axes
    assert [ax.get_title() for ax in axes] == ["best - 20", "10 - 20", "15 - 20"]
    for ax in axes:
        (band,) = ax.patches
        corners = ax.transData.inverted().transform(band.get_window_extent().get_points())
        assert sorted(corners[:, 0]) == pytest.approx([-0.01, 0.01])
    labels = axes[0].get_legend_handles_labels()[1]
    assert "one seed: no interval" in labels and "the best scale is the reference: nothing to compare" in labels
    assert len(axes[0].get_yticklabels()) == 30
    headers = {t.get_text() for t in axes[0].texts}
    assert headers == {"model 0", "model 1", "model 2"}


def test_rows_without_the_columns_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lack"):
        write_forest(rows().drop(columns=["group"]), tmp_path)
    assert write_forest(rows().iloc[:0], tmp_path) == []
