"""The objective's own comparison (an extra set's metric, one number per trial) and its confirmation on the set's
test counterpart, from a trials frame whose truth is set by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sweep.report.objective_table import objective_comparison, on_test_split, write_objective_comparison

OBJECTIVE = "caps_val_ndcg_at_10"


def trials(test_best: float) -> pd.DataFrame:
    """Scales 5, 10, 50 x 3 seeds: 10 best on validation by a clear margin, 50 far worse; on test the best is
    ``test_best``."""
    rng = np.random.default_rng(0)
    rows = []
    for scale, value in ((5.0, 0.50), (10.0, 0.56), (50.0, 0.30)):
        for seed in range(3):
            shared = rng.normal(0, 0.003)
            rows.append(
                {
                    "run_id": f"{scale}-{seed}",
                    "trial_number": len(rows),
                    "state": "COMPLETE",
                    "param.loss.scale": scale,
                    "param.trial.seed": float(seed),
                    "param.study.search_space.loss.scale": "[5, 10, 50]",
                    "param.eval.objective": OBJECTIVE,
                    OBJECTIVE: value + shared,
                    on_test_split(OBJECTIVE): (0.6 if scale == test_best else value - 0.1) + shared,
                }
            )
    return pd.DataFrame(rows)


def test_the_objective_is_compared_by_seed_and_test_confirms_the_choice(tmp_path: Path) -> None:
    table, lines = objective_comparison(trials(test_best=10.0))
    validation = table[table["metric"] == OBJECTIVE].set_index("scale")
    assert validation.loc[10.0, "verdict"] == "best" and validation.loc[50.0, "verdict"] == "worse"
    assert lines[0].startswith(f"{OBJECTIVE}: best scale 10 (0.560); ")
    assert lines[1].startswith("  95% confidence set for the best: 10 (P(best) ")  # the detail, under the answer
    assert lines[2].startswith("caps_test_ndcg_at_10: test confirms scale 10 chosen on validation (best on test")
    written = write_objective_comparison(table, lines, tmp_path)
    assert [p.name for p in written] == ["objective_comparison.csv", "objective_comparison.md"]
    assert (
        (tmp_path / "objective_comparison.md")
        .read_text()
        .startswith(f"- {lines[0]}\n  - {lines[1].strip()}\n- {lines[2]}\n")
    )


def test_test_does_not_confirm_when_another_scale_wins_there_clearly() -> None:
    _, lines = objective_comparison(trials(test_best=50.0))
    assert lines[2].startswith("caps_test_ndcg_at_10: test does not confirm scale 10 chosen on validation (worse")


def test_the_stsb_objective_has_no_table_of_its_own() -> None:
    table, lines = objective_comparison(trials(10.0).assign(**{"param.eval.objective": "full"}))
    assert table.empty and lines == []


def test_the_gap_figure_says_whether_the_steps_were_fixed_across_conditions() -> None:
    """Issue 51: a data-size figure at a fixed step count did not say so (more data there only means fewer repeats)."""
    from sweep.report.objective_table import run_length

    fixed = trials(10.0).assign(**{"param.trial.max_steps": 468})
    assert run_length(fixed) == "468 steps at every value (fixed)"
    assert run_length(trials(10.0)) == "one pass at each value (steps vary)"
