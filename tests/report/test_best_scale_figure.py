"""best_scale_vs_condition: the chosen scale and the confidence set per value of one numeric condition, with ln C
under each batch size; nothing for a study without such a condition."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from matplotlib.text import Text

from sweep.report import axes, best_scale_figures
from sweep.report.best_scale_figures import best_scale_table, metric_words, write_best_scale_vs_condition


def comparison(conditions: list[str], best: dict[str, float], held: dict[str, set[float]]) -> pd.DataFrame:
    rows = [
        {
            "condition": c,
            "scale": s,
            "best": s == best[c],
            "in_confidence_set": s in held[c],
            "n_seeds": 3,
            "metric": "captions30k_val_ndcg_at_10",
        }
        for c in conditions
        for s in (5.0, 10.0, 20.0, 50.0)
    ]
    test = [{**r, "metric": "captions30k_test_ndcg_at_10", "best": r["scale"] == 50.0} for r in rows]
    return pd.DataFrame(rows + test)


def test_batch_sizes_give_the_best_and_the_set_per_batch_with_ln_c(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(
        best_scale_figures, "save_figure", lambda fig, *args: drawn.append(fig) or axes.save_figure(fig, *args)
    )
    conditions = ["trial.batch_size=16", "trial.batch_size=64", "trial.batch_size=256"]
    table = comparison(
        conditions,
        {conditions[0]: 5.0, conditions[1]: 10.0, conditions[2]: 20.0},
        {conditions[0]: {5.0, 10.0}, conditions[1]: {10.0}, conditions[2]: {10.0, 20.0}},
    )
    written = write_best_scale_vs_condition(table, tmp_path)
    assert {p.name for p in written} == {f"best_scale_vs_condition.{e}" for e in ("png", "csv")}
    data = pd.read_csv(tmp_path / "best_scale_vs_condition.csv")
    assert len(data) == 12, "the validation rows only (the first metric), one per condition and scale"
    assert data.loc[data["best"]].set_index("condition_value")["scale"].to_dict() == {16: 5.0, 64: 10.0, 256: 20.0}
    assert set(data.loc[data["in_confidence_set"] & (data["condition_value"] == 256), "scale"]) == {10.0, 20.0}
    words = " ".join(text.get_text() for text in drawn[0].findobj(Text))
    assert f"ln C {math.log(256):.2f}" in words and "batch size" in words and "captions30k validation NDCG@10" in words


@pytest.mark.parametrize(
    "conditions",
    [["trial.batch_size=64"], ["model.static_init=random", "model.static_init=pretrained"], ["a=1, b=2", "a=2, b=2"]],
    ids=["one-value", "not-numeric", "two-keys"],
)
def test_no_figure_without_two_values_of_one_numeric_condition(tmp_path, conditions):
    table = comparison(conditions, dict.fromkeys(conditions, 10.0), {c: {10.0} for c in conditions})
    assert write_best_scale_vs_condition(table, tmp_path) == []
    assert best_scale_table(table).empty or best_scale_table(table)["condition_value"].nunique() < 2


def test_metric_names_read_as_words():
    assert metric_words("captions30k_val_mrr_at_10") == "captions30k validation MRR@10"
    assert metric_words("stsb_validation_spearman") == "STSB validation Spearman"


@pytest.mark.parametrize("diagonal", [True, False])
def test_a_condition_that_is_a_scale_gets_the_diagonal_only_when_asked(tmp_path, monkeypatch, diagonal):
    drawn = []
    monkeypatch.setattr(
        best_scale_figures, "save_figure", lambda fig, *args: drawn.append(fig) or axes.save_figure(fig, *args)
    )
    conditions = ["start_scale=10", "start_scale=20", "start_scale=50"]
    table = comparison(conditions, dict.fromkeys(conditions, 10.0), {c: {10.0, 20.0} for c in conditions})
    write_best_scale_vs_condition(table, tmp_path, diagonal=diagonal)
    ax = drawn[0].axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    label = "best = scale the start model was trained at"
    assert (label in lines) is diagonal
    if diagonal:
        assert list(lines[label].get_xdata()) == list(lines[label].get_ydata()) == [10.0, 20.0, 50.0]
    assert ax.get_xlabel() == "scale the start model was trained at"


def test_the_title_says_what_the_replicates_are_when_they_are_not_training_seeds(tmp_path, monkeypatch):
    """Issue 51: start_temperature_static's figure said "n=3 seeds" of 3 start models (pretraining seeds) each
    fine-tuned with one seed."""
    drawn = []
    monkeypatch.setattr(
        best_scale_figures, "save_figure", lambda fig, *args: drawn.append(fig) or axes.save_figure(fig, *args)
    )
    conditions = ["start_scale=10", "start_scale=20", "start_scale=50"]
    table = comparison(conditions, dict.fromkeys(conditions, 10.0), {c: {10.0, 20.0} for c in conditions})
    words = "3 start models per start scale (pretraining seeds), 1 fine-tuning seed each"
    write_best_scale_vs_condition(table, tmp_path, diagonal=True, replicates=words)
    title = drawn[0].axes[0].get_title()
    assert words in title and "n=3 seeds" not in title
    write_best_scale_vs_condition(table, tmp_path)
    assert "n=3 seeds per scale" in drawn[1].axes[0].get_title()
