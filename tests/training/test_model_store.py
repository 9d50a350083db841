"""Kept models (trial.save_model): the best model reloads both ways with the logged Spearman, all/none, crash safety,
python -m sweep.evaluate."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import mlflow.sentence_transformers
import optuna
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf
from sentence_transformers import SentenceTransformer

from sweep.config.checks import eval_batch_size
from sweep.evaluate import main as evaluate_main
from sweep.evaluate import stsb_scores
from sweep.inputs.model import build_model
from sweep.names import TAG_BEST_MODEL_PATH, TAG_BEST_MODEL_URI, TAG_MODEL_LOGGED
from sweep.study.lifecycle import finish, open_sweep
from sweep.training import kept_models
from tests.conftest import TINY
from tests.helpers import keeping, run_sweep

REPO = Path(__file__).resolve().parents[2]


def run_study(cfg):
    sweep = open_sweep(cfg)
    sweep.run()
    return sweep, finish(sweep)


@pytest.mark.slow
def test_default_study_keeps_a_best_model_that_reloads_both_ways(compose_cfg, tmp_path, monkeypatch):
    # The default model (static MiniLM embeddings) with the default trial.save_model=best, a few steps.
    cfg = compose_cfg(
        "model=static_minilm",
        "name=keep_best",
        "+study.search_space.loss.scale=[0,20]",
        "tracking.registered_model_name=sweep-best",
    )
    assert cfg.trial.save_model == "best"
    sweep, _ = run_study(cfg)
    best_trial = sweep.study.best_trial
    best = kept_models.best_path(cfg.paths.root, "keep_best")
    meta = kept_models.read_meta(best)
    assert best.is_symlink() and meta["trial_number"] == best_trial.number
    assert [p.name for p in (best.parent / "trials").iterdir()] == [f"trial-{best_trial.number:03d}"]

    client = MlflowClient(cfg.tracking.uri)
    run = client.get_run(best_trial.user_attrs["mlflow_run_id"])
    logged = run.data.metrics["stsb_test_spearman"]
    assert run.data.tags[TAG_MODEL_LOGGED] == "true" and run.info.status == "FINISHED"
    parent = client.get_run(sweep.parent_run_id)
    assert parent.data.tags[TAG_BEST_MODEL_PATH] == str(best)
    name = f"trial-{best_trial.number:03d}"  # logged models are named by trial, the best one tagged
    assert parent.data.tags[TAG_BEST_MODEL_URI] == f"runs:/{run.info.run_id}/{name}" == run.data.tags["sweep.model_uri"]
    logged_models = client.search_logged_models(experiment_ids=[sweep.experiment_id])
    assert {m.name for m in logged_models} == {
        f"trial-{t.number:03d}"
        for t in sweep.study.trials
        if t.user_attrs["mlflow_run_id"] in {m.source_run_id for m in logged_models}
    }
    (marked,) = [m for m in logged_models if m.tags.get("sweep.study_best") == "true"]
    assert marked.name == name and client.get_run(run.info.run_id).data.tags["sweep.study_best"] == "true"
    versions = client.search_model_versions("name='sweep-best'")
    assert max(versions, key=lambda v: int(v.version)).run_id == run.info.run_id, "each new best is registered"

    test = stsb_scores(cfg.data, ["test"], eval_batch_size(cfg.trial, cfg.model.kind))["test"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", cfg.tracking.uri)  # runs:/ URIs resolve there, in this test only
    for model in (
        SentenceTransformer(str(best)),
        mlflow.sentence_transformers.load_model(f"runs:/{run.info.run_id}/{name}"),
    ):
        assert float(test(model)["stsb_test_spearman_cosine"]) == pytest.approx(logged, abs=1e-6)

    out = tmp_path / "scores.csv"
    overrides = [f"paths.root={cfg.paths.root}", "data.validation.max_samples=200", "data.test.max_samples=200"]
    assert evaluate_main(["--study", "keep_best", "--run-id", run.info.run_id, "--out", str(out), *overrides]) == 0
    scores = pd.read_csv(out)
    assert scores.source.tolist() == ["study", "mlflow"]
    assert scores.stsb_test_spearman.tolist() == pytest.approx([logged, logged], abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["all", "none"])
def test_all_keeps_one_model_per_trial_and_none_keeps_nothing(compose_cfg, mode):
    cfg = compose_cfg(f"name=keep_{mode}", "+study.search_space.loss.scale=[0,20]", f"trial.save_model={mode}")
    sweep, _ = run_study(cfg)
    directory = kept_models.study_dir(cfg.paths.root, f"keep_{mode}")
    if mode == "none":
        assert not directory.exists()
        return
    kept = sorted(p.name for p in (directory / "trials").iterdir())
    assert kept == [f"trial-{t.number:03d}" for t in sweep.study.trials]
    assert kept_models.read_meta(directory / "best")["trial_number"] == sweep.study.best_trial.number
    for trial in sweep.study.trials:
        SentenceTransformer(str(directory / "trials" / f"trial-{trial.number:03d}"))


@pytest.mark.slow
def test_best_keeps_one_model_on_disk_and_one_in_mlflow_and_prints_its_disk_use(tmp_path, capsys):
    """Every trial that was the best when it finished used to stay logged in MLflow (4 copies after this study), and
    the disk use was not said."""
    grid = ["+experiment=mnrl_scale", *TINY, "study.seeds=[0]", "study.search_space.loss.scale=[1,5,10,20]"]
    done = run_sweep(*grid, "name=keep_one", "tracking.registered_model_name=keep-one", home=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    study = optuna.load_study(study_name="keep_one", storage=f"sqlite:///{tmp_path}/optuna.db")
    values = [t.value for t in sorted(study.trials, key=lambda t: t.number)]
    improvements = sum(v > max(values[:i], default=float("-inf")) for i, v in enumerate(values))
    assert improvements >= 2, "the study must supersede a best model for this test to mean anything"
    best_trial = study.best_trial
    directory = kept_models.study_dir(tmp_path, "keep_one")
    assert [p.name for p in (directory / "trials").iterdir()] == [f"trial-{best_trial.number:03d}"]

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("keep_one").experiment_id
    best_run = best_trial.user_attrs["mlflow_run_id"]
    (logged,) = client.search_logged_models(experiment_ids=[experiment])
    assert logged.source_run_id == best_run and logged.name == f"trial-{best_trial.number:03d}"
    models = Path(logged.artifact_location.removeprefix("file://")).parent.parent  # <artifact root>/models
    with_files = [p.name for p in models.iterdir() if any(f.is_file() for f in p.rglob("*"))]
    assert with_files == [logged.model_id], "a superseded model's artifacts stay on disk"
    (version,) = client.search_model_versions("name='keep-one'")
    assert version.run_id == best_run
    tagged = client.search_runs([experiment], f"tags.`{TAG_MODEL_LOGGED}` = 'true'")
    assert [r.info.run_id for r in tagged] == [best_run]
    first = min(study.trials, key=lambda t: t.number)  # the first trial was the best once, and is superseded
    assert first.number != best_trial.number
    removed = client.get_run(first.user_attrs["mlflow_run_id"]).data.tags["sweep.model_removed"]
    better = {t.number: t.value for t in study.trials}[int(removed.removeprefix("superseded by trial-"))]
    assert better > first.value, removed  # the best when it was removed
    rescore = ["--run-id", first.user_attrs["mlflow_run_id"], f"paths.root={tmp_path}"]
    with pytest.raises(SystemExit) as refused:
        evaluate_main(rescore)
    assert refused.value.code == 1
    assert (
        f"its model was removed from MLflow, {removed}; rescore the study's best with --study"
        in capsys.readouterr().err
    )

    kept = sum(f.stat().st_size for f in (directory / "trials").rglob("*") if f.is_file()) / 1e6
    in_mlflow = sum(f.stat().st_size for f in (tmp_path / "mlartifacts").rglob("*") if f.is_file()) / 1e6
    assert done.stdout.splitlines()[-1] == (
        f"Disk use: {kept + in_mlflow:.1f} MB (kept models {kept:.1f} MB, MLflow artifacts {in_mlflow:.1f} MB)"
    )
    assert in_mlflow < 1.5 * kept, "one copy of the model in MLflow, not one per improvement"


RUN_ID = "no-mlflow"  # keep() records the run a model was logged on; nothing is logged here


@pytest.fixture
def store_cfg(compose_cfg):
    cfg = compose_cfg("name=crash")
    return cfg, build_model(cfg.model, seed=0, device="cpu")


def test_crash_between_write_and_rename_keeps_the_old_best(store_cfg, monkeypatch):
    cfg, model = store_cfg
    kept_models.keep(keeping(cfg), model, 0.5, {}, trial_number=0, run_id=RUN_ID)
    best = kept_models.best_path(cfg.paths.root, "crash")

    def crash(*args):
        raise OSError("simulated crash before the rename")

    with monkeypatch.context() as patch:
        patch.setattr(kept_models.os, "rename", crash)
        with pytest.raises(OSError, match="simulated"):
            kept_models.keep(keeping(cfg), model, 0.9, {}, trial_number=1, run_id=RUN_ID)
    assert kept_models.read_meta(best)["trial_number"] == 0
    assert list(best.parent.glob(".tmp-*")), "the half-done save is left behind..."
    SentenceTransformer(str(best))

    kept_models.keep(keeping(cfg), model, 0.4, {}, trial_number=2, run_id=RUN_ID)  # not better: kept out
    assert not list(best.parent.glob(".tmp-*")), "...and removed by the next save"
    kept_models.keep(keeping(cfg), model, 0.7, {}, trial_number=3, run_id=RUN_ID)
    assert kept_models.read_meta(best)["trial_number"] == 3
    assert [p.name for p in (best.parent / "trials").iterdir()] == ["trial-003"]


KILLED_SAVE = """
import sys, time
from pathlib import Path
from omegaconf import OmegaConf
from sweep.training import kept_models
from tests.conftest import TINY
from tests.helpers import keeping, run_sweep
from sweep.inputs.model import build_model

cfg = OmegaConf.load(sys.argv[1])
model = build_model(cfg.model, seed=0, device="cpu")
real_save = model.save

def slow_save(path, *args, **kwargs):
    real_save(path, *args, **kwargs)
    Path(sys.argv[2]).write_text(path)  # the folder is written: signal the test, then hang before the rename
    time.sleep(120)

model.save = slow_save

kept_models.keep(keeping(cfg), model, 0.9, {}, trial_number=1, run_id="killed")
"""


def test_killing_a_worker_while_it_saves_leaves_the_old_best(store_cfg, tmp_path):
    cfg, model = store_cfg
    kept_models.keep(keeping(cfg), model, 0.5, {}, trial_number=0, run_id=RUN_ID)
    best = kept_models.best_path(cfg.paths.root, "crash")
    config, marker, script = tmp_path / "cfg.yaml", tmp_path / "saving", tmp_path / "killed_save.py"
    config.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    script.write_text(KILLED_SAVE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen([sys.executable, str(script), str(config), str(marker)], env=env)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists() and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), "the worker reached the save"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    assert Path(marker.read_text()).is_dir(), "a complete-looking temporary folder was left, never published"
    assert kept_models.read_meta(best)["trial_number"] == 0
    SentenceTransformer(str(best))
    kept_models.keep(keeping(cfg), model, 0.6, {}, trial_number=2, run_id=RUN_ID)  # the lock died with the worker
    assert kept_models.read_meta(best)["trial_number"] == 2
    assert not list(best.parent.glob(".tmp-*"))
