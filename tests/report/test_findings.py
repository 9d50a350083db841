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
    return pd.DataFrame(
        {
            "condition": [None] * 3,
            "scale": [1.0, 10.0, 20.0],
            "spearman": [0.55, 0.74, 0.73],
            "diff_to_best": [0.19, 0.0, 0.01],
            "ci_low": [0.15, 0.0, -0.002 if default_tied else 0.004],
            "ci_high": [0.22, 0.0, 0.02],
            "best": [False, True, False],
            "indistinguishable": [False, True, default_tied],
            "n_pairs": 1500,
            "n_seeds": 3,
            "level": 0.95,
        }
    )


def test_the_block_names_the_best_the_ties_the_default_and_the_untrained_model() -> None:
    block = findings_block(spearman(), paired(default_tied=False), pd.DataFrame(), default=20.0)
    assert block.startswith(START) and block.endswith(END)
    assert "- best scale 10 (validation 0.740); not distinguishable from it: none (paired bootstrap, " in block
    assert "1,500 pairs x 3 seeds, 95%)" in block
    assert (
        "- library default scale 20 (temperature 0.05): 0.730, 0.010 below the best [0.004, 0.020]: worse than the best"
        in block
    )
    assert "- untrained model (scale 0): validation 0.600" in block
    assert "| 10 | 0.740 [0.730, 0.750] | 0.640 | (best) | yes |" in block
    assert "| 0 |" not in block  # the untrained model is a line of its own, not a row of the scale table
    tied = findings_block(spearman(), paired(default_tied=True), pd.DataFrame(), default=20.0)
    assert (
        "not distinguishable from it: 20 " in tied
        and "0.010 below the best [-0.002, 0.020]: not distinguishable" in tied
    )


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
    assert "\n| 10 | 0.740 [0.730, 0.750] | 0.640 |  |  |\n" in block  # the header's five columns
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
        not_scoreable=["", "", "collapsed with seed #0: cosine std 0.0e+00 < 0.0001"],
    )
    block = findings_block(spearman(), collapsed, pd.DataFrame(), default=20.0)
    assert "| 20 | 0.730 [0.720, 0.740] | 0.630 | not scoreable (collapsed) | no |" in block
    assert "- not scoreable, left out of the comparison (collapsed): 20" in block
    assert "- best scale 10 (validation 0.740)" in block and "library default" not in block
    none = collapsed.assign(spearman=np.nan, best=False, indistinguishable=False)
    block = findings_block(spearman(), none, pd.DataFrame(), default=20.0)
    assert (
        "- no best scale: none is scoreable\n- not scoreable, left out of the comparison (collapsed): 1, 10, 20"
        in block
    )
