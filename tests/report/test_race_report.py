"""A raced study's report (`study.race`): the points the race dropped keep their own seeds, and the tables say so."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sweep.report.findings import findings_block
from sweep.report.paired_table import paired_comparisons
from sweep.report.summaries import spearman_summary

# scale 1 dropped after 2 seeds; 10 and 20 raced to the third
RUNS = [(1.0, 0, 2.0), (1.0, 1, 2.0), *((scale, seed, np.nan) for scale in (10.0, 20.0) for seed in (0, 1, 2))]


def raced_study() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The trials frame `load_trials` gives for the race above, and each trial's STSB validation predictions."""
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 300)
    noise = {1.0: 3.0, 10.0: 1.0, 20.0: 1.02}
    predictions, rows = {}, []
    for number, (scale, seed, dropped) in enumerate(RUNS):
        cosine = gold + np.random.default_rng(seed).normal(0, 1, 300) + rng.normal(0, noise[scale], 300)
        predictions[str(number)] = pd.DataFrame({"gold": gold, "cosine": cosine})
        rows.append(
            {
                "run_id": str(number),
                "trial_number": number,
                "state": "COMPLETE",
                "param.loss.scale": scale,
                "param.trial.seed": float(seed),
                "param.study.search_space.loss.scale": "[1, 10, 20]",
                "stsb_validation_spearman": pd.Series(cosine).corr(pd.Series(gold), method="spearman"),
                "eliminated_after": dropped,
            }
        )
    return pd.DataFrame(rows), predictions


def test_a_dropped_point_keeps_its_own_seeds_and_is_named_eliminated_not_compared():
    trials, predictions = raced_study()
    table, (line, _) = paired_comparisons(trials, None, fetch=lambda run, split: predictions[run], n_resamples=200)
    rows = table.set_index("scale")
    assert rows.loc[1.0, "verdict"] == "eliminated after 2 seeds" and rows.loc[1.0, "n_seeds"] == 2
    assert pd.isna(rows.loc[1.0, "diff_to_best"]) and not rows.loc[1.0, "in_confidence_set"]
    assert rows.loc[1.0, "spearman"] == trials[trials["param.loss.scale"] == 1.0]["stsb_validation_spearman"].mean()
    assert list(rows.loc[[10.0, 20.0], "n_seeds"]) == [3, 3], "the survivors compared on all their seeds"
    assert "(3 seeds x 300 pairs, 95%)" in line and line.endswith("; eliminated by the race: after 2 seeds: 1")

    block = findings_block(spearman_summary(trials), table.assign(condition=""), pd.DataFrame(), None)
    scale_one = next(row for row in block.splitlines() if row.startswith("| 1 |"))
    assert "(2 seeds)" in scale_one and "| eliminated after 2 seeds | n/a |" in scale_one
    assert "(3 seeds)" in next(row for row in block.splitlines() if row.startswith("| 10 |"))
    assert "; eliminated by the race: after 2 seeds: 1" in block


def test_an_unraced_study_compares_every_point_on_the_seeds_all_share():
    trials, predictions = raced_study()
    table, _ = paired_comparisons(
        trials.drop(columns="eliminated_after"), None, fetch=lambda run, split: predictions[run], n_resamples=200
    )
    assert set(table["n_seeds"]) == {2} and "eliminated_after" not in table


def test_a_raced_study_is_compared_at_the_level_its_race_spent_over_its_rounds():
    """Trials tagged with their race's 2 rounds (`sweep.race.rounds`): the last round is compared at 1 - 0.05 / 2,
    the level the race decided it at, so the report's set is the race's and its intervals are the wider ones."""
    trials, predictions = raced_study()
    fetch = lambda run, split: predictions[run]  # noqa: E731
    plain, _ = paired_comparisons(trials, None, fetch=fetch, n_resamples=200)
    table, (line, detail) = paired_comparisons(trials.assign(race_rounds=2.0), None, fetch=fetch, n_resamples=200)
    assert set(plain["level"]) == {0.95} and set(table["level"]) == {0.975}
    assert "(3 seeds x 300 pairs, 97.5%)" in line and detail.strip().startswith("97.5% confidence set for the best")
    other = table.loc[~table["best"] & table["n_seeds"].eq(3), "scale"].item()  # the survivor not ranked first
    width, plain_width = ((t["ci_high"] - t["ci_low"]).set_axis(t["scale"])[other] for t in (table, plain))
    assert width > plain_width > 0
