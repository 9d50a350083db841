"""The mechanism and convergence panels of a scale study: ``mechanism_vs_scale`` (each sim_* statistic vs scale with
its untrained reference) and ``spearman_vs_step`` (validation Spearman per scale over training), from a synthetic
trials frame with known values, from MLflow-like histories and from a results folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy import stats

from sweep.report.convergence_figures import spearman_step_summary, write_spearman_vs_step
from sweep.report.mechanism_figures import mechanism_summary, write_mechanism_vs_scale
from sweep.report.results_folder import load_results_folder, table_path
from sweep.report.study_figures import write_results_folder, write_study_figures
from sweep.report.summaries import metric_history_table, trials_table

SCALES_RUN = {1.0: [0], 10.0: [0, 1, 2], 50.0: [0, 1, 2]}  # scale -> seeds; scale 1 has one seed
LOSS_SCALES = (0.5, 20.0)  # the grid the held-out loss is evaluated at


def metric_values(scale: float, seed: int) -> dict[str, float]:
    """Every mechanism metric of one trial, final and untrained: a known function of scale and seed."""
    values = {
        "sim_alignment": 0.5 + 0.01 * scale + 0.1 * seed,
        "sim_alignment_init": 0.6,
        "sim_pos_mean": 0.75 - 0.005 * scale,  # 1 - alignment / 2: not drawn beside the alignment
        "sim_uniformity": -3.0 + 0.1 * seed - 0.001 * scale,
        "sim_uniformity_init": -2.0,
        "sim_tolerance": 0.8 - 0.001 * scale,
        "sim_tolerance_init": 0.9,
        "sim_effective_negatives": 100.0 / (1 + scale) + seed,
        "sim_effective_negatives_init": 120.0 / (1 + scale),  # measured at the trial's scale: varies with it
        "sim_hardest_negative_weight": 0.01 * scale,
        "sim_hardest_negative_weight_init": 0.005 * scale,
        "sim_p_rand_above_pos": 0.05 + 0.01 * seed,
        "sim_p_rand_above_pos_init": 0.1,
    }
    for evaluated in LOSS_SCALES:
        values[f"sim_loss_at_scale_{evaluated:g}"] = 2.0 + 0.01 * abs(scale - evaluated) + 0.05 * seed
        values[f"sim_loss_at_scale_{evaluated:g}_init"] = 4.0
    return values


def trials_frame(scales: dict[float, list[int]] = SCALES_RUN, **conditions: object) -> pd.DataFrame:
    """A ``load_trials``-like frame: COMPLETE trials at the given scales and seeds with every mechanism metric, and
    a FAIL trial at scale 5 (not run to completion: drawn nowhere)."""
    rows = [
        {"state": "COMPLETE", "param.loss.scale": scale, "param.trial.seed": seed, **metric_values(scale, seed)}
        for scale, seeds in scales.items()
        for seed in seeds
    ]
    rows.append({"state": "FAIL", "param.loss.scale": 5.0, "param.trial.seed": 0})
    trials = pd.DataFrame(rows).assign(**{"param.loss.name": "mnrl", "param.study.search_space.loss.scale": "grid"})
    trials["trial_number"] = range(len(trials))
    trials["run_id"] = [f"run{number}" for number in trials["trial_number"]]
    return trials.assign(**{f"param.{key}": value for key, value in conditions.items()})


def with_condition(*frames: pd.DataFrame) -> pd.DataFrame:
    """Frames whose ``param.trial.learning_rate`` differs, that column swept: one condition each."""
    trials = pd.concat(frames, ignore_index=True).assign(**{"param.study.search_space.trial.learning_rate": "grid"})
    trials["trial_number"] = range(len(trials))
    trials["run_id"] = [f"run{number}" for number in trials["trial_number"]]
    return trials


def row(summary: pd.DataFrame, statistic: str, scale: float) -> pd.Series:
    rows = summary[(summary["statistic"] == statistic) & (summary["scale"] == scale)]
    assert len(rows) == 1
    return rows.iloc[0]


def panels(fig: Figure) -> dict[str, object]:
    """The visible panels of a figure by title (lines joined)."""
    return {ax.get_title().replace("\n", " "): ax for ax in fig.axes if ax.get_visible() and ax.get_title()}


def test_mechanism_means_and_intervals_are_the_seed_t_intervals(tmp_path: Path) -> None:
    write_mechanism_vs_scale(mechanism_summary(trials_frame()), trials_frame(), tmp_path)
    table = pd.read_csv(tmp_path / "mechanism_vs_scale.csv.gz")  # a long table: written gzipped
    assert list(table.columns) == ["scale", "statistic", "n", "mean", "ci_low", "ci_high", "untrained"]
    uniformity = row(table, "sim_uniformity", 10.0)  # seeds 0, 1, 2: -3.01, -2.91, -2.81
    half = stats.t.ppf(0.975, 2) * 0.1 / np.sqrt(3)  # sd 0.1 over three seeds
    assert uniformity["n"] == 3 and uniformity["mean"] == pytest.approx(-2.91)
    assert (uniformity["ci_low"], uniformity["ci_high"]) == pytest.approx((-2.91 - half, -2.91 + half))
    assert uniformity["untrained"] == pytest.approx(-2.0)
    loss = row(table, "sim_loss_at_scale_20", 50.0)  # 2 + 0.3 + 0.05 x seed
    assert loss["mean"] == pytest.approx(2.35) and loss["untrained"] == pytest.approx(4.0)
    assert row(table, "sim_effective_negatives", 10.0)["untrained"] == pytest.approx(120 / 11)
    assert set(table["scale"]) == {1.0, 10.0, 50.0}  # the FAIL trial's scale 5 is not a row
    assert (tmp_path / "mechanism_vs_scale.png").exists() and table_path(tmp_path, "mechanism_vs_scale").exists()


def test_one_seed_gives_a_mean_without_interval(captured: dict[str, Figure], tmp_path: Path) -> None:
    summary = mechanism_summary(trials_frame())
    alone = row(summary, "sim_alignment", 1.0)
    assert alone["n"] == 1 and alone["mean"] == pytest.approx(0.51)
    assert np.isnan(alone["ci_low"]) and np.isnan(alone["ci_high"])
    single = trials_frame({1.0: [0], 10.0: [0], 50.0: [0]})
    write_mechanism_vs_scale(mechanism_summary(single), single, tmp_path)
    for ax in captured["mechanism_vs_scale"].axes:
        assert not any(len(c.get_segments()) for c in ax.collections if hasattr(c, "get_segments"))
    labels = captured["mechanism_vs_scale"].legends[0].get_texts()
    assert "after training (n=1)" in [text.get_text() for text in labels]


def test_every_statistic_gets_a_titled_panel_with_its_untrained_reference(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    write_mechanism_vs_scale(mechanism_summary(trials_frame()), trials_frame(), tmp_path)
    by_title = panels(captured["mechanism_vs_scale"])
    assert len(by_title) == 8  # 6 statistics (no positive cosine: alignment is logged) + the loss at 2 scales
    assert list(by_title)[-2:] == [
        "held-out MNRL loss evaluated at scale 0.5",
        "held-out MNRL loss evaluated at scale 20",
    ]
    uniformity = next(ax for title, ax in by_title.items() if title.startswith("uniformity"))
    reference = [line for line in uniformity.get_lines() if line.get_label() == "untrained"]
    assert len(reference) == 1 and reference[0].get_linestyle() == "--"
    assert set(reference[0].get_ydata()) == {-2.0}  # horizontal at the _init value
    negatives = next(ax for title, ax in by_title.items() if title.startswith("effective number"))
    curve = next(line for line in negatives.get_lines() if line.get_label() == "untrained")
    np.testing.assert_allclose(curve.get_ydata(), [120 / 2, 120 / 11, 120 / 51])  # measured at each trained scale


def test_nothing_is_drawn_where_no_trial_ran(captured: dict[str, Figure], tmp_path: Path) -> None:
    trials = with_condition(
        trials_frame(**{"trial.learning_rate": 0.01}),
        trials_frame({10.0: [0, 1], 50.0: [0, 1]}, **{"trial.learning_rate": 0.1}),
    )
    summary = mechanism_summary(trials)
    assert set(summary.loc[summary["learning_rate"] == 0.1, "scale"]) == {10.0, 50.0}
    write_mechanism_vs_scale(summary, trials, tmp_path)
    uniformity = next(ax for title, ax in panels(captured["mechanism_vs_scale"]).items() if "uniformity" in title)
    curves = [line for line in uniformity.get_lines() if line.get_marker() == "o"]
    assert [list(line.get_xdata()) for line in curves] == [[1.0, 10.0, 50.0], [10.0, 50.0]]
    labels = [text.get_text() for text in captured["mechanism_vs_scale"].legends[0].get_texts()]
    assert "learning rate 0.01 (n=1-3, mean, 95% t-CI)" in labels and "untrained, learning rate 0.1" in labels
    assert not any("learning_rate" in label for label in labels)  # conditions in words, not config keys


def test_old_trials_draw_what_they_have_and_nothing_without_it(captured: dict[str, Figure], tmp_path: Path) -> None:
    old = trials_frame({0.0: [0, 1], 1.0: [0, 1], 10.0: [0, 1]})
    old = old.drop(columns=[c for c in old if c.startswith("sim_") and c != "sim_uniformity"])
    old["sim_pos_mean"] = 0.7 - 0.01 * old["param.loss.scale"]
    summary = mechanism_summary(old)
    assert list(dict.fromkeys(summary["statistic"])) == ["sim_pos_mean", "sim_uniformity"]
    assert row(summary, "sim_pos_mean", 10.0)["untrained"] == pytest.approx(0.7)  # scale 0: zero gradient
    write_mechanism_vs_scale(summary, old, tmp_path)
    assert len(panels(captured["mechanism_vs_scale"])) == 2
    none = old.drop(columns=["sim_pos_mean", "sim_uniformity"])
    assert mechanism_summary(none).empty
    assert write_mechanism_vs_scale(mechanism_summary(none), none, tmp_path) == []


def test_trials_csv_carries_the_mechanism_metrics_back_to_the_panel(tmp_path: Path) -> None:
    trials = trials_frame()
    table = trials_table(trials)
    assert {"sim_tolerance", "sim_tolerance_init", "sim_loss_at_scale_0.5", "sim_loss_at_scale_0.5_init"} <= set(table)
    folder = tmp_path / "study"
    folder.mkdir()
    table.to_csv(folder / "trials.csv", index=False)
    read_back = load_results_folder(folder)
    assert "param.sim_loss_at_scale_0.5" not in read_back.trials  # a metric, not a config key
    pd.testing.assert_frame_equal(mechanism_summary(read_back.trials), mechanism_summary(trials), check_dtype=False)


def history(trials: pd.DataFrame) -> pd.DataFrame:
    """Validation Spearman of every trial at steps 0, 50, 100: 0.6 at step 0, then rising with scale and seed."""
    rows = [
        (run_id, step, 0.6 if step == 0 else 0.6 + step * 0.001 * np.log1p(scale) + 0.01 * seed)
        for run_id, scale, seed in trials[["run_id", "param.loss.scale", "param.trial.seed"]].itertuples(index=False)
        for step in (0, 50, 100)
    ]
    return pd.DataFrame(rows, columns=["run_id", "step", "value"])


def test_spearman_by_step_is_the_mean_over_seeds_with_a_band_only_where_n_exceeds_one(
    captured: dict[str, Figure], tmp_path: Path
) -> None:
    trials = trials_frame()
    summary = spearman_step_summary(metric_history_table(trials, history(trials)))
    assert list(summary.columns) == ["scale", "step", "mean", "ci_low", "ci_high", "n"]
    point = summary[(summary["scale"] == 10.0) & (summary["step"] == 100)].iloc[0]
    half = stats.t.ppf(0.975, 2) * 0.01 / np.sqrt(3)
    assert point["n"] == 3 and point["mean"] == pytest.approx(0.6 + 0.1 * np.log(11) + 0.01)
    assert (point["ci_low"], point["ci_high"]) == pytest.approx((point["mean"] - half, point["mean"] + half))
    alone = summary[summary["scale"] == 1.0]
    assert set(alone["n"]) == {1} and alone["ci_low"].isna().all()
    assert 5.0 not in set(summary["scale"])  # the FAIL trial
    write_spearman_vs_step(summary, trials, tmp_path)
    ax = captured["spearman_vs_step"].axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["1", "10", "50"]
    assert len(ax.collections) == 2  # bands for scales 10 and 50, none for the single seed at 1


def test_spearman_by_step_gets_one_panel_per_condition(captured: dict[str, Figure], tmp_path: Path) -> None:
    trials = with_condition(
        trials_frame(**{"trial.learning_rate": 0.01}), trials_frame({10.0: [0]}, **{"trial.learning_rate": 0.1})
    )
    summary = spearman_step_summary(metric_history_table(trials, history(trials)))
    write_spearman_vs_step(summary, trials, tmp_path)
    visible = [ax for ax in captured["spearman_vs_step"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["learning rate 0.01", "learning rate 0.1"]  # in words, not keys
    assert [line.get_label() for line in visible[1].get_lines()] == ["10"]


def test_a_start_every_condition_shares_is_drawn_once(captured: dict[str, Figure], tmp_path: Path) -> None:
    """Two learning rates from one start model: the same untrained values at every scale, so one grey reference
    per panel instead of two coloured ones drawn on top of each other."""
    trials = with_condition(
        trials_frame(**{"trial.learning_rate": 0.01}),
        trials_frame({1.0: [0], 10.0: [0, 1, 2], 50.0: [0, 1]}, **{"trial.learning_rate": 0.1}),
    )
    write_mechanism_vs_scale(mechanism_summary(trials), trials, tmp_path)
    figure = captured["mechanism_vs_scale"]
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "untrained, every condition" in labels and not any(
        label.startswith("untrained, learning") for label in labels
    )
    uniformity = next(ax for title, ax in panels(figure).items() if "uniformity" in title)
    assert [line.get_label() for line in uniformity.get_lines()].count("untrained, every condition") == 1


def test_a_study_writes_both_panels_live_and_redraws_them_from_its_folder(tmp_path: Path) -> None:
    trials = trials_frame()
    live = tmp_path / "live"
    write_study_figures(trials, {"stsb_validation_spearman": history(trials)}, live)
    assert {"mechanism_vs_scale.png", "spearman_vs_step.png"} <= {p.name for p in live.iterdir()}
    redrawn = {p.name: p for p in write_results_folder(load_results_folder(live), tmp_path / "redrawn")}
    for stem in ("mechanism_vs_scale", "spearman_vs_step"):  # the long mechanism table: .csv.gz
        assert f"{stem}.png" in redrawn
        table = table_path(live, stem)
        pd.testing.assert_frame_equal(pd.read_csv(redrawn[table.name]), pd.read_csv(table))
    no_history = tmp_path / "no_history"
    write_study_figures(trials, {}, no_history)
    assert not (no_history / "spearman_vs_step.png").exists() and (no_history / "mechanism_vs_scale.png").exists()


def test_a_folder_redraws_only_the_figures_asked_for_and_refuses_an_unknown_one_before_writing(tmp_path: Path) -> None:
    """`figures`: a page that shows two figures draws those two (each a second or more), with their CSVs and the
    folder's other tables; a stem that no figure has is refused naming the known ones, and nothing is written."""
    live = tmp_path / "live"
    write_study_figures(trials_frame(), {"stsb_validation_spearman": history(trials_frame())}, live)
    folder = load_results_folder(live)
    chosen = {"spearman_vs_step", "mechanism_vs_scale"}
    # the objective's figures are known stems too: this study has no numeric condition, so no gap figure is drawn
    redrawn = {p.name for p in write_results_folder(folder, tmp_path / "chosen", figures={*chosen, "gap_vs_condition"})}
    assert {p.split(".")[0] for p in redrawn if p.endswith(".png")} == chosen
    assert {"spearman_vs_step.csv", "trials.csv", "validation_history.csv"} <= redrawn
    assert "concentration_vs_scale.csv.gz" not in redrawn
    assert {p.name for p in live.glob("*.png")} > {f"{stem}.png" for stem in chosen}, "the live study drew more"
    with pytest.raises(ValueError, match="unknown figure stems \\['spearman'\\].*spearman_vs_scale"):
        write_results_folder(folder, tmp_path / "refused", figures={"spearman"})
    assert not (tmp_path / "refused").exists()
