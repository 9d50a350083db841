"""The generated findings block of a results README: what it says from the tables, and that rewriting it keeps the
prose around it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sweep.report.findings import END, START, findings_block, generated_block, write_findings


def spearman() -> pd.DataFrame:
    rows = [(0.0, "validation", 3, 0.60, 0.60, 0.60)]
    for scale, mean in ((1.0, 0.55), (10.0, 0.74), (20.0, 0.73)):
        rows += [
            (scale, "validation", 3, mean, mean - 0.01, mean + 0.01),
            (scale, "test", 3, mean - 0.1, *(2 * [None])),
        ]
    return pd.DataFrame(rows, columns=["scale", "split", "n", "mean", "ci_low", "ci_high"])


def paired(default_tied: bool) -> pd.DataFrame:
    """A paired_comparison.csv of one condition as `paired_table` writes it (`PairedComparison` columns)."""
    return pd.DataFrame(
        {
            "condition": [None] * 3,
            "scale": [1.0, 10.0, 20.0],
            "spearman": [0.55, 0.74, 0.73],
            "diff_to_best": [0.19, 0.0, 0.01],
            "ci_low": [0.15, 0.0, -0.002 if default_tied else 0.004],
            "ci_high": [0.22, 0.0, 0.02],
            "p_best": [0.0, 0.8 if default_tied else 1.0, 0.2 if default_tied else 0.0],
            "in_confidence_set": [False, True, default_tied],
            "verdict": ["worse", "best", "not distinguishable" if default_tied else "worse"],
            "best": [False, True, False],
            "indistinguishable": [False, True, default_tied],
            "not_scoreable": "",
            "n_pairs": 1500,
            "n_seeds": 3,
            "n_resamples": 1000,
            "level": 0.95,
            "margin": 0.01,
            "correction": "max-t bootstrap over all 3 pairs of scales",
        }
    )


def test_the_block_names_the_best_the_confidence_set_the_default_and_the_untrained_model() -> None:
    block = findings_block(spearman(), paired(default_tied=False), pd.DataFrame(), default=20.0)
    assert block.startswith(START) and block.endswith(END)
    assert "- best scale 10 (0.740); worse: 1, 20 (3 seeds x 1,500 pairs, 95%)\n" in block
    assert (
        "  - 95% confidence set for the best: 10 (P(best) 1.00); method: 3 seeds x 1,500 pairs, 1,000 pair "
        "resamples; max-t bootstrap over all 3 pairs of scales\n"
    ) in block
    assert "- library default scale 20 (temperature 0.05): 0.730, 0.010 below the best [0.004, 0.020]: worse" in block
    assert "- untrained model (scale 0): validation 0.600" in block
    assert "| 10 | 0.740 [0.730, 0.750] | 0.640 | | best | 1.000 |" in block
    assert "| 20 | 0.730 [0.720, 0.740] | 0.630 | 0.010 [0.004, 0.020] | worse | 0.000 |" in block
    assert "| 0 |" not in block  # the untrained model is a line of its own, not a row of the scale table
    tied = findings_block(spearman(), paired(default_tied=True), pd.DataFrame(), default=20.0)
    assert "- best scale 10 (0.740); cannot tell apart: 20; worse: 1 (3 seeds x 1,500 pairs, 95%)" in tied
    assert "95% confidence set for the best: 10 (P(best) 0.80), 20 (0.20); " in tied
    assert "0.010 below the best [-0.002, 0.020]: not distinguishable" in tied
    assert "| 0.010 [-0.002, 0.020] | not distinguishable, in the confidence set | 0.200 |" in tied


def test_the_wall_time_is_the_sum_of_the_trials() -> None:
    block = findings_block(spearman(), pd.DataFrame(), pd.DataFrame(), 20.0, pd.Series([30.0, 90.0, None]))
    assert "Wall time: 2 trials, 2.0 minutes of training and evaluation in all" in block


def test_the_concentration_lines_show_the_band_width_the_claim_rests_on() -> None:
    rows = [
        (scale, "rand", stage, 3, mean, mean - half, mean + half)
        for scale, stage, mean, half in (
            (1.0, "init", 0.46, 0.3),
            (1.0, "final", 0.10, 0.6),
            (10.0, "final", 0.02, 0.2),
            (50.0, "final", 0.35, 0.4),
        )
    ]
    table = pd.DataFrame(rows, columns=["scale", "kind", "stage", "n", "mean", "q05", "q95"])
    block = findings_block(spearman(), pd.DataFrame(), table, default=20.0)
    assert "- mean cosine of random STSB pairs: 0.460 untrained, lowest 0.020 at scale 10" in block
    assert (
        "- width of the random-pair cosine band (q95 - q05): 0.600 untrained, narrowest 0.400 at scale 10, "
        "widest 1.200 at scale 1"
    ) in block


def test_rewriting_the_block_keeps_the_prose(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# study\n\nprose before\n\n{START}\nold numbers\n{END}\n\nprose after\n")
    block = findings_block(spearman(), paired(default_tied=False), pd.DataFrame(), default=20.0)
    write_findings(readme, block, "study")
    text = readme.read_text()
    assert "old numbers" not in text and generated_block(text) == block
    assert text.startswith("# study\n\nprose before\n\n") and text.endswith(f"{END}\n\nprose after\n")
    fresh = write_findings(tmp_path / "new" / "README.md", block, "new")
    assert fresh.read_text() == f"# new\n\n{block}\n"


def test_without_a_paired_table_the_block_says_so() -> None:
    """One seed, or trials that logged no predictions: the table has no verdict and the block says why."""
    block = findings_block(spearman(), pd.DataFrame(), pd.DataFrame(), default=20.0)
    assert "\n| 10 | 0.740 [0.730, 0.750] | 0.640 |  | |  |\n" in block  # the header's six columns
    assert "- no paired comparison" in block


def test_a_collapsed_scale_is_named_not_scoreable_and_never_the_best() -> None:
    """A scale whose model collapsed has no Spearman in the paired table (`paired_bootstrap`): its row says so, the
    library default there gets no gap line, and a condition where every scale collapsed has no best (before, the
    block raised IndexError looking for the best row)."""
    collapsed = paired(default_tied=False).assign(
        spearman=[0.55, 0.74, np.nan],
        diff_to_best=[0.19, 0.0, np.nan],
        ci_low=[0.15, 0.0, np.nan],
        ci_high=[0.22, 0.0, np.nan],
        verdict=["worse", "best", ""],
        not_scoreable=["", "", "collapsed with seed #0: cosine std 0.0e+00 < 0.0001"],
    )
    block = findings_block(spearman(), collapsed, pd.DataFrame(), default=20.0)
    assert "| 20 | 0.730 [0.720, 0.740] | 0.630 | | not scoreable (collapsed) | |" in block
    assert "; not scoreable (collapsed: cosine std < 0.0001 with some seed): 20" in block
    assert "- best scale 10 (0.740)" in block and "library default" not in block
    none = collapsed.assign(spearman=np.nan, best=False, indistinguishable=False, not_scoreable="collapsed")
    block = findings_block(spearman(), none, pd.DataFrame(), default=20.0)
    assert (
        "- no best scale: none is scoreable; not scoreable (collapsed: cosine std < 0.0001 with some seed): 1, 10, 20"
        in block
    )
