"""The paired bootstrap: the same resampled pairs for every scale, a clear winner is told apart, identical
predictions are not, and the summary line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from sweep.names import UNTRAINED_SUFFIX
from sweep.stats.bootstrap import paired_bootstrap


def noisy(gold: np.ndarray, noise: float, seed: int) -> np.ndarray:
    return gold + np.random.default_rng(seed).normal(scale=noise, size=gold.size)


def serve_predictions(
    monkeypatch: pytest.MonkeyPatch,
    gold: np.ndarray,
    predictions: dict[str, np.ndarray],
    untrained: dict[str, np.ndarray] | None = None,
) -> None:
    """Stand in for MLflow: each trial run's logged STSB predictions are ``predictions[run_id]`` against ``gold``,
    its untrained model's ``untrained[run_id]`` (none logged when ``untrained`` is None, as in older runs)."""
    from sweep.report import paired_table

    def load(client: object, run_id: str, part: str) -> pd.DataFrame | None:
        if part.endswith(UNTRAINED_SUFFIX):
            return None if untrained is None else pd.DataFrame({"gold": gold, "cosine": untrained[run_id]})
        return pd.DataFrame({"gold": gold, "cosine": predictions[run_id]})

    monkeypatch.setattr(paired_table, "load_predictions", load)


def test_a_clear_winner_a_tie_and_the_line():
    gold = np.random.default_rng(0).uniform(size=400)
    good = noisy(gold, 0.1, 1)
    predictions = np.stack(
        [
            [good, noisy(gold, 0.1, 2)],  # scale 10: good (the best)
            [good, noisy(gold, 0.1, 2)],  # scale 15: identical to 10
            [noisy(gold, 1.0, 3), noisy(gold, 1.0, 4)],  # scale 50: much worse
        ]
    )
    result = paired_bootstrap(gold, predictions, [10, 15, 50], n_resamples=300, seed=0)
    table = result.table.set_index("scale")
    expected = np.mean([spearmanr(gold, p).statistic for p in predictions[0]])
    assert table.loc[10, "spearman"] == pytest.approx(expected, abs=1e-12)
    assert bool(table.loc[10, "best"]) or bool(table.loc[15, "best"])
    assert table.loc[15, "indistinguishable"] and table.loc[15, "diff_to_best"] == pytest.approx(0.0, abs=1e-12)
    # identical to the best in both seeds: its interval is centred on 0; its width is the pooled scale x seed error,
    # which scale 50's seed-to-seed noise widens (the randomized block design assumes one error for every scale)
    assert table.loc[15, "ci_low"] == pytest.approx(-table.loc[15, "ci_high"], abs=1e-12)
    assert table.loc[15, "ci_low"] < 0
    assert not table.loc[50, "indistinguishable"] and table.loc[50, "ci_low"] > 0
    assert abs(table.loc[10, "p_best"] - 0.5) < 0.03 and abs(table.loc[15, "p_best"] - 0.5) < 0.03  # even odds
    assert table.loc[15, "verdict"] == "not distinguishable" and table.loc[50, "verdict"] == "worse"
    assert not table.loc[50, "in_confidence_set"] and table.loc[15, "in_confidence_set"]
    best, other = f"{result.best['scale']:g}", f"{25 - result.best['scale']:g}"  # 10 and 15 tie: either is best
    assert result.line() == (  # no optimum: three scales make no curve near a peak
        f"best scale {best} (0.953); cannot tell apart: {other}; worse: 50 (2 seeds x 400 pairs, 95%)"
    )
    assert result.detail().startswith("95% confidence set for the best: 1")
    assert result.detail().endswith(
        "method: 2 seeds x 400 pairs, 300 pair resamples; seeds as blocks (2 df for the scale x seed error) "
        "+ evaluation pairs (bootstrap); max-t over all 3 pairs of scales"
    )


def test_pairing_makes_a_small_consistent_difference_visible():
    """A shift that every pair shares is invisible to unpaired intervals of this width but clear when paired."""
    gold = np.random.default_rng(1).uniform(size=300)
    base = noisy(gold, 0.5, 5)
    better = base + 0.2 * (gold - base)  # a little closer to gold on every pair
    result = paired_bootstrap(gold, np.stack([[base], [better]]), [1, 2], n_resamples=300)
    assert result.best["scale"] == 2
    assert result.line() == (
        f"best scale 2 ({result.best['spearman']:.3f}); lower on these pairs: 1 "
        "(one seed: these intervals leave out seed-to-seed noise; add study.seeds)"
    )
    assert result.table.set_index("scale").loc[1, "verdict"] == "lower on these pairs"  # never "worse" on one seed


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="scales"):
        paired_bootstrap(np.zeros(10), np.zeros((2, 1, 10)), [1.0])


def test_a_trial_run_without_logged_params_is_left_out_of_the_paired_table(monkeypatch, caplog):
    """A COMPLETE trial whose MLflow params never arrived (tracking server down past the limit) has no scale; the
    paired comparison leaves it out instead of failing the study's end (seen in CI: IndexError in the rerun)."""
    from sweep.report import paired_table

    gold = np.linspace(0, 5, 50)
    predictions = {"a": noisy(gold, 0.5, 1), "b": noisy(gold, 2.0, 2), "c": noisy(gold, 0.5, 3)}
    serve_predictions(monkeypatch, gold, predictions)
    trials = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "state": "COMPLETE",
            "param.loss.scale": [10.0, 50.0, np.nan],
            "param.trial.seed": [0.0, 0.0, np.nan],
            "param.study.search_space.loss.scale": ["[10, 50]", "[10, 50]", np.nan],
        }
    )
    table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=50)
    assert sorted(table["scale"]) == [10.0, 50.0] and len(lines) == 2  # the answer and its detail line
    assert "1 COMPLETE trial runs have no logged scale" in caplog.text


def test_a_grid_over_other_keys_compares_its_points(monkeypatch):
    """AnglE's three scales (no single loss.scale swept): every grid point against the best one, paired by seed,
    in a ``point`` column labelled by the swept keys (before, such studies got no paired comparison at all)."""
    from sweep.report import paired_table

    gold = np.linspace(0, 5, 200)
    noise = {(10, 1): 0.3, (10, 20): 0.3, (50, 1): 3.0, (50, 20): 3.0}
    grid = [(cos, angle, seed) for cos, angle in noise for seed in (0, 1, 2)]  # 2 seeds: t with 1 df, no verdict
    predictions = {f"{c}-{a}-{s}": noisy(gold, noise[c, a], 10 * s + c + a) for c, a, s in grid}
    serve_predictions(monkeypatch, gold, predictions)
    trials = pd.DataFrame(
        {
            "run_id": [f"{c}-{a}-{s}" for c, a, s in grid],
            "state": "COMPLETE",
            "param.loss.scale": 20.0,  # the composite's unswept default
            "param.loss.cos_scale": [float(c) for c, _, _ in grid],
            "param.loss.angle_scale": [float(a) for _, a, _ in grid],
            "param.trial.seed": [float(s) for _, _, s in grid],
            "param.study.search_space.loss.cos_scale": "[10, 50]",
            "param.study.search_space.loss.angle_scale": "[1, 20]",
        }
    )
    table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=100)
    verdicts = table.set_index("point")
    assert "scale" not in table and len(verdicts) == 4 and set(table["n_seeds"]) == {3}
    assert verdicts["best"].sum() == 1 and verdicts.index[verdicts["best"]][0].startswith("cos_scale=10, ")
    assert not verdicts.loc["cos_scale=50, angle_scale=1", "indistinguishable"]
    assert not verdicts.loc["cos_scale=50, angle_scale=20", "indistinguishable"]
    assert len(lines) == 2 and lines[0].startswith("STSB validation Spearman: best point (cos_scale=10, angle_scale=")


def test_a_scale_with_constant_predictions_is_not_scoreable_and_the_others_are_compared_as_without_it():
    """A collapsed model gives every pair the same cosine: its Spearman is undefined. Its scale is left out with the
    reason, never the best, and the other scales get the same verdicts (the same resamples) as without it."""
    gold = np.random.default_rng(0).uniform(size=300)
    good, worse = noisy(gold, 0.2, 1), noisy(gold, 1.0, 2)
    constant = np.ones_like(gold)
    result = paired_bootstrap(gold, np.stack([[good], [constant], [worse]]), [10, 20, 50], n_resamples=200)
    without = paired_bootstrap(gold, np.stack([[good], [worse]]), [10, 50], n_resamples=200)
    table = result.table.set_index("scale")
    assert table.loc[20, "not_scoreable"].startswith("collapsed with seed #0: cosine std 0.0e+00 < 0.0001")
    assert not table.loc[20, "best"] and not table.loc[20, "indistinguishable"]
    assert table.loc[20, ["spearman", "diff_to_best", "ci_low", "ci_high"]].isna().all()
    compared = table.drop(index=20).drop(columns="not_scoreable")
    pd.testing.assert_frame_equal(compared, without.table.set_index("scale").drop(columns="not_scoreable"))
    assert (table.drop(index=20)["not_scoreable"] == "").all()
    assert result.best["scale"] == 10
    assert result.line().endswith("add study.seeds); not scoreable (collapsed: cosine std < 0.0001 with some seed): 20")


def test_every_scale_constant_gives_no_best_instead_of_an_all_nan_error():
    """`model=minilm` at the static model's learning rate collapsed at every scale; the comparison raised
    ``ValueError: All-NaN slice encountered`` and the run exited 1."""
    gold = np.linspace(0, 5, 100)
    predictions = np.ones((2, 3, gold.size))
    predictions[1, 2] = 0.9999999  # constant in every seed, whatever the constant
    result = paired_bootstrap(gold, predictions, [1, 20], n_resamples=50)
    assert not result.table["best"].any() and (result.table["not_scoreable"] != "").all()
    assert result.line("lr=0.05") == (
        "lr=0.05: no best scale: none is scoreable; "
        "not scoreable (collapsed: cosine std < 0.0001 with some seed): 1, 20"
    )


def test_a_collapsed_trial_in_the_paired_table_is_named_and_the_rest_compared(monkeypatch):
    """The report's table (and the line logged on the parent run) from trial runs of which one logged constant
    predictions (cosines written as 1 to 7 digits)."""
    from sweep.report import paired_table

    gold = np.linspace(0, 5, 120)
    predictions = {"a": noisy(gold, 0.5, 1), "b": np.full(gold.size, 1.0), "c": noisy(gold, 2.0, 3)}
    serve_predictions(monkeypatch, gold, predictions)
    trials = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "state": "COMPLETE",
            "param.loss.scale": [10.0, 20.0, 50.0],
            "param.trial.seed": 0.0,
            "param.study.search_space.loss.scale": "[10, 20, 50]",
        }
    )
    table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=50)
    rows = table.set_index("scale")
    assert list(table.columns[:9]) == paired_table.COLUMNS
    assert rows["best"].tolist() == [True, False, False] and rows.loc[20.0, "not_scoreable"].startswith("collapsed")
    line, _ = lines
    assert line.startswith("STSB validation Spearman: best scale 10 (")
    assert line.endswith("; not scoreable (collapsed: cosine std < 0.0001 with some seed): 20")


@pytest.mark.parametrize("swept", ["spec", "kind"])
def test_the_arms_of_a_schedule_study_are_compared_as_points_labelled_in_words(monkeypatch, swept):
    """A study of temperature schedules sets loss.scale to each schedule's first scale: its arms, not its scales,
    are compared, each labelled by its schedule ("cosine 5-50"), whether a spec or the kind was swept (MLflow hands
    the keys back as strings where a column mixes numbers and "None")."""
    from sweep.report import paired_table
    from sweep.report.summaries import swept_scales

    gold = np.linspace(0, 5, 200)
    arms = {  # words: (loss.scale, kind, min, max, start, end); the constant trains at its loss.scale
        "constant 10": (10.0, "constant", "None", "None", "None", "None"),
        "cosine 5-50": (5.0, "cosine", "5.0", "50.0", "None", "None"),
        "linear 50-5": (50.0, "linear", "None", "None", "50.0", "5.0"),
    }
    noise = {"constant 10": 0.3, "cosine 5-50": 3.0, "linear 50-5": 3.0}
    grid = [(arm, seed) for arm in arms for seed in (0, 1, 2)]
    serve_predictions(monkeypatch, gold, {f"{a}-{s}": noisy(gold, noise[a], 7 * s + len(a)) for a, s in grid})
    keys = ("kind", "min_scale", "max_scale", "start_scale", "end_scale")
    trials = pd.DataFrame(
        {
            "run_id": [f"{a}-{s}" for a, s in grid],
            "state": "COMPLETE",
            "param.loss.scale": [arms[a][0] for a, _ in grid],
            "param.trial.seed": [float(s) for _, s in grid],
            "param.loss.scale_schedule.spec": [a if swept == "spec" else "None" for a, _ in grid],
            **{f"param.loss.scale_schedule.{k}": [arms[a][i + 1] for a, _ in grid] for i, k in enumerate(keys)},
            "param.loss.scale_schedule.period_steps": "None",
            f"param.study.search_space.loss.scale_schedule.{swept}": "[...]",
        }
    )
    if swept == "kind":  # a constant at loss.scale 10 beside schedules whose keys are fixed in the config
        trials["param.loss.scale_schedule.min_scale"] = "5.0"
    assert not swept_scales(trials)  # no curve against loss.scale: it is each schedule's first scale
    table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=100)
    assert "scale" not in table and sorted(table["point"]) == sorted(arms)
    assert table.set_index("point").loc["constant 10", "best"]
    assert lines[0].startswith("STSB validation Spearman: best point (constant 10)")


def _curve(gold: np.ndarray, noise_by_scale: dict[float, float], n_seeds: int = 3) -> np.ndarray:
    """Predictions (scales, seeds, pairs): each scale's noise level, a different draw per seed."""
    return np.stack(
        [[noisy(gold, noise, 100 * i + k) for k in range(n_seeds)] for i, noise in enumerate(noise_by_scale.values())]
    )


def test_the_optimum_is_located_only_near_a_trained_peak_of_more_than_three_scales():
    """A peak inside a grid of 5 trained scales gets an optimum; the same peak on 3 scales (the parabola would be the
    whole curve) or a grid whose best is the untrained model (scale 0: no peak of training) gets none."""
    gold = np.random.default_rng(7).uniform(size=600)
    inside = {2.0: 1.2, 5.0: 0.6, 10.0: 0.3, 20.0: 0.6, 50.0: 1.2}
    located = paired_bootstrap(gold, _curve(gold, inside), list(inside), n_resamples=100)
    assert located.optimum is not None and not located.optimum.flag and 5 < located.optimum.estimate < 20
    assert located.line().startswith(f"best scale 10 ({located.best['spearman']:.3f}), optimum near scale ")
    three = {5.0: 0.6, 10.0: 0.3, 20.0: 0.6}
    assert paired_bootstrap(gold, _curve(gold, three), list(three), n_resamples=100).optimum is None
    untrained_best = {0.0: 0.2, **inside}
    result = paired_bootstrap(gold, _curve(gold, untrained_best), list(untrained_best), n_resamples=100)
    assert result.best["scale"] == 0 and result.optimum is None and "optimum" not in result.line()
    assert "optimum" not in result.table


def test_a_comparison_read_back_from_its_csv_names_no_scale_not_scoreable(tmp_path):
    """The empty ``not_scoreable`` cells come back from a CSV as NaN: the line read from the file named every scale
    not scoreable (seen when a notebook redrew a results folder from its shipped tables)."""
    from sweep.report.findings import comparison_of

    gold = np.random.default_rng(8).uniform(size=300)
    written = paired_bootstrap(gold, _curve(gold, {5.0: 0.6, 10.0: 0.3, 20.0: 0.6}), [5, 10, 20], n_resamples=50)
    path = tmp_path / "paired_comparison.csv"
    written.table.assign(condition="", n_pairs=300, n_seeds=3, n_resamples=50, level=0.95, margin=0.01).assign(
        correction=written.correction
    ).to_csv(path, index=False)
    read = comparison_of(pd.read_csv(path))
    assert read.table["not_scoreable"].isna().all()
    assert "not scoreable" not in read.line() and read.line() == written.line()


def test_one_seed_says_what_test_ranks_first_instead_of_confirming_by_a_set_of_every_scale(monkeypatch):
    """With one seed nothing leaves the confidence set, so "test confirms" would hold for any choice (before: `test
    confirms scale 10 chosen on validation (...; 95% confidence set for the best on test: scale 10, scale 20, scale 5,
    scale 50)`): the line says only which scale test ranks first."""
    from sweep.report import paired_table

    gold = np.random.default_rng(9).uniform(size=300)
    noise = {5.0: 0.8, 10.0: 0.2, 20.0: 0.4, 50.0: 1.5}
    serve_predictions(monkeypatch, gold, {f"{s}": noisy(gold, n, int(s)) for s, n in noise.items()})
    trials = pd.DataFrame(
        {
            "run_id": [f"{s}" for s in noise],
            "state": "COMPLETE",
            "param.loss.scale": list(noise),
            "param.trial.seed": 0.0,
            "param.study.search_space.loss.scale": "[5, 10, 20, 50]",
        }
    )
    validation, _ = paired_table.paired_comparisons(trials, None, n_resamples=50)
    test, _ = paired_table.paired_comparisons(trials, None, split="test", n_resamples=50)
    assert paired_table.confirmation_lines(validation, test) == [
        "STSB test Spearman: test also ranks scale 10 first (one seed: no confidence set on test either; add "
        "study.seeds)"
    ]
    swapped = test.assign(best=test["scale"].eq(20.0))  # as if test ranked 20 first
    assert paired_table.confirmation_lines(validation, swapped)[0].startswith(
        "STSB test Spearman: test ranks scale 20 first, not scale 10 chosen on validation (one seed: "
    )


def _scale_trials(scales: list[float], seeds: list[int]) -> pd.DataFrame:
    grid = [(scale, seed) for scale in scales for seed in seeds]
    return pd.DataFrame(
        {
            "run_id": [f"{scale:g}-{seed}" for scale, seed in grid],
            "state": "COMPLETE",
            "param.loss.scale": [scale for scale, _ in grid],
            "param.trial.seed": [float(seed) for _, seed in grid],
            "param.study.search_space.loss.scale": str(scales),
        }
    )


@pytest.mark.parametrize(("trained_noise", "first_words"), [(0.3, "best scale 5"), (1.2, "TRAINING HURT: ")])
def test_the_answer_line_says_where_the_best_stands_against_no_training(monkeypatch, trained_noise, first_words):
    """A study whose grid lacks scale 0 (the issue's: MNRL at [5, 20, 50], where every scale trained the model worse
    than not training it and the line did not say so): the answer compares its best with each trial's untrained
    predictions, and starts with TRAINING HURT when the best is below them; the best row carries the numbers."""
    from sweep.report import paired_table

    gold = np.random.default_rng(0).uniform(size=600)
    untrained = noisy(gold, 0.6, 99)
    trials = _scale_trials([5.0, 20.0, 50.0], [0, 1, 2])
    noise = {5.0: trained_noise, 20.0: trained_noise * 1.5, 50.0: trained_noise * 2}
    runs = zip(trials["run_id"], trials["param.loss.scale"], strict=True)
    served = {run: noisy(gold, noise[scale], i) for i, (run, scale) in enumerate(runs)}
    serve_predictions(monkeypatch, gold, served, untrained={run: untrained for run in served})
    table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=200)
    assert lines[0].startswith(f"STSB validation Spearman: {first_words}"), lines[0]
    words = "below no training (" if trained_noise > 1 else "above no training ("
    assert f"; {words}" in lines[0]
    best = table[table["best"]].iloc[0]
    assert best["scale"] == 5.0 and (best["diff_to_untrained"] < 0) == (trained_noise > 1)
    assert table.loc[~table["best"], "untrained_verdict"].isna().all()


def test_no_clause_without_untrained_predictions_or_with_scale_0_in_the_grid(monkeypatch):
    """Older runs logged no untrained predictions; a grid with scale 0 already has the untrained model as a row."""
    from sweep.report import paired_table

    gold = np.random.default_rng(1).uniform(size=200)
    for scales, untrained in (([5.0, 20.0], None), ([0.0, 5.0, 20.0], "logged")):
        trials = _scale_trials(scales, [0, 1])
        served = {run: noisy(gold, 0.5, i) for i, run in enumerate(trials["run_id"])}
        serve_predictions(monkeypatch, gold, served, None if untrained is None else served)
        table, lines = paired_table.paired_comparisons(trials, client=None, n_resamples=50)
        assert "no training" not in lines[0] and "untrained_verdict" not in table


def test_test_reads_the_untrained_comparison_of_the_scale_validation_chose(monkeypatch):
    """On test the scale validation chose is compared with the untrained model (test never chooses), and the
    confirmation line says where it stands."""
    from sweep.report import paired_table

    gold = np.random.default_rng(2).uniform(size=600)
    trials = _scale_trials([5.0, 20.0], [0, 1, 2])
    noise = {5.0: 0.3, 20.0: 0.35}
    runs = zip(trials["run_id"], trials["param.loss.scale"], strict=True)
    served = {run: noisy(gold, noise[scale], i) for i, (run, scale) in enumerate(runs)}
    serve_predictions(monkeypatch, gold, served, untrained={run: noisy(gold, 0.6, 99) for run in served})
    validation, _ = paired_table.paired_comparisons(trials, client=None, n_resamples=100)
    chosen = paired_table.chosen_scales(validation)
    assert chosen == {"": 5.0}
    test, _ = paired_table.paired_comparisons(trials, None, "test", n_resamples=100, chosen={"": 20.0})
    rows = test.set_index("scale")
    assert rows.loc[20.0, "untrained_verdict"] == "above no training" and pd.isna(rows.loc[5.0, "untrained_verdict"])
    validation.loc[:, "best"] = validation["scale"] == 20.0  # as if validation had chosen 20
    (line,) = paired_table.confirmation_lines(validation, test)
    assert line.endswith("]") and "; on test, above no training (" in line, line
