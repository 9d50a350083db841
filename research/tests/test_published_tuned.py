"""The published ``results/mnrl_scale_lr_low/own_best_learning_rate.csv`` (each scale at its own best learning rate
over ``mnrl_scale_lr`` and ``mnrl_scale_lr_low``) is what pandas computes from the two folders' trials directly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sweep.report.results_folder import read_csv
from sweep.report.tuned import tuned_report, write_tuned

RESULTS = Path(__file__).resolve().parents[2] / "research" / "results"
REAL = [RESULTS / "mnrl_scale_lr", RESULTS / "mnrl_scale_lr_low"]


def test_the_published_table_is_what_pandas_computes_from_the_trials(tmp_path):
    """Each scale's best learning rate, the means and best - this with its simultaneous interval, on both splits,
    from the two folders' trials.csv directly (the interval: Tukey's studentised range over the scales with the
    two-way ANOVA's residual mean square, which the verdict engine draws by Monte Carlo: each within 5%, their mean
    within 2%); and the committed own_best_learning_rate.csv is this table."""
    report = tuned_report(REAL, "trial.learning_rate")
    table = report.numbers.set_index("scale")
    trials = pd.concat([pd.read_csv(folder / "trials.csv") for folder in REAL])
    assert (trials["state"] == "COMPLETE").all()
    cells = trials.groupby(["loss.scale", "trial.learning_rate"])["stsb_validation_spearman"].mean()
    best_lr = cells.groupby(level=0).idxmax().map(lambda key: key[1])
    assert best_lr.to_dict() == table["best learning rate"].to_dict()  # scale 0: three ties, the first taken
    assert table.loc[0.0, "place of best learning rate"] == "all tied"
    chosen = trials.merge(best_lr.rename("trial.learning_rate").reset_index(), on=["loss.scale", "trial.learning_rate"])
    for split in ("validation", "test"):
        wide = chosen.pivot(index="trial.seed", columns="loss.scale", values=f"stsb_{split}_spearman")
        best = wide.mean().idxmax() if split == "validation" else table.index[table["verdict on test"] == "best"][0]
        assert best == 15.0
        gaps = wide[best].to_numpy()[:, None] - wide.to_numpy()
        values = wide.to_numpy()
        residual = values - values.mean(0) - values.mean(1, keepdims=True) + values.mean()
        df = (values.shape[0] - 1) * (values.shape[1] - 1)
        half = stats.studentized_range.ppf(0.95, values.shape[1], df) * np.sqrt((residual**2).sum() / df / len(wide))
        np.testing.assert_allclose(table[f"{split} mean"], wide.mean().to_numpy())
        np.testing.assert_allclose(table[f"best - this on {split}"], gaps.mean(axis=0), atol=1e-12)
        others = table.index != best
        widths = (table.loc[others, f"{split} CI high"] - table.loc[others, f"{split} CI low"]) / 2
        np.testing.assert_allclose(widths, half, rtol=0.05)  # each pair's spread from 4,000 draws
        assert abs(widths.mean() / half - 1) < 0.02
        centres = (table.loc[others, f"{split} CI high"] + table.loc[others, f"{split} CI low"]) / 2
        np.testing.assert_allclose(centres, gaps.mean(axis=0)[others], atol=1e-12)
    assert table["n seeds"].eq(3).all()
    committed = RESULTS / "mnrl_scale_lr_low" / "own_best_learning_rate.csv"
    (written, _) = write_tuned(report, tmp_path, "trial.learning_rate")
    pd.testing.assert_frame_equal(read_csv(written), read_csv(committed))
    assert (committed.with_suffix(".md")).read_text().splitlines()[0] == report.answer
