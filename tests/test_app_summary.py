"""The final lines of `python -m sweep`: per-scale means before the per-trial rows, and every answer line saying
which metric it is about (the STSB validation Spearman, or the study's own objective)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from omegaconf import OmegaConf

from sweep.study.summary import objective_lines, per_scale_table
from sweep.study_command import summary

OBJECTIVES = {1.0: [0.30, 0.32, 0.31], 10.0: [0.50, 0.55, 0.52], 20.0: [0.51, 0.54, 0.53]}


def seeded_table(objective_is_stsb: bool) -> pd.DataFrame:
    rows = []
    for scale, values in OBJECTIVES.items():
        for seed, value in enumerate(values):
            stsb = value if objective_is_stsb else 0.7 - value / 10
            rows.append(
                {
                    "trial": len(rows),
                    "trial.seed": seed,
                    "scale": scale,
                    "objective": value,
                    "stsb_val": stsb,
                    "stsb_test": stsb - 0.05,
                    "state": "COMPLETE",
                }
            )
    rows.append({"trial": len(rows), "trial.seed": 0, "scale": 50.0, "state": "FAIL"})
    return pd.DataFrame(rows)


def fake_sweep(objective: str) -> SimpleNamespace:
    cfg = OmegaConf.create(
        {
            "study": {"name": "x", "direction": "maximize", "storage": "sqlite:///x.db"},
            "paths": {"root": "/nonexistent"},
            "trial": {"save_model": "none"},
            "eval": {"objective": objective},
            "stats": {"paired": {"level": 0.95}},
            "tracking": {"uri": "sqlite:///m.db", "experiment_name": "x", "registered_model_name": None},
        }
    )
    return SimpleNamespace(
        cfg=cfg, study=SimpleNamespace(study_name="x"), parent_run_id="p", experiment_id="1", race=None
    )


def test_the_per_scale_means_come_before_the_trials_and_the_best_trial_is_called_a_single_trial():
    text = summary(fake_sweep("full"), seeded_table(objective_is_stsb=True))
    lines = text.splitlines()
    head = lines.index(
        "per scale: STSB validation Spearman, mean over seeds [95% t-interval over seeds; n/a: one seed, no interval]"
    )
    assert lines.index("per trial:") > head + 4  # header and three scales; the failed scale 50 has no mean
    assert lines[head + 1].split() == ["scale", "n_seeds", "mean", "ci_low", "ci_high"]
    assert lines[head + 2].split()[:3] == ["1", "3", "0.3100"]
    assert "best single trial by STSB validation: trial 4 (scale 10.0), validation 0.5500" in text


def test_one_seed_prints_n_a_for_the_interval_and_says_why():
    table = seeded_table(objective_is_stsb=True)
    lines = summary(fake_sweep("full"), table[table["trial.seed"] == 0]).splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("per scale: "))
    assert lines[head].endswith("[95% t-interval over seeds; n/a: one seed, no interval]")
    assert [line.split() for line in lines[head + 2 : lines.index("per trial:")]] == [
        ["1", "1", "0.3000", "n/a", "n/a"],
        ["10", "1", "0.5000", "n/a", "n/a"],
        ["20", "1", "0.5100", "n/a", "n/a"],
    ]


def test_an_objective_other_than_stsb_gets_its_own_answer_line_paired_by_seed():
    table = seeded_table(objective_is_stsb=False)
    text = summary(fake_sweep("retrieval_mrr@10"), table)
    assert "per scale: objective (retrieval_mrr@10), mean over seeds" in text
    (line,) = objective_lines(table, "objective (retrieval_mrr@10)")
    assert line.startswith("objective (retrieval_mrr@10), mean over 3 seeds: best scale 20 (0.527)")
    assert line.endswith("cannot tell apart: 10; worse: 1 (3 seeds, one score per trial, 95%)")


def test_each_condition_gets_its_own_means_and_line():
    table = pd.concat(
        [seeded_table(True).assign(**{"trial.learning_rate": lr}) for lr in (0.01, 0.05)], ignore_index=True
    )
    per_scale = per_scale_table(table, "objective")
    assert sorted(set(per_scale["condition"])) == ["trial.learning_rate=0.01", "trial.learning_rate=0.05"]
    lines = objective_lines(table, "objective (x)")
    assert [line.split(":")[0] for line in lines] == ["trial.learning_rate=0.01", "trial.learning_rate=0.05"]


def test_a_raced_objective_line_compares_the_last_rounds_scales_on_all_their_seeds():
    table = seeded_table(objective_is_stsb=False)
    raced = table[~((table["scale"] == 1.0) & (table["trial.seed"] == 2))]  # scale 1 dropped after 2 seeds
    (unraced,) = objective_lines(raced, "objective (x)")
    (line,) = objective_lines(raced, "objective (x)", raced=True)
    assert "mean over 2 seeds" in unraced and line.startswith("objective (x), mean over 3 seeds: best scale 20")
    assert "worse: none" in line, "scale 1, dropped by the race, is not compared on the seeds it lacks"
