"""Extra evaluation sets (eval.extra): validation before training, metrics per trial, the table and the report."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from sweep.errors import ConfigError
from sweep.report.__main__ import main as report_main
from sweep.study.lifecycle import finish, open_sweep

NLI = {
    "name": "nli_pairs",
    "kind": "labelled_pairs",
    "local_file": "nli/pair-class.csv",
    "columns": ["premise", "hypothesis", "label"],
    "positive_labels": [0],
    "negative_labels": [2],
    "max_samples": 300,
}
CAPTIONS = {
    "name": "captions",
    "kind": "retrieval",
    "local_file": "captions/pair.csv",
    "columns": ["anchor", "positive"],
}


def scored_csv(path: Path, rows: int = 40) -> Path:
    """A tiny scored-pairs CSV built in the test (sentence pairs from STSB validation, shuffled scores)."""
    stsb = pd.read_csv(Path(__file__).resolve().parents[2].parent / "shared" / "data" / "stsb" / "validation.csv")
    table = stsb.head(rows).rename(columns={"sentence1": "left", "sentence2": "right", "score": "gold"})
    table.to_csv(path, index=False)
    return path


def with_extra(cfg, *entries):
    cfg.eval.extra = OmegaConf.create(list(entries))
    return cfg


@pytest.mark.parametrize(
    ("entry", "key", "message"),
    [
        ({**NLI, "kind": "triples"}, "eval.extra.0.kind", "must be one of scored_pairs"),
        ({**NLI, "columns": ["premise", "hypothesis"]}, "eval.extra.0.columns", "needs 3 column names"),
        ({**NLI, "local_file": "/nonexistent/x.csv"}, "eval.extra.0.local_file", "file not found"),
        ({**NLI, "columns": ["premise", "hypothesis", "gold"]}, "eval.extra.0.columns", "missing ['gold']"),
        ({**NLI, "positive_labels": [7]}, "eval.extra.0.columns", "must hold both classes"),
        ({**CAPTIONS, "name": "stsb_x"}, "eval.extra.0.name", "unique identifier"),
        ({**CAPTIONS, "max_samples": 0}, "eval.extra.0.max_samples", "integer >= 1"),
    ],
)
def test_bad_entries_stop_before_training_naming_the_key(compose_cfg, entry, key, message):
    cfg = with_extra(compose_cfg("name=bad"), entry)
    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        open_sweep(cfg)
    assert error.value.key == key
    assert "\n" not in str(error.value)
    assert not (Path(cfg.paths.root) / "optuna.db").exists(), "nothing is created before the config is valid"


def test_empty_set_and_unknown_objective_are_refused(compose_cfg, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("left,right,gold\n")
    cfg = with_extra(compose_cfg("name=empty"), {"name": "mine", "kind": "scored_pairs", "local_file": str(empty),
                                                 "columns": ["left", "right", "gold"]})  # fmt: skip
    with pytest.raises(ConfigError, match="has no rows") as error:
        open_sweep(cfg)
    assert error.value.key == "eval.extra.0"

    cfg = with_extra(compose_cfg("name=objective", "eval.objective=captions_recall"), CAPTIONS)
    with pytest.raises(ConfigError, match="captions_ndcg_at_10, captions_mrr_at_10") as error:
        open_sweep(cfg)
    assert error.value.key == "eval.objective"


@pytest.mark.slow
def test_study_with_extra_sets_logs_them_per_trial_and_draws_them(compose_cfg, tmp_path, caplog):
    mine = {"name": "mine", "kind": "scored_pairs", "local_file": str(scored_csv(tmp_path / "mine.csv")),
            "columns": ["left", "right", "gold"]}  # fmt: skip
    cfg = compose_cfg(
        "name=extra",
        "+study.search_space.loss.scale=[0,20]",
        "eval.objective=mean",
        "eval.extra_every_eval=true",
        "trial.save_model=none",
    )
    with_extra(cfg, NLI, {**CAPTIONS, "max_samples": 150}, mine)
    sweep = open_sweep(cfg)
    with caplog.at_level("INFO", logger="sweep.study.run_loop"):
        sweep.run()
    table = finish(sweep)
    # each trial's line tells the objective from the validation Spearman (before, the objective was called validation)
    ends = [r.getMessage() for r in caplog.records if r.getMessage().startswith("trial ") and " s" in r.getMessage()]
    for row in table.itertuples():
        (line,) = [m for m in ends if m.startswith(f"trial {row.trial} ")]
        assert f"objective (mean) {row.objective:.4f}, validation {row.stsb_val:.4f}, test {row.stsb_test:.4f}" in line

    metrics = ["nli_pairs_ap", "nli_pairs_f1", "captions_ndcg_at_10", "captions_mrr_at_10", "mine_spearman"]
    assert set(metrics) <= set(table.columns)
    assert (table.state == "COMPLETE").all()
    client = MlflowClient(cfg.tracking.uri)
    experiment = client.get_experiment_by_name("extra")
    runs = client.search_runs([experiment.experiment_id], "tags.`sweep.role` = 'trial'")
    assert len(runs) == 2
    for run in runs:
        for metric in metrics:
            value = run.data.metrics[metric]
            assert math.isfinite(value) and 0 <= value <= 1 or metric.endswith("spearman"), metric
            steps = [m.step for m in client.get_metric_history(run.info.run_id, metric)]
            assert sorted(steps) == [2, 4], "every evaluation with eval.extra_every_eval=true"
        row = table[table.trial == int(run.data.tags["sweep.trial_number"])].iloc[0]
        expected = (row.stsb_val + row.nli_pairs_ap + row.captions_ndcg_at_10 + row.mine_spearman) / 4
        assert row.objective == pytest.approx(expected), "objective=mean: STSB validation and each set's first metric"
        assert run.data.metrics["objective"] == pytest.approx(expected)
        assert row.stsb_val == pytest.approx(run.data.metrics["stsb_validation_spearman"])

    out = tmp_path / "report"
    assert report_main(["study", "--tracking-uri", cfg.tracking.uri, "--experiment", "extra", "--out", str(out)]) == 0
    drawn = pd.read_csv(out / "extra_sets_vs_scale.csv")
    assert set(drawn.metric) == {"stsb_validation_spearman", "stsb_test_spearman", *metrics}
    assert sorted(drawn.scale.unique()) == [0.0, 20.0]
    assert (out / "extra_sets_vs_scale.png").stat().st_size > 0
