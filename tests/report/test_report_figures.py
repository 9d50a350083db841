"""What the study figures draw (baseline lines, n, intervals, defaults, shading, panels) and that every published
results folder redraws from its own CSVs to the same CSVs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from sweep.report import (
    HISTORY_CSV,
    factor_figures,
    gap_figures,
    grid_figures,
    history_figures,
    loss_figures,
    scale_figures,
    schedule_figures,
)
from sweep.report.axes import condition_title
from sweep.report.findings import generated_block
from sweep.report.folder_comparison import redraw_results_folder
from sweep.report.loss_curves import loss_table
from sweep.report.results_folder import load_results_folder, read_csv
from sweep.report.study_context import lr_schedule, n_candidates
from sweep.report.study_figures import with_untrained
from sweep.report.summaries import IN_CONFIDENCE_SET, SEARCH_SPACE, SPEARMAN_OF_SPLIT, row_labels, with_paired_verdict

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "research" / "results"
STUDY_FOLDERS = sorted(p.parent for p in RESULTS.glob("*/spearman_vs_scale.csv")) + [
    RESULTS / "angle_weights",
    RESULTS / "angle_scales",
]
STATIC_SIBLING = RESULTS / "mnrl_scale"  # scale-0 rows of the same static base model
# figures added after the folders of research/results/ were published: a redraw adds them where the trials allow,
# until the studies are rerun and the folders hold them too
# the folders whose notebook section redraws them with the untrained line of a sibling (research/notebooks/*.ipynb)
# figures the research code draws into a study's folder from its CSVs (research/findings, called by the notebooks;
# research/tests/test_notebooks.py rebuilds them), not the package's redraw
RESEARCH_DRAWN = {
    "mnrl_scale_datasize_steps": {"gap_vs_condition.png"},
    "mnrl_scale_datasize_pass": {"gap_vs_condition.png"},
    "start_temperature_static": {"best_scale_vs_condition.png"},
    "start_temperature_l1": {"best_scale_vs_condition.png"},
}


def untrained_from(folder: Path) -> Path | None:
    """The sibling the folder's last report command filled its untrained rows from (``--untrained-from`` in its
    ``provenance.json``), or None."""
    words = json.loads((folder / "provenance.json").read_text())["command"].split()
    return RESULTS / Path(words[words.index("--untrained-from") + 1]).name if "--untrained-from" in words else None


def context(loss: str = "mnrl", **params: object) -> pd.DataFrame:
    """A one-row trials frame carrying config params only."""
    return pd.DataFrame([{"state": None, "param.loss.name": loss, **{f"param.{k}": v for k, v in params.items()}}])


def summary(n: int, scales: tuple[float, ...] = (0.0, 1.0, 10.0, 50.0)) -> pd.DataFrame:
    rows = []
    for scale in scales:
        for split, offset in (("validation", 0.0), ("test", -0.1)):
            mean = 0.6 + 0.01 * scale + offset
            half = 0.01 if n > 1 else np.nan
            rows.append(
                {"scale": scale, "split": split, "n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half}
            )
    return pd.DataFrame(rows)


def shifted(table: pd.DataFrame, by: float) -> pd.DataFrame:
    """The summary with its means and intervals moved by ``by``."""
    return table.assign(**{column: table[column] + by for column in ("mean", "ci_low", "ci_high")})


def test_spearman_draws_scale_zero_as_reference_lines(captured: dict[str, Figure], tmp_path: Path) -> None:
    scale_figures.write_spearman_vs_scale(summary(3), context(), tmp_path)
    ax = captured["spearman_vs_scale"].axes[0]
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == [1.0, 10.0, 50.0]  # ticks only at the swept scales, none at 0
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert all(0.0 not in line.get_xdata() for line in curves)
    labels = ax.get_legend_handles_labels()[1]
    assert "untrained, validation" in labels and "untrained, test" in labels
    assert "library default, scale 20" in labels
    assert "validation (n=3, mean, 95% t-CI)" in labels


def test_the_title_says_when_every_scale_is_below_the_untrained_model(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """The issue's study of one's own: every scale trained the model worse than not training it, which only the grey
    line showed; the title now says it first. A study where training helped has no such title."""
    scale_figures.write_spearman_vs_scale(summary(3), context(), tmp_path)
    assert captured["spearman_vs_scale"].axes[0].get_title() == ""
    hurt = summary(3)
    hurt.loc[hurt["scale"] == 0, ["mean", "ci_low", "ci_high"]] += 0.6  # untrained above every trained scale
    scale_figures.write_spearman_vs_scale(hurt, context(), tmp_path)
    assert captured["spearman_vs_scale"].axes[0].get_title() == scale_figures.BELOW_UNTRAINED


def test_spearman_single_seed_says_n1_and_draws_no_interval(captured: dict[str, Figure], tmp_path: Path) -> None:
    scale_figures.write_spearman_vs_scale(summary(1), context("gist"), tmp_path)
    ax = captured["spearman_vs_scale"].axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "validation (n=1)" in labels and not any("interval" in label for label in labels)
    assert not any(collection.get_segments() for collection in ax.collections if hasattr(collection, "get_segments"))
    assert "library default, temperature 0.01" not in labels  # GIST's default is scale 100, off this axis


def test_spearman_rings_the_confidence_set_at_its_run_points_only_when_given(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    label = "validation: in the 95% confidence set for the best scale (paired)"
    scale_figures.write_spearman_vs_scale(summary(3), context(), tmp_path)
    assert label not in captured["spearman_vs_scale"].axes[0].get_legend_handles_labels()[1]
    table = summary(3).assign(in_confidence_set_for_best=lambda t: t["scale"].isin([10.0, 50.0]))
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    ax = captured["spearman_vs_scale"].axes[0]
    assert not ax.patches  # no span over scales that were never run
    (rings,) = [c for c in ax.collections if c.get_label() == label]
    validation = table[(table["split"] == "validation") & table["scale"].isin([10.0, 50.0])]
    assert sorted(map(tuple, rings.get_offsets())) == sorted(zip(validation["scale"], validation["mean"], strict=True))


def test_one_seed_rings_nothing(captured: dict[str, Figure], tmp_path: Path) -> None:
    """With one seed the engine puts nothing out of the set (seed noise unknown): ringing every point would read as
    a finding, so the figure rings none."""
    table = summary(1).assign(in_confidence_set_for_best=True)
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    labels = captured["spearman_vs_scale"].axes[0].get_legend_handles_labels()[1]
    assert not [label for label in labels if "confidence set" in label]


def test_a_learnable_scale_figure_draws_no_optimum_band(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Beside the grey fixed-scale curve the axis is the starting scale: a band there would read as a fixed scale's
    optimum, so none is drawn (the answer line still names it, as the starting scale)."""
    from sweep.report.results_folder import FixedScaleReference

    fixed = FixedScaleReference("fixed", pd.DataFrame({"scale": [1.0, 10.0, 50.0], "n": 3, "mean": [0.6, 0.7, 0.65]}))
    scale_figures.write_spearman_vs_scale(summary(3).assign(**OPTIMUM), context(), tmp_path, reference=fixed)
    assert not captured["spearman_vs_scale"].axes[0].patches


OPTIMUM = {"optimum": 12.3, "optimum_low": 9.4, "optimum_high": 16.8, "optimum_flag": ""}


@pytest.mark.parametrize("flag", ["", "peak at the low edge of the grid (scale 1): the optimum may lie below it"])
def test_spearman_draws_the_optimum_band_only_when_located(
    captured: dict[str, Figure], tmp_path: Path, flag: str
) -> None:
    label = "validation: optimum near scale 12 [9.4, 17] (parabola in log scale near the peak, 95%)"
    scale_figures.write_spearman_vs_scale(summary(3), context(), tmp_path)
    ax = captured["spearman_vs_scale"].axes[0]
    assert not ax.patches and label not in ax.get_legend_handles_labels()[1]  # no columns: nothing drawn
    scale_figures.write_spearman_vs_scale(summary(3).assign(**{**OPTIMUM, "optimum_flag": flag}), context(), tmp_path)
    ax = captured["spearman_vs_scale"].axes[0]
    if flag:  # flagged: the text says why, the figure draws nothing
        assert not ax.patches and label not in ax.get_legend_handles_labels()[1]
        return
    (band,) = ax.patches
    assert band.get_label() == label
    corners = ax.transData.inverted().transform(band.get_window_extent().get_points())  # a Polygon before mpl 3.9
    assert sorted(corners[:, 0]) == pytest.approx([9.4, 16.8])
    assert band.get_alpha() <= 0.2  # light: the points stay readable
    assert [list(line.get_xdata()) for line in ax.get_lines() if list(line.get_xdata()) == [12.3, 12.3]]


def test_a_study_without_conditions_gets_its_verdicts_with_pandas_before_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50: on the H200 the live report of a plain scale study logged no figures, warning `zip() argument 2 is
    longer than argument 1` (every worker, every study with a paired comparison and no other swept key). Its
    install had pandas 2, whose ``itertuples(index=False)`` of a frame without columns yields no rows at all
    (pandas 3 yields one empty row per row): the rows' condition labels came out empty. That iteration stands in."""
    iterate = pd.DataFrame.itertuples

    def pandas_2(self: pd.DataFrame, index: bool = True, name: str | None = "Pandas") -> Any:
        return iter(()) if not index and self.columns.empty else iterate(self, index=index, name=name)

    monkeypatch.setattr(pd.DataFrame, "itertuples", pandas_2)
    rows = [{"condition": np.nan, "scale": scale, "in_confidence_set": scale > 1} for scale in (1.0, 10.0, 50.0)]
    paired = pd.DataFrame(rows).assign(**OPTIMUM)
    merged = with_paired_verdict(summary(3), paired)
    validation = merged[(merged["split"] == "validation") & (merged["scale"] > 0)]
    assert validation.set_index("scale")[IN_CONFIDENCE_SET].to_dict() == {1.0: False, 10.0: True, 50.0: True}
    assert validation["optimum"].tolist() == [12.3] * 3
    assert row_labels(summary(3), []) == [""] * 8


def test_the_optimum_flows_from_the_paired_table_to_the_validation_rows_of_its_condition(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    table = pd.concat([summary(3).assign(batch=16), shifted(summary(3), 0.01).assign(batch=64)], ignore_index=True)
    paired = pd.DataFrame(
        [
            {"condition": f"batch={batch}", "scale": scale, "in_confidence_set": True, **OPTIMUM, "optimum": optimum}
            for batch, optimum in ((16, 12.3), (64, 30.0))
            for scale in (1.0, 10.0, 50.0)
        ]
    )
    merged = with_paired_verdict(table, paired)
    validation = merged[merged["split"] == "validation"]
    assert validation.groupby("batch")["optimum"].unique().map(list).to_dict() == {16: [12.3], 64: [30.0]}
    assert merged.loc[merged["split"] == "test", "optimum"].isna().all()
    assert list(with_paired_verdict(table, paired.drop(columns=list(OPTIMUM)))) == [
        *table,
        "in_confidence_set_for_best",
    ]
    # the published summaries leave the untrained rows (the first of each panel) without an optimum: still titled
    merged.loc[merged["scale"] == 0.0, list(OPTIMUM)] = [np.nan, np.nan, np.nan, ""]
    scale_figures.write_spearman_vs_scale(merged, context(), tmp_path)  # two panels: each one's numbers in its title
    axes = [ax for ax in captured["spearman_vs_scale"].axes if ax.get_visible() and ax.get_subplotspec()]
    assert [ax.get_title().splitlines()[-1] for ax in axes] == [
        "optimum near scale 12 [9.4, 17]",
        "optimum near scale 30 [9.4, 17]",
    ]
    assert (
        "validation: the optimum in each panel's title (parabola in log scale near the peak, 95%)"
        in (axes[0].get_legend_handles_labels()[1])
    )


def test_each_panel_titles_its_optimum_when_the_untrained_row_is_pooled(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """An untrained row pooled over the conditions (as research/results/normalize and matryoshka2d ship it) carries no
    optimum: the panel's title still gives its own, as the legend says."""
    table = pd.concat([summary(3).assign(batch=16), shifted(summary(3), 0.01).assign(batch=64)], ignore_index=True)
    table = table.assign(**OPTIMUM)
    table.loc[table["scale"] == 0.0, list(OPTIMUM)] = np.nan
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    axes = [ax for ax in captured["spearman_vs_scale"].axes if ax.get_visible() and ax.get_subplotspec()]
    assert [ax.get_title().splitlines()[-1] for ax in axes] == ["optimum near scale 12 [9.4, 17]"] * 2


def test_learned_scale_on_log_axis_with_lr_schedule(captured: dict[str, Figure], tmp_path: Path) -> None:
    data = pd.DataFrame(
        {
            "run_id": ["a"] * 3,
            "trial_number": 0,
            "state": "COMPLETE",
            "scale": 5.0,
            "step": [10, 20, 30],
            "value": [6, 9, 12],
        }
    )
    params = {
        "trial.learning_rate": 0.05,
        "trial.max_steps": 30,
        "trial.warmup_ratio": 0.1,
        "trial.lr_scheduler": "linear",
    }
    history_figures.write_learned_scale_trajectory(data, context("learnable_scale", **params), tmp_path)
    top, bottom = captured["learned_scale_trajectory"].axes[:2]
    assert top.get_yscale() == "log" and bottom.get_ylabel() == "learning rate"
    assert (
        top.get_legend() is None
        and "initial scale" in captured["learned_scale_trajectory"].legends[0].get_title().get_text()
    )


def test_train_loss_panels_divide_mnrl_by_ln_candidates(captured: dict[str, Figure], tmp_path: Path) -> None:
    data = pd.DataFrame(
        {"run_id": ["a", "a", "b", "b"], "trial_number": [0, 0, 1, 1], "state": "COMPLETE"}
        | {"scale": [0.0, 0.0, 20.0, 20.0], "step": [10, 20, 10, 20], "value": [np.log(128)] * 2 + [1.0, 0.5]}
    )
    trials = context(**{"trial.batch_size": 64, "data.train.columns": "['anchor', 'positive', 'negative']"})
    assert n_candidates(trials) == 128
    history_figures.write_train_loss_curves(data, trials, tmp_path)
    axes = [ax for ax in captured["train_loss_curves"].axes if ax.get_visible()]
    assert len(axes) == 2 and axes[0].get_yscale() == "log"
    np.testing.assert_allclose(axes[0].get_lines()[0].get_ydata(), 1.0)  # scale 0 sits at chance


def test_train_loss_of_a_schedule_study_has_one_panel_per_arm(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Each arm of a schedule study has its own first scale: one panel per arm, titled by its schedule, instead of
    an arms x scales grid of mostly empty panels."""
    arms = {"constant 10": 10.0, "cosine 5-50": 5.0, "linear 50-5": 50.0}
    data = pd.DataFrame(
        {"run_id": list(arms), "trial_number": [0, 1, 2], "state": "COMPLETE", "scale_schedule.spec": list(arms)}
        | {"scale": list(arms.values()), "step": 10, "value": 1.0}
    )
    history_figures.write_train_loss_curves(data, context(), tmp_path)
    axes = [ax for ax in captured["train_loss_curves"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == list(arms)


def test_lr_schedule_linear_with_warmup() -> None:
    params = {
        "trial.learning_rate": 0.05,
        "trial.max_steps": 300,
        "trial.warmup_ratio": 0.1,
        "trial.lr_scheduler": "linear",
    }
    schedule = lr_schedule(context(**params)).set_index("step")["learning_rate"]
    assert schedule[0] == 0 and schedule[30] == pytest.approx(0.05) and schedule[300] == 0
    assert schedule[165] == pytest.approx(0.025)


def test_with_untrained_broadcasts_to_every_condition() -> None:
    table = summary(1, scales=(1.0, 10.0)).assign(normalize=True)
    table = pd.concat([table, table.assign(normalize=False)], ignore_index=True)
    untrained = pd.DataFrame([{"scale": 0.0, "split": "validation", "n": 3, "mean": 0.645}])
    merged = with_untrained(table, untrained)
    assert sorted(merged.loc[merged["scale"] == 0, "normalize"]) == [False, True]


def test_untrained_from_a_sibling_needs_the_same_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model"):
        load_results_folder(RESULTS / "gist_temperature_guide", untrained_from=STATIC_SIBLING)


def test_a_sibling_fills_the_untrained_split_a_schedule_study_never_scored(tmp_path: Path) -> None:
    """Issue 35: a schedule study scores the untrained model on validation only (step 0); its figure drew test
    points against that validation line alone, so test looked "below untrained". The sibling gives test's line."""
    folder = tmp_path / "mnrl_scale_schedule"  # as the study wrote it: no test row among its untrained rows
    shutil.copytree(RESULTS / folder.name, folder)
    arms = read_csv(folder / "schedule_arms.csv")
    arms[~((arms["panel"] == "untrained") & (arms["split"] == "test"))].to_csv(
        folder / "schedule_arms.csv", index=False
    )
    own = load_results_folder(folder).untrained
    both = load_results_folder(folder, untrained_from=STATIC_SIBLING).untrained
    assert set(own["split"]) == {"validation"}
    assert set(both["split"]) == {"validation", "test"}
    sibling = read_csv(STATIC_SIBLING / "spearman_vs_scale.csv").query("scale == 0").set_index("split")["mean"]
    by_split = both.set_index("split")["mean"]
    assert by_split["test"] == pytest.approx(sibling["test"]) and by_split["validation"] == pytest.approx(
        float(own["mean"].iloc[0])
    )  # the folder's own value is kept where it has one


def test_the_siblings_untrained_split_stands_in_every_condition(tmp_path: Path) -> None:
    """The filled test row carried no learning rate, so the figure drew an empty "learning rate nan" panel."""
    folder = tmp_path / "mnrl_scale_lr_low"
    shutil.copytree(RESULTS / folder.name, folder)
    table = read_csv(folder / "spearman_vs_scale.csv")
    table[~((table["scale"] == 0) & (table["split"] == "test"))].to_csv(folder / "spearman_vs_scale.csv", index=False)
    untrained = load_results_folder(folder, untrained_from=STATIC_SIBLING).untrained
    test = untrained[untrained["split"] == "test"]
    assert sorted(test["learning_rate"]) == sorted(table["learning_rate"].unique())  # one row per condition, no NaN
    assert test["mean"].nunique() == 1


def test_a_pooled_untrained_row_stands_in_every_panel_and_draws_no_panel_of_its_own(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """Issue 51: mnrl_scale_lr_tuned and normalize ship a test untrained row with every condition empty (a sibling's
    value); the figure drew it as an empty "learning rate nan" panel and left the test points of every other panel
    over a validation baseline alone."""
    low, high = summary(3).assign(learning_rate=0.002), shifted(summary(3), 0.01).assign(learning_rate=0.005)
    table = pd.concat([low, high], ignore_index=True)
    table = table[~((table["scale"] == 0.0) & (table["split"] == "test"))]
    pooled = pd.DataFrame([{"learning_rate": np.nan, "scale": 0.0, "split": "test", "n": 3, "mean": 0.509}])
    table = pd.concat([table, pooled], ignore_index=True)
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    axes = [ax for ax in captured["spearman_vs_scale"].axes if ax.get_visible() and ax.get_subplotspec()]
    assert [ax.get_title() for ax in axes] == ["learning rate 0.002", "learning rate 0.005"]
    for ax in axes:
        labels = ax.get_legend_handles_labels()[1]
        assert "untrained, test" in labels and "untrained, validation" in labels
        (test_line,) = [line for line in ax.get_lines() if line.get_label() == "untrained, test"]
        assert list(test_line.get_ydata()) == [0.509, 0.509]


def test_schedule_figure_says_which_split_has_no_untrained_line(captured: dict[str, Figure], tmp_path: Path) -> None:
    trials = pd.DataFrame(
        [
            {"state": "COMPLETE", "param.loss.scale_schedule.spec": arm, "trial.seed": seed}
            | {SPEARMAN_OF_SPLIT["validation"]: 0.7 + 0.01 * seed, SPEARMAN_OF_SPLIT["test"]: 0.6 + 0.01 * seed}
            for arm in ("constant 10", "linear 5-50")
            for seed in range(3)
        ]
    )

    def legend(untrained: dict[str, float]) -> list[str]:
        schedule_figures.write_schedule_arms(trials, 12, tmp_path, untrained)
        left = captured["schedule_arms"].axes[0]
        return [text for text in left.get_legend_handles_labels()[1] if text.startswith("untrained")]

    assert legend({"validation": 0.65}) == ["untrained model, validation (test not scored untrained: no line)"]
    assert legend({"validation": 0.65, "test": 0.51}) == ["untrained model, validation", "untrained model, test"]


def test_scale_and_condition_draws_both_factors_on_one_y_axis(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 35: the learning rate's effect beside the scale's, for any study sweeping scale x one numeric key."""
    rates = (0.002, 0.01)
    table = pd.concat([shifted(summary(3), -10 * rate).assign(learning_rate=rate) for rate in rates], ignore_index=True)
    factor_figures.write_scale_and_condition(table, tmp_path)
    fig = captured["scale_and_condition"]
    by_scale, by_rate = [ax for ax in fig.axes if ax.get_title()]
    assert by_scale.get_shared_y_axes().joined(by_scale, by_rate)
    assert by_rate.get_xlabel() == "learning rate" and "scale" in by_scale.get_xlabel()
    assert len(by_scale.containers) == len(rates) and len(by_rate.containers) == 3  # trained scales 1, 10, 50
    labels = [text.get_text() for legend in fig.legends for text in legend.get_texts()]
    assert "learning rate 0.002 (n=3)" in labels and "scale 10" in labels
    data = factor_figures.scale_and_condition_table(table)
    assert set(data["scale"]) == {1.0, 10.0, 50.0} and set(data["condition_value"]) == set(rates)  # no scale 0


def test_a_condition_value_of_zero_stays_on_the_axis(captured: dict[str, Figure], tmp_path: Path) -> None:
    """A uniformity weight of 0 fell off the log axis: run, but not drawn."""
    weights = (0.0, 0.1, 1.0)
    table = pd.concat([summary(3).assign(uniformity_weight=w) for w in weights], ignore_index=True)
    factor_figures.write_scale_and_condition(table, tmp_path)
    by_weight = [ax for ax in captured["scale_and_condition"].axes if ax.get_title()][1]
    assert [t.get_text() for t in by_weight.get_xticklabels()] == ["0", "0.1", "1"]
    low, high = by_weight.get_xlim()
    assert low < 0.0 < 1.0 < high  # every value run lies inside the axis


def test_scale_and_condition_needs_exactly_one_numeric_condition(captured: dict[str, Figure], tmp_path: Path) -> None:
    one = summary(3).assign(learning_rate=0.01)
    two = pd.concat([one, one.assign(learning_rate=0.1)], ignore_index=True)
    words = two.assign(learning_rate=two["learning_rate"].map({0.01: "low", 0.1: "high"}))
    both = two.assign(batch_size=64)
    for table in (summary(3), one, words, both):
        assert factor_figures.write_scale_and_condition(table, tmp_path) == []
    assert "scale_and_condition" not in captured


def comparison(sizes: tuple[int, ...], gaps: dict[float, tuple[float, ...]]) -> pd.DataFrame:
    """An objective_comparison-like table: per data size, scale 10 best and each other scale ``gap`` below it."""
    return pd.DataFrame(
        [
            {"condition": f"train.max_samples={size}", "scale": scale, "best": scale == 10.0, "n_seeds": 3}
            | {"diff_to_best": gap[i], "ci_low": gap[i] - 0.01, "ci_high": gap[i] + 0.01}
            | {"metric": "captions30k_val_ndcg_at_10"}
            for i, size in enumerate(sizes)
            for scale, gap in {10.0: (0.0,) * len(sizes), **gaps}.items()
        ]
    )


def test_gap_vs_condition_draws_each_scale_below_its_conditions_best(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """Issue 35: the data-size study's question is the gap against the size; its figures never drew it."""
    table = comparison((2000, 100000), {2.0: (0.06, 0.11), 30.0: (0.06, 0.02)})  # warm side grows, cold shrinks
    gap_figures.write_gap_vs_condition(table, tmp_path)
    (ax,) = captured["gap_vs_condition"].axes
    lines = {c.get_label(): c.lines[0].get_ydata() for c in ax.containers}
    assert set(lines) == {"scale 2", "scale 30"}  # the best scale is the zero line, not a series
    assert list(lines["scale 2"]) == [0.06, 0.11] and list(lines["scale 30"]) == [0.06, 0.02]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2,000", "all"]
    assert "best" in ax.get_title() and "n=3" in ax.get_title()


def test_gap_vs_condition_colours_every_scale_by_its_side_and_says_what_is_held_fixed(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """Issue 51: scale 20, next to the best 10, took the diverging map's light grey middle; and the fixed-steps arm's
    figure did not say that the steps were the same at every size."""
    from matplotlib.colors import rgb_to_hsv, to_rgb

    table = comparison((2000, 8000, 30000), {5.0: (0.01, 0.01, 0.03), 20.0: (0.03, 0.03, 0.01), 50.0: (0.09,) * 3})
    gap_figures.write_gap_vs_condition(table, tmp_path)
    (ax,) = captured["gap_vs_condition"].axes
    colours = {c.get_label(): rgb_to_hsv(to_rgb(c.lines[0].get_color())) for c in ax.containers}
    assert set(colours) == {"scale 5", "scale 20", "scale 50"}
    assert all(saturation > 0.35 and value < 0.95 for _, saturation, value in colours.values()), colours
    hue = {label: h for label, (h, _, _) in colours.items()}
    assert hue["scale 5"] < 0.1 or hue["scale 5"] > 0.9  # warmer than the best: red
    assert 0.5 < hue["scale 20"] < 0.7 and 0.5 < hue["scale 50"] < 0.7  # colder: blue
    gap_figures.write_gap_vs_condition(table, tmp_path, note="468 steps at every size")
    assert captured["gap_vs_condition"].axes[0].get_title().splitlines()[-1] == "468 steps at every size"


def test_gap_vs_condition_draws_a_best_scale_at_the_grids_edge(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 50: with the best at the grid's high edge every other scale is warmer, and the empty colder side got one
    shade: ``zip() argument 2 is longer than argument 1``, and no figure."""
    from matplotlib.colors import rgb_to_hsv, to_rgb

    for gaps in ({2.0: (0.06, 0.11), 5.0: (0.03, 0.04)}, {20.0: (0.02, 0.03), 50.0: (0.05, 0.08)}):  # high, low edge
        table = comparison((2000, 100000), gaps)
        assert gap_figures.write_gap_vs_condition(table, tmp_path)
        (ax,) = captured.pop("gap_vs_condition").axes
        colours = [to_rgb(c.lines[0].get_color()) for c in ax.containers]
        assert len(colours) == 2 and colours[0] != colours[1], colours  # one series per other scale, told apart
        hues = [rgb_to_hsv(colour)[0] for colour in colours]
        warm = [h < 0.1 or h > 0.9 for h in hues]
        assert warm == [max(gaps) < 10.0] * 2, hues  # warmer than the best: reds; colder: blues


def test_gap_vs_condition_needs_a_numeric_condition(captured: dict[str, Figure], tmp_path: Path) -> None:
    one = comparison((2000,), {2.0: (0.06,)})
    none = one.assign(condition=float("nan"))
    for table in (one, none):
        assert gap_figures.write_gap_vs_condition(table, tmp_path) == []
    assert "gap_vs_condition" not in captured


def test_layer_grid_panels_are_titled_in_words_and_name_the_split(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 35: the heatmap's panels read `wrapper.name=None` and its colour bar did not say which split."""
    summary = pd.DataFrame(
        [
            {"wrapper.name": wrapper, "scale": 20.0, "split": split, "layer": layer, "dim": dim, "n": 3}
            | {"mean": 0.5 + 0.05 * layer, "ci_low": 0.49, "ci_high": 0.51 + 0.05 * layer}
            for wrapper in ("None", "matryoshka2d")
            for split in ("validation", "test")
            for layer in (1, 2)
            for dim in (64, 128)
        ]
    )
    grid_figures.write_layer_grid_figures(summary, tmp_path)
    heatmap = captured["layer_grid_heatmap"]
    titles = {ax.get_title() for ax in heatmap.axes if ax.get_title()}
    assert titles == {"no wrapper\nscale 20", "matryoshka2d wrapper\nscale 20"}
    assert any("STSB test Spearman" in ax.get_ylabel() for ax in heatmap.axes)
    assert {ax.get_title() for ax in captured["layer_grid_tradeoff"].axes if ax.get_title()} == titles


@pytest.mark.research  # every published results folder redrawn: minutes, left out of the default run
@pytest.mark.parametrize("folder", STUDY_FOLDERS, ids=[p.name for p in STUDY_FOLDERS])
def test_results_folder_redraws_to_the_same_csvs(folder: Path, tmp_path: Path) -> None:
    written = redraw_results_folder(folder, tmp_path, untrained_from(folder))
    csvs = [path for path in written if path.name.endswith((".csv", ".csv.gz"))]  # a long table: .csv.gz
    not_drawn = ("trials.csv", "paired_comparison.csv", "paired_comparison_test.csv", "objective_comparison.csv")
    not_drawn += (HISTORY_CSV,)  # the validations behind spearman_vs_step, shipped for the race replays
    figure_csvs = [p for p in csvs if p.name not in not_drawn]
    assert {f"{p.name.split('.')[0]}.png" for p in figure_csvs} <= {p.name for p in written}
    for path in csvs:
        pd.testing.assert_frame_equal(read_csv(path), read_csv(folder / path.name), check_dtype=False)
    # the folder keeps the figures its README names (the others are redrawn, not tracked), or all when redrawn there
    drawn_here = {p.name for p in folder.glob("*.png")} - RESEARCH_DRAWN.get(folder.name, set())
    assert drawn_here <= {p.name for p in written if p.suffix == ".png"}
    if (tmp_path / "README.md").exists():  # scale swept: the README's numbers are the block the CSVs generate
        assert generated_block((folder / "README.md").read_text()) == generated_block(
            (tmp_path / "README.md").read_text()
        )


def test_condition_titles_are_words_not_config_keys() -> None:
    """Issue 22: `train.max_samples=100000` (a grid value above the rows: all of them) read as a raw key."""
    assert condition_title("train.max_samples=100000") == "all training rows"
    assert condition_title("train.max_samples=1000, learning_rate=0.01") == "1,000 training rows\nlearning rate 0.01"
    assert condition_title("similarity=dot, normalize=False", ", ") == "dot similarity, no Normalize layer"
    assert condition_title("wrapper.name=None") == "no wrapper" and condition_title("") == ""
    # a grid of start models: the model's own name, not the path on the machine that ran it (titles overlapped)
    start = "name_or_path=/home/me/runs/starts/static_scale10_seed0, learning_rate=0.05"
    assert condition_title(start, ", ") == "model static_scale10_seed0, learning rate 0.05"
    assert condition_title("name_or_path=sentence-transformers/all-MiniLM-L6-v2") == "model all-MiniLM-L6-v2"


def test_panels_above_an_empty_slot_keep_their_x_tick_labels(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 22: three conditions in a 2 x 2 grid; the top-right panel has nothing below it."""
    table = pd.concat(
        [shifted(summary(3), -rate).assign(learning_rate=rate) for rate in (0.01, 0.03, 0.1)],
        ignore_index=True,
    )
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    axes = [ax for ax in captured["spearman_vs_scale"].axes if ax.get_visible() and ax.get_subplotspec()]
    assert len(axes) == 3
    for ax in axes:
        spec = ax.get_subplotspec()
        bottom_of_column = not any(
            other is not ax
            and other.get_subplotspec().colspan == spec.colspan
            and other.get_subplotspec().rowspan.start > spec.rowspan.start
            for other in axes
        )
        labels_shown = ax.xaxis.get_tick_params()["labelbottom"]
        assert labels_shown == bottom_of_column, ax.get_title()
        assert (ax.get_xlabel() == "scale") == bottom_of_column
    top_right = next(ax for ax in axes if ax.get_subplotspec().colspan.start == 1)
    assert top_right.xaxis.get_tick_params()["labelbottom"] and top_right.get_xlabel() == "scale"


def test_angle_heatmap_cells_never_pool_a_swept_learning_rate(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 35: angle_weights_lr's cells averaged lr 0.002 and 0.01 together ("n=10 per cell" for 5 seeds)."""
    trials = pd.DataFrame(
        [
            {"state": "COMPLETE", "param.loss.w1": w1, "param.loss.w2": 1.0, "param.loss.w3": w3}
            | {"param.loss.weights": f"{w1:g},1,{w3:g}", "param.trial.learning_rate": rate}
            | {f"{SEARCH_SPACE}loss.weights": "[...]", f"{SEARCH_SPACE}trial.learning_rate": "[0.002, 0.01]"}
            | {SPEARMAN_OF_SPLIT["validation"]: 0.8 - 10 * rate * w1 + 0.001 * seed}
            for w1 in (0.0, 1.0)
            for w3 in (0.0, 1.0)
            for rate in (0.002, 0.01)
            for seed in range(3)
        ]
    )
    grid_figures.write_angle_weights_heatmap(trials, tmp_path, untrained=0.6)
    fig = captured["angle_weights_heatmap"]
    titles = sorted(ax.get_title() for ax in fig.axes if ax.get_title())
    assert titles == sorted(f"learning rate {r:g}\nw3 (angle) = {w:g}" for r in (0.002, 0.01) for w in (0.0, 1.0))
    colour_bar = next(ax for ax in fig.axes if "validation Spearman" in ax.get_ylabel())
    assert "n=3 per cell" in colour_bar.get_ylabel()


def test_heatmap_cells_not_run_are_hatched_grey_not_a_colour_of_the_scale(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """Issue 22: on a diverging map centred on the untrained value, white meant both "not run" and "untrained"."""
    run = [(0.0, 1.0, 1.0), (1.0, 0.0, 1.0), (1.0, 1.0, 1.0)]  # (w1, w2, w3); (0, 0, 1) not run
    trials = pd.DataFrame(
        [
            {"state": "COMPLETE", "param.loss.w1": w1, "param.loss.w2": w2, "param.loss.w3": w3}
            | {SPEARMAN_OF_SPLIT["validation"]: 0.6 + 0.05 * (w1 - w2) + 0.01 * seed}
            for w1, w2, w3 in run
            for seed in range(3)
        ]
    )
    grid_figures.write_angle_weights_heatmap(trials, tmp_path, untrained=0.6)
    fig = captured["angle_weights_heatmap"]
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("w3")]
    not_run = [patch for patch in ax.patches if patch.get_label() == grid_figures.NOT_RUN]
    assert len(not_run) == 1 and not_run[0].get_hatch() and not_run[0].get_xy() == (-0.5, -0.5)  # w1 = w2 = 0
    assert not_run[0].get_facecolor()[:3] != (1.0, 1.0, 1.0)
    assert grid_figures.NOT_RUN in [text.get_text() for legend in fig.legends for text in legend.get_texts()]


def test_loss_vs_scale_on_a_log_axis_without_symlog(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 22: the symlog axis (linear below 0.01) put a kink in the confident profile's curve."""
    table = loss_table({"confident": (0.78, 0.08, 0.06, 0.06), "bad": (0.1, 0.7, 0.65, 0.6)}, range(51))
    loss_figures.write_loss_vs_scale(table, tmp_path)
    ax = captured["loss_vs_scale"].axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel() and "symlog" not in ax.get_ylabel()
    assert ax.get_ylim()[0] == pytest.approx(loss_figures.LOSS_FLOOR)  # the ~1e-15 tail is named, not squeezed in
    assert any("below 0.001 from scale" in text.get_text() for text in ax.texts)


def test_loss_vs_scale_divides_by_ln_candidates_when_they_differ(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 22: a 128-candidate measured curve (ln 128 at scale 0) next to the 4-candidate analytic ones."""
    four = loss_table({"four": (0.55, 0.5, 0.48, 0.45)}, [0.0, 1.0, 20.0])
    many = loss_table({"measured": (0.6, *[0.3] * 127)}, [0.0, 1.0, 20.0])[["profile", "scale", "loss"]]
    table = pd.concat([four[["profile", "scale", "loss"]], many], ignore_index=True)
    written = loss_figures.with_normalised_loss(table)
    zero = written[written["scale"] == 0].set_index("profile")["loss"]
    np.testing.assert_allclose(written["loss_over_ln_c"], written["loss"] / written["profile"].map(zero))
    np.testing.assert_allclose(zero, [np.log(4), np.log(128)])
    assert "loss_over_ln_c" not in loss_figures.with_normalised_loss(four)  # one C: raw nats
    loss_figures.write_loss_vs_scale(table, tmp_path)
    ax = captured["loss_vs_scale"].axes[0]
    assert "ln C" in ax.get_ylabel()
    curves = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_ydata()[0] for line in curves] == pytest.approx([1.0, 1.0])
    assert any("(C=128)" in label for label in ax.get_legend_handles_labels()[1])


def test_learnable_scale_spearman_draws_the_fixed_scale_curve_of_its_sibling(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    """Issue 22: the learnable-scale figure lacked the fixed-scale curve it is compared to (mnrl_scale)."""
    folder = load_results_folder(RESULTS / "learnable_scale", untrained_from=STATIC_SIBLING)
    assert folder.reference is not None and folder.reference.name == "mnrl_scale"
    sibling = read_csv(STATIC_SIBLING / "spearman_vs_scale.csv")
    validation = sibling[(sibling["split"] == "validation") & (sibling["scale"] > 0)]
    summary_table = read_csv(RESULTS / "learnable_scale" / "spearman_vs_scale.csv")
    scale_figures.write_spearman_vs_scale(summary_table, folder.trials, tmp_path, folder.reference)
    ax = captured["spearman_vs_scale"].axes[0]
    (line,) = [line for line in ax.get_lines() if line.get_label() == "fixed scale (mnrl_scale, n=3)"]
    np.testing.assert_allclose(line.get_xdata(), validation["scale"])
    np.testing.assert_allclose(line.get_ydata(), validation["mean"])
    # without a sibling (a live study) or for a fixed-scale study: no reference
    assert load_results_folder(RESULTS / "learnable_scale").reference is None
    assert load_results_folder(RESULTS / "angle_weights", untrained_from=STATIC_SIBLING).reference is None


def test_identical_arms_are_one_panel_titled_with_every_condition(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Issue 22: three arms of research/results/normalize compute one loss; their panels were three identical ones."""
    same = summary(3)
    other = shifted(summary(3), -0.05)
    table = pd.concat(
        [
            same.assign(similarity="cosine", normalize=False),
            shifted(same, 5e-5).assign(similarity="cosine", normalize=True),  # within 1e-4
            other.assign(similarity="dot", normalize=False),
        ],
        ignore_index=True,
    )
    scale_figures.write_spearman_vs_scale(table, context(), tmp_path)
    axes = [ax for ax in captured["spearman_vs_scale"].axes if ax.get_visible() and ax.get_subplotspec()]
    assert len(axes) == 2
    assert axes[0].get_title().splitlines()[:2] == [
        "cosine similarity, no Normalize layer",
        "cosine similarity, Normalize layer",
    ]
    assert "drawn once" in axes[0].get_title() and axes[1].get_title() == "dot similarity, no Normalize layer"


def test_extra_set_metrics_are_found_in_a_results_folders_flattened_config() -> None:
    """A folder's config.yaml flattens eval.extra to the list's Python form, not MLflow's JSON: the from-csv redraw
    of research/results/mnrl_scale_datasize found no extra set and dropped its extra_sets_vs_scale figure."""
    from sweep.report.extra_set_figures import extra_metrics

    spec = {"name": "caps", "kind": "retrieval", "columns": ["query", "document"]}
    for text in (str([spec]), json.dumps([spec])):
        trials = pd.DataFrame({"param.eval.extra": [text], "caps_ndcg_at_10": [0.5], "caps_mrr_at_10": [0.4]})
        assert extra_metrics(trials) == ["caps_ndcg_at_10", "caps_mrr_at_10"]
