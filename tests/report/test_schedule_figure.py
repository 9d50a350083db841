"""schedule_arms: each arm's Spearman with its t-interval over seeds and the scale it trains at per step (the
schedule's formula), only for a study that swept `loss.scale_schedule.spec`."""

from __future__ import annotations

import math

import pandas as pd

from sweep.report.schedule_figures import write_schedule_arms


def trials(arms: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "state": "COMPLETE",
                "param.loss.scale_schedule.spec": arm,
                "trial.seed": seed,
                "stsb_validation_spearman": 0.7 + 0.01 * i + 0.001 * seed,
                "stsb_test_spearman": 0.6 + 0.01 * i,
            }
            for i, arm in enumerate(arms)
            for seed in range(3)
        ]
    )


def test_arms_get_their_spearman_interval_and_their_scale_per_step(tmp_path):
    written = write_schedule_arms(trials(["constant 10", "linear 5-50"]), 12, tmp_path, {"validation": 0.65})
    assert {p.suffix for p in written} == {".png", ".csv"}  # one image format
    data = pd.read_csv(tmp_path / "schedule_arms.csv")
    spearman = data[data["panel"] == "spearman"].set_index(["arm", "split"])
    assert spearman.loc[("linear 5-50", "validation"), "n"] == 3
    assert math.isclose(spearman.loc[("linear 5-50", "validation"), "mean"], 0.711)
    ramp = data[(data["panel"] == "scale") & (data["arm"] == "linear 5-50")].sort_values("step")
    # the temperature moves linearly from 1/5 at the first of 12 steps to 1/50 at the last
    assert len(ramp) == 12 and math.isclose(ramp["scale"].iloc[0], 5) and math.isclose(ramp["scale"].iloc[-1], 50)
    expected = [1 / (0.2 + (0.02 - 0.2) * t / 11) for t in range(12)]
    assert all(math.isclose(a, b) for a, b in zip(ramp["scale"], expected, strict=True))
    assert set(data.loc[(data["panel"] == "scale") & (data["arm"] == "constant 10"), "scale"]) == {10.0}


def test_no_figure_without_two_arms_or_without_steps(tmp_path):
    assert write_schedule_arms(trials(["constant 10"]), 12, tmp_path) == []
    assert write_schedule_arms(trials(["constant 10", "cosine 5-50"]), None, tmp_path) == []
    assert not list(tmp_path.iterdir())
