"""Tests of sweep.report: the analytic loss-vs-scale curves, MLflow loading and the CLI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from sweep.names import (
    ROLE_STUDY,
    ROLE_TRIAL,
    TAG_OPTUNA_STATE,
    TAG_PARENT_RUN_ID,
    TAG_ROLE,
    TAG_STUDY_NAME,
    TAG_TRIAL_NUMBER,
)
from sweep.report.__main__ import main
from sweep.report.loss_curves import loss_vs_scale, parse_scales
from sweep.report.runs import load_metric_history, load_trials
from sweep.report.study_figures import write_study_figures
from sweep.report.summaries import by_condition, complete_trials, spearman_summary
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "0.7811,0.0835,0.0644,0.0639"
SIMS = [0.7811, 0.0835, 0.0644, 0.0639]
LN4 = math.log(4)

# (scale, seed) -> (final validation, test Spearman) of the COMPLETE trials of the fake study
SPEARMAN = {
    (0.0, 1): (0.60, 0.55),
    (0.0, 2): (0.62, 0.56),
    (10.0, 1): (0.80, 0.75),
    (10.0, 2): (0.84, 0.79),
    (50.0, 1): (0.70, 0.66),
    (50.0, 2): (0.76, 0.70),
}


def run_report(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m sweep.report ARGS`` from the repository root; fails the test on a non-zero exit."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-m", "sweep.report", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result


# ---------------------------------------------------------------- loss_vs_scale


def test_loss_at_scale_zero_is_ln4_and_decreases() -> None:
    table = loss_vs_scale(SIMS, parse_scales("0:50"))
    assert table["loss"].iloc[0] == pytest.approx(LN4, abs=1e-4)
    assert (np.diff(table["loss"]) < 0).all()


def test_equal_similarities_give_ln4_at_every_scale() -> None:
    table = loss_vs_scale([0.3] * 4, [0, 1, 20, 100])
    np.testing.assert_allclose(table["loss"], LN4, atol=1e-12)


def test_gradient_matches_softmax_formula() -> None:
    scales = np.array([0.0, 1.0, 20.0, 50.0])
    table = loss_vs_scale(SIMS, scales)
    logits = scales[:, None] * np.array(SIMS)
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(table["grad_0"], scales * (softmax[:, 0] - 1), atol=1e-12)
    np.testing.assert_allclose(table["grad_2"], scales * softmax[:, 2], atol=1e-12)


def test_parse_scales() -> None:
    assert parse_scales("0:3") == [0, 1, 2, 3]
    assert parse_scales("0:1:0.25") == [0, 0.25, 0.5, 0.75, 1]
    assert parse_scales("0:1:0.3") == [0, 0.3, 0.6, 0.9]
    assert parse_scales("0,2.5,20") == [0, 2.5, 20]
    for bad in ("-1,2", "-2:3", "3:1", "0:5:0", ""):
        with pytest.raises(ValueError):
            parse_scales(bad)


def test_loss_vs_scale_cli(tmp_path: Path) -> None:
    result = run_report(
        "loss-vs-scale",
        "--similarities",
        PROFILE,
        "--similarities",
        "0.5,0.5,0.5,0.5",
        "--scales",
        "0:50",
        "--out",
        str(tmp_path),
        "--gradient",
    )
    table = pd.read_csv(tmp_path / "loss_vs_scale.csv", dtype={"profile": str})
    assert list(table.columns) == ["profile", "scale", "loss", "grad_0", "grad_1", "grad_2", "grad_3"]
    assert set(table["profile"]) == {PROFILE, "0.5,0.5,0.5,0.5"}
    assert len(table) == 2 * 51
    first = table[table["profile"] == PROFILE]
    assert first["loss"].iloc[0] == pytest.approx(LN4, abs=1e-4)
    for stem in ("loss_vs_scale", "loss_vs_scale_gradient"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000
        assert str(tmp_path / f"{stem}.png") in result.stdout


def test_loss_vs_scale_cli_default_profiles_without_gradient(tmp_path: Path) -> None:
    assert main(["loss-vs-scale", "--scales", "0,1,2.5,20", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "loss_vs_scale.csv")
    assert list(table.columns) == ["profile", "scale", "loss"]
    assert table["profile"].nunique() == 4
    assert not (tmp_path / "loss_vs_scale_gradient.png").exists()


# ---------------------------------------------------------------- study


def _log_trial(
    client: MlflowClient,
    experiment_id: str,
    parent_id: str,
    number: int,
    params: dict[str, str],
    state: str,
    status: str,
    metrics: dict[str, list[float]],
) -> str:
    """One child run following the sweep contract; each metric is logged at steps 0, 1, ..."""
    tags = {
        TAG_PARENT_RUN_ID: parent_id,
        TAG_ROLE: ROLE_TRIAL,
        TAG_TRIAL_NUMBER: str(number),
        TAG_OPTUNA_STATE: state,
    }
    run_id = client.create_run(experiment_id, tags=tags).info.run_id
    client.log_batch(
        run_id,
        metrics=[
            Metric(key, value, timestamp=step, step=step)
            for key, values in metrics.items()
            for step, value in enumerate(values)
        ],
        params=[Param(key, value) for key, value in params.items()],
    )
    client.set_terminated(run_id, status)
    return run_id


@pytest.fixture(scope="module")
def study_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An MLflow database with an old, empty study run and a newer one: 3 scales x 2 seeds + 2 failures."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("toy_study")
    study_tags = {TAG_ROLE: ROLE_STUDY, TAG_STUDY_NAME: "toy_study"}
    client.create_run(experiment_id, start_time=1_000, tags=study_tags)  # an older, abandoned study run
    parent_id = client.create_run(experiment_id, start_time=2_000, tags=study_tags).info.run_id

    def params(scale: float, seed: int) -> dict[str, str]:
        temperature = "inf" if scale == 0 else str(1 / scale)
        return {"loss.name": "mnrl", "loss.scale": str(scale), "loss.temperature": temperature, "trial.seed": str(seed)}

    for number, ((scale, seed), (validation, test)) in enumerate(SPEARMAN.items()):
        _log_trial(
            client,
            experiment_id,
            parent_id,
            number,
            params(scale, seed),
            "COMPLETE",
            "FINISHED",
            {
                # the final (last-step) value is the one that counts
                "stsb_validation_spearman": [0.1, validation / 2, validation],
                "stsb_test_spearman": [test],
                "train_loss": [2.0, 1.0 + scale / 100, 0.5 + scale / 100],
                "sim_pos_mean": [0.5 + scale / 100],
                "sim_pos_q05": [0.3],
                "sim_pos_q95": [0.9],
                "sim_rand_mean": [0.1],
                "sim_rand_mean_init": [0.2],
            },
        )
    _log_trial(
        client,
        experiment_id,
        parent_id,
        6,
        params(10.0, 3),
        "PRUNED",
        "KILLED",
        {"stsb_validation_spearman": [0.0], "train_loss": [2.0]},
    )
    _log_trial(
        client,
        experiment_id,
        parent_id,
        7,
        params(10.0, 4),
        "FAIL",
        "FAILED",
        {"stsb_validation_spearman": [0.0], "stsb_test_spearman": [0.0]},
    )
    return uri


def test_load_trials(study_db: str) -> None:
    trials = load_trials(MlflowClient(tracking_uri=study_db), experiment_name="toy_study")
    assert len(trials) == 8
    assert list(trials["trial_number"]) == list(range(8))
    complete = trials[trials["state"] == "COMPLETE"]
    assert len(complete) == 6
    assert complete["param.loss.scale"].tolist() == [scale for scale, _ in SPEARMAN]
    assert complete["stsb_validation_spearman"].tolist() == [v for v, _ in SPEARMAN.values()]
    assert trials["param.loss.temperature"].iloc[0] == math.inf
    assert trials["param.loss.name"].eq("mnrl").all()
    assert set(trials["status"]) == {"FINISHED", "KILLED", "FAILED"}


def test_load_metric_history(study_db: str) -> None:
    client = MlflowClient(tracking_uri=study_db)
    run_id = load_trials(client, experiment_name="toy_study")["run_id"].iloc[0]
    history = load_metric_history(client, [run_id], "train_loss")
    assert list(history.columns) == ["run_id", "step", "value"]
    assert history["step"].tolist() == [0, 1, 2]
    assert history["value"].tolist() == [2.0, 1.0, 0.5]


def test_study_cli(
    study_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["study", "--tracking-uri", study_db, "--experiment", "toy_study", "--out", str(tmp_path)]) == 0
    assert "using the newest" in caplog.text
    assert str(tmp_path / "spearman_vs_scale.png") in capsys.readouterr().out
    summary = pd.read_csv(tmp_path / "spearman_vs_scale.csv")
    assert list(summary.columns) == ["scale", "split", "n", "mean", "ci_low", "ci_high"]
    for split, index in (("validation", 0), ("test", 1)):
        rows = summary[summary["split"] == split].set_index("scale")
        assert rows.index.tolist() == [0.0, 10.0, 50.0]
        # the PRUNED and FAILED trials (Spearman 0.0, scale 10) must not enter the means
        assert rows["n"].tolist() == [2, 2, 2]
        expected = [np.mean([SPEARMAN[scale, seed][index] for seed in (1, 2)]) for scale in rows.index]
        np.testing.assert_allclose(rows["mean"], expected, atol=1e-12)
    ten = summary[(summary["split"] == "validation") & (summary["scale"] == 10.0)].iloc[0]
    half_width = 12.706204736 * np.std([0.80, 0.84], ddof=1) / np.sqrt(2)  # t(0.975, 1 dof)
    assert ten["ci_high"] - ten["mean"] == pytest.approx(half_width, rel=1e-6)

    concentration = pd.read_csv(tmp_path / "concentration_vs_scale.csv.gz")
    stages = set(zip(concentration["kind"], concentration["stage"], strict=True))
    assert stages == {("pos", "final"), ("rand", "final"), ("rand", "init")}
    curves = pd.read_csv(tmp_path / "train_loss_curves.csv.gz")
    assert curves["run_id"].nunique() == 7  # every trial with a train_loss history, pruned included
    for stem in ("spearman_vs_scale", "concentration_vs_scale", "train_loss_curves"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000
        assert not (tmp_path / f"{stem}.svg").exists()  # one image format per figure
    assert not (tmp_path / "angle_weights_heatmap.png").exists()
    assert not (tmp_path / "learned_scale_trajectory.png").exists()
    table = pd.read_csv(tmp_path / "trials.csv")
    assert list(table.columns[:4]) == ["trial_number", "state", "loss.scale", "trial.seed"]
    assert table["state"].tolist() == ["COMPLETE"] * 6 + ["PRUNED", "FAIL"]
    assert table["stsb_validation_spearman"].iloc[:6].tolist() == [v for v, _ in SPEARMAN.values()]


def test_study_cli_fills_a_live_studys_missing_untrained_splits_from_the_sibling(study_db: str, tmp_path: Path) -> None:
    """--untrained-from with --tracking-uri: a study without scale 0 gets the sibling's untrained test row (the
    option was recorded in the provenance but ignored)."""
    client = MlflowClient(tracking_uri=study_db)
    experiment_id = client.create_experiment("toy_without_scale_0")
    tags = {TAG_ROLE: ROLE_STUDY, TAG_STUDY_NAME: "toy_without_scale_0"}
    parent_id = client.create_run(experiment_id, tags=tags).info.run_id
    trained = [(key, value) for key, value in SPEARMAN.items() if key[0] != 0]
    for number, ((scale, seed), (validation, test)) in enumerate(trained):
        params = {"loss.name": "mnrl", "loss.scale": str(scale), "trial.seed": str(seed)}
        # step 0 of the validation history is the untrained model's score: the folder's own untrained validation
        metrics = {"stsb_validation_spearman": [0.3, validation], "stsb_test_spearman": [test], "train_loss": [1.0]}
        _log_trial(client, experiment_id, parent_id, number, params, "COMPLETE", "FINISHED", metrics)
    sibling, out = tmp_path / "sibling", tmp_path / "out"
    assert main(["study", "--tracking-uri", study_db, "--experiment", "toy_study", "--out", str(sibling)]) == 0
    command = ["study", "--tracking-uri", study_db, "--experiment", "toy_without_scale_0", "--out", str(out)]
    assert main(command) == 0
    assert set(pd.read_csv(out / "spearman_vs_scale.csv").query("scale == 0")["split"]) == {"validation"}
    assert main([*command, "--untrained-from", str(sibling)]) == 0
    zero = pd.read_csv(out / "spearman_vs_scale.csv").query("scale == 0").set_index("split")["mean"]
    assert zero["validation"] == pytest.approx(0.3)  # its own, kept
    assert zero["test"] == pytest.approx(np.mean([SPEARMAN[0.0, seed][1] for seed in (1, 2)]))  # the sibling's


def test_angle_heatmap_and_learned_scale(tmp_path: Path) -> None:
    weights = [(1.0, 1.0, 1.0), (0.0, 1.0, 0.02), (1.0, 0.0, 1.0), (1.0, 1.0, 1.0)]
    trials = pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "d"],
            "trial_number": range(4),
            "state": ["COMPLETE"] * 4,
            "param.loss.scale": [20.0] * 4,
            "param.loss.w1": [w[0] for w in weights],
            "param.loss.w2": [w[1] for w in weights],
            "param.loss.w3": [w[2] for w in weights],
            "stsb_validation_spearman": [0.80, 0.70, 0.60, 0.84],
        }
    )
    learned = pd.DataFrame({"run_id": ["a", "a", "b"], "step": [0, 1, 0], "value": [20.0, 25.0, 20.0]})
    paths = write_study_figures(trials, {"learned_scale": learned}, tmp_path)
    assert tmp_path / "angle_weights_heatmap.png" in paths
    assert tmp_path / "learned_scale_trajectory.png" in paths
    heatmap = pd.read_csv(tmp_path / "angle_weights_heatmap.csv").set_index(["w1", "w2", "w3"])
    assert heatmap.loc[(1.0, 1.0, 1.0), "n"] == 2
    assert heatmap.loc[(1.0, 1.0, 1.0), "mean"] == pytest.approx(0.82)
    assert len(pd.read_csv(tmp_path / "learned_scale_trajectory.csv")) == 3
    assert not (tmp_path / "train_loss_curves.png").exists()


def _grid_trials() -> pd.DataFrame:
    """A fake 2-condition (wrapper) x 2-scale x 2-seed study with a 2-layer x 2-dim grid per trial.

    Spearman of cell (layer l, dim d) = 0.5 + 0.1 * l + d / 1000, + 0.05 with the matryoshka2d wrapper,
    + 0.01 at scale 20.
    """
    rows = []
    for wrapper in ("None", "matryoshka2d"):
        for scale in (10.0, 20.0):
            for seed in (1, 2):
                bonus = (0.05 if wrapper == "matryoshka2d" else 0.0) + (0.01 if scale == 20.0 else 0.0)
                row = {
                    "run_id": f"{wrapper}-{scale}-{seed}",
                    "trial_number": len(rows),
                    "state": "COMPLETE",
                    "param.study.search_space.loss.wrapper.name": "[None, 'matryoshka2d']",
                    "param.study.search_space.loss.scale": "[10, 20]",
                    "param.loss.wrapper.name": wrapper,
                    "param.loss.scale": scale,
                    "param.trial.seed": seed,
                    "stsb_validation_spearman": 0.6 + bonus,
                    "stsb_test_spearman": 0.5 + bonus,
                }
                for layer in (1, 2):
                    for dim in (64, 128):
                        value = 0.5 + 0.1 * layer + dim / 1000 + bonus
                        row[f"stsb_test_spearman_L{layer}_D{dim}"] = value
                        row[f"stsb_validation_spearman_L{layer}_D{dim}"] = value + 0.02
                rows.append(row)
    return pd.DataFrame(rows)


def test_conditions_are_series_not_seeds(tmp_path: Path) -> None:
    """Trials that differ in a swept parameter other than scale (the wrapper) are never pooled as seeds."""
    trials = _grid_trials()
    history = pd.DataFrame({"run_id": trials["run_id"], "step": 1, "value": 1.0})
    paths = write_study_figures(trials, {"train_loss": history}, tmp_path)
    summary = pd.read_csv(tmp_path / "spearman_vs_scale.csv", keep_default_na=False)
    assert list(summary.columns[:3]) == ["wrapper.name", "scale", "split"]
    assert summary["n"].eq(2).all() and len(summary) == 2 * 2 * 2
    validation = summary[summary["split"] == "validation"].set_index(["wrapper.name", "scale"])["mean"]
    assert validation.loc[("matryoshka2d", 20.0)] == pytest.approx(0.66)
    assert validation.loc[("None", 10.0)] == pytest.approx(0.60)
    assert pd.read_csv(tmp_path / "train_loss_curves.csv.gz", keep_default_na=False)["wrapper.name"].nunique() == 2
    assert tmp_path / "layer_grid_heatmap.png" in paths and tmp_path / "layer_grid_tradeoff.png" in paths


def test_a_swept_learning_rate_is_a_condition_beside_the_trainers_learning_rate_metric() -> None:
    """The trainer logs the metric ``learning_rate`` (the schedule's last value); the swept ``trial.learning_rate``
    condition gets that short name too. Seen ending cosent_scale_lr with 'Grouper ... not 1-dimensional'."""
    trials = _grid_trials().drop(columns="param.study.search_space.loss.wrapper.name")
    trials = trials.assign(
        **{"param.study.search_space.trial.learning_rate": "[0.01, 0.1]", "learning_rate": 0.0},
        **{"param.trial.learning_rate": [0.01, 0.1] * (len(trials) // 2)},
    )
    summary = spearman_summary(trials)
    assert set(summary["learning_rate"]) == {0.01, 0.1} and set(summary["n"]) == {2}
    assert [label for label, _ in by_condition(complete_trials(trials), ["learning_rate"])] == [
        "learning_rate=0.01",
        "learning_rate=0.1",
    ]


def test_layer_grid_summary_per_condition(tmp_path: Path) -> None:
    write_study_figures(_grid_trials(), {}, tmp_path)
    grid = pd.read_csv(tmp_path / "layer_grid_heatmap.csv", keep_default_na=False)
    assert len(grid) == 2 * 2 * 2 * 2 * 2  # wrapper x scale x split x layer x dim
    cell = grid.set_index(["wrapper.name", "scale", "split", "layer", "dim"]).loc[
        ("matryoshka2d", 10.0, "test", 2, 128)
    ]
    assert cell["n"] == 2 and cell["mean"] == pytest.approx(0.5 + 0.2 + 0.128 + 0.05)
    tradeoff = pd.read_csv(tmp_path / "layer_grid_tradeoff.csv", keep_default_na=False)
    assert set(tradeoff["split"]) == {"test"}
    assert set(tradeoff["panel"]) == {
        f"{w}\nscale {s}" for w in ("no wrapper", "matryoshka2d wrapper") for s in (10, 20)
    }  # in words (issue 35), whole floats as integers


def test_angle_scales_heatmap_without_scale_curve(tmp_path: Path) -> None:
    """AnglE scale grids get a heatmap; with no loss.scale swept there is no curve vs scale."""
    scales = [(c, i, a) for c in (10.0, 20.0) for i in (10.0, 50.0) for a in (1.0, 20.0)]
    trials = pd.DataFrame(
        {
            "run_id": [str(n) for n in range(len(scales))],
            "trial_number": range(len(scales)),
            "state": "COMPLETE",
            "param.loss.cos_scale": [s[0] for s in scales],
            "param.loss.ibn_scale": [s[1] for s in scales],
            "param.loss.angle_scale": [s[2] for s in scales],
            "stsb_validation_spearman": [0.5 + s[0] / 100 - s[2] / 1000 for s in scales],
        }
    )
    paths = write_study_figures(trials, {}, tmp_path)
    assert [p.name for p in paths if p.suffix == ".png"] == ["angle_scales_heatmap.png"]
    heatmap = pd.read_csv(tmp_path / "angle_scales_heatmap.csv").set_index(["cos_scale", "ibn_scale", "angle_scale"])
    assert heatmap.loc[(20.0, 50.0, 20.0), "mean"] == pytest.approx(0.68)


def test_angle_scales_heatmap_per_swept_learning_rate_beside_the_trainers_metric(tmp_path: Path) -> None:
    """A swept learning rate beside the trainer's ``learning_rate`` metric (and fixed weights): the scales' heatmap
    gets a panel per rate and angle scale, never pooling rates (it raised 'Grouper for learning_rate not
    1-dimensional')."""
    cells = [(c, i, a, r) for c in (10.0, 20.0) for i in (10.0, 50.0) for a in (1.0, 20.0) for r in (0.002, 0.01)]
    trials = pd.DataFrame(
        {
            "run_id": [str(n) for n in range(len(cells))],
            "trial_number": range(len(cells)),
            "state": "COMPLETE",
            "param.loss.weights": "1,1,1",
            "param.loss.cos_scale": [c[0] for c in cells],
            "param.loss.ibn_scale": [c[1] for c in cells],
            "param.loss.angle_scale": [c[2] for c in cells],
            "param.trial.learning_rate": [c[3] for c in cells],
            "param.study.search_space.trial.learning_rate": "[0.002, 0.01]",  # what marks a key as swept
            "learning_rate": 0.0,  # the trainer's last logged rate (linear decay to 0)
            "stsb_validation_spearman": [0.5 + c[0] / 100 - c[3] for c in cells],
        }
    )
    paths = write_study_figures(trials, {}, tmp_path)
    assert "angle_scales_heatmap.png" in [p.name for p in paths]
    heatmap = pd.read_csv(tmp_path / "angle_scales_heatmap.csv")
    assert len(heatmap) == len(cells) and set(heatmap["n"]) == {1}
    cell = heatmap.query("cos_scale == 20 and ibn_scale == 50 and angle_scale == 20 and learning_rate == 0.01")
    assert cell["mean"].tolist() == [pytest.approx(0.69)]


def test_loss_vs_scale_on_measured_batches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real (anchor, positive, negative) batches: 8 anchors x 16 candidates, so ln 16 at scale 0."""
    overrides = [arg for item in TINY if item.startswith(("model=", "data.")) for arg in ("--override", item)]
    assert (
        main(
            [
                "loss-vs-scale",
                "--scales",
                "0,5,20",
                "--measure-batches",
                "2",
                "--batch-size",
                "8",
                *overrides,
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    table = pd.read_csv(tmp_path / "loss_vs_scale.csv")
    measured = table[table["profile"].str.startswith("measured: base ")]
    assert measured["scale"].tolist() == [0.0, 5.0, 20.0]
    assert measured["loss"].iloc[0] == pytest.approx(math.log(16))
    assert set(table["profile"]) - set(measured["profile"])  # the analytic default profiles are still drawn
    assert measured["profile"].iloc[0].endswith(", 2 x 8 anchor/positive/negative")


def test_measured_batches_need_text_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["loss-vs-scale", "--measure-batches", "1", "--override", "data=stsb_pairs", "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    assert "data.train.columns" in capsys.readouterr().err
