"""A study's paired comparison end to end: every trial logs its per-pair predictions and the mechanism statistics,
the study end logs the paired-bootstrap line on the parent run, the report writes the same as a table."""

from __future__ import annotations

import logging
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from sweep.evaluation.predictions import load_predictions
from sweep.names import TAG_PAIRED_COMPARISON
from sweep.report.__main__ import main as report_main
from sweep.study.lifecycle import finish, open_sweep
from sweep.study.progress import PROGRESS_TAG
from sweep.study_command import paired_summary


@pytest.mark.slow
def test_a_seeded_grid_ends_with_the_paired_line_and_the_report_table(compose_cfg, tmp_path, caplog):
    cfg = compose_cfg("+study.search_space.loss.scale=[1,20]", "study.seeds=[0,1]", "name=paired")
    sweep = open_sweep(cfg)
    with caplog.at_level(logging.INFO, logger="sweep.study.run_loop"):
        sweep.run()
    said = [record.getMessage() for record in caplog.records]
    plan = f"study paired: 4 trials (2 grid points x 2 seeds), {cfg.trial.max_steps} steps each; stored in "
    assert any(line.startswith(plan) for line in said), said  # before any training: what will run
    counts = [line for line in said if re.match(r"study paired: \d of 4 done", line)]
    assert [line.split(" of ")[0][-1] for line in counts] == ["1", "2", "3", "4"] and " left, finish ~" in counts[0]
    assert MlflowClient(cfg.tracking.uri).get_run(sweep.parent_run_id).data.tags[PROGRESS_TAG] == "4 of 4 done"
    table = finish(sweep)
    # the objective is the STSB validation Spearman: its verdicts, then whether STSB test confirms the choice
    line, detail, confirmation = paired_summary(sweep, table)
    assert line.startswith("STSB validation Spearman: best scale ") and line.endswith(" (2 seeds x 200 pairs, 95%)")
    assert detail.startswith("  95% confidence set for the best: ") and detail.endswith(
        "; method: 2 seeds x 200 pairs, 1,000 pair resamples; seeds as blocks (1 df for the scale x seed error) "
        "+ evaluation pairs (bootstrap); max-t over all 1 pair of scales"
    )
    assert confirmation.startswith("STSB test Spearman: test ") and " chosen on validation (" in confirmation

    client = MlflowClient(cfg.tracking.uri)
    tags = client.get_run(sweep.parent_run_id).data.tags
    assert tags[TAG_PAIRED_COMPARISON] == f"{line}; {detail.strip()}; {confirmation}"
    # the run page's Description: what the model is (tiny_bert: random weights), then the answer, uncut, the detail
    # nested under it
    model = "The model is a transformer (random weights, `sentence-transformers/all-MiniLM-L6-v2`'s tokenizer)"
    expected = f"{model}, trained at learning rate 0.001.\n\n- {line}\n  - {detail.strip()}\n- {confirmation}"
    assert tags["mlflow.note.content"] == expected
    assert sweep.study.user_attrs["verdict"] == [line, detail, confirmation], "optuna-dashboard shows the answer too"
    report = {a.path for a in client.list_artifacts(sweep.parent_run_id, "report")}  # the figures, where users land
    assert {"report/spearman_vs_scale.png", "report/spearman_vs_scale.csv", "report/paired_comparison.md"} <= report
    children = [
        r
        for r in client.search_runs([sweep.experiment_id])
        if r.data.tags.get("mlflow.parentRunId") == sweep.parent_run_id
    ]
    assert len(children) == 4
    for child in children:
        predictions = load_predictions(client, child.info.run_id, "validation")
        assert len(predictions) == 200 and list(predictions.columns) == ["gold", "cosine"]
        assert len(load_predictions(client, child.info.run_id, "test")) == 200
        metrics = child.data.metrics
        for key in ("sim_tolerance", "sim_effective_negatives", "sim_hardest_negative_weight"):
            assert math.isfinite(metrics[key]), key
        history = client.get_metric_history(child.info.run_id, "sim_loss_at_scale_20")
        assert sorted(m.step for m in history) == [2, 4]  # each evaluation, the end (step 0: the _init metric)
        assert metrics["sim_loss_at_scale_20_init"] > 0 and metrics["sim_loss_at_scale_1"] > 0

    out = tmp_path / "report"
    assert report_main(["study", "--tracking-uri", cfg.tracking.uri, "--experiment", "paired", "--out", str(out)]) == 0
    table = pd.read_csv(out / "paired_comparison.csv")
    assert sorted(table["scale"]) == [1.0, 20.0] and table["best"].sum() == 1
    assert set(table["n_seeds"]) == {2} and set(table["n_pairs"]) == {200}
    assert (
        line in (out / "paired_comparison.md").read_text()
        and confirmation in (out / "paired_comparison.md").read_text()
    )
    test_table = pd.read_csv(out / "paired_comparison_test.csv")
    assert sorted(test_table["scale"]) == [1.0, 20.0] and test_table["verdict"].isin(["best"]).sum() == 1
    shipped = np.load(out / "predictions.npz")  # every trial's pairs, both splits: --from-csv needs no MLflow
    assert [shipped[f"{split}.rank_bytes"].shape[1:] for split in ("validation", "test")] == [(4, 200)] * 2
    assert yaml.safe_load((out / "config.yaml").read_text())["name"] == "paired"  # the parent run's copy
    spearman = pd.read_csv(out / "spearman_vs_scale.csv")
    validation = spearman[spearman["split"] == "validation"].set_index("scale")["in_confidence_set_for_best"]
    assert validation.dropna().to_dict() == table.set_index("scale")["in_confidence_set"].to_dict()
    assert validation.isna().sum() == 1 and pd.isna(validation.get(0.0))  # the untrained line: not a compared trial
    assert spearman.loc[spearman["split"] == "test", "in_confidence_set_for_best"].isna().all()  # validation's test

    redrawn = tmp_path / "redrawn"
    assert report_main(["study", "--from-csv", str(out), "--out", str(redrawn)]) == 0
    assert (redrawn / "paired_comparison.md").read_text() == (out / "paired_comparison.md").read_text()
    (redrawn / "predictions.npz").unlink()  # a folder published before predictions were shipped
    seeds_only = tmp_path / "seeds_only"
    assert report_main(["study", "--from-csv", str(redrawn), "--out", str(seeds_only)]) == 0
    lines = (seeds_only / "paired_comparison.md").read_text()
    assert "(2 seeds, one score per trial, 95%)" in lines and "P(best)" in lines  # the seeds alone still give draws
    assert "method: one score per trial, 2 seeds, no per-pair predictions; seeds as blocks (1 df" in lines
    pd.testing.assert_frame_equal(pd.read_csv(redrawn / "spearman_vs_scale.csv"), spearman)
