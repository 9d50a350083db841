"""What the MLflow UI shows of a study, read back through `MlflowClient`: each trial run's dataset inputs (name,
context, digest), its system metrics and its Description (grid point and outcome); the logged models' metrics linked
with their datasets; the kept best model's card (base model, training data, loss and scale, no "Unknown", the
study's verdict, on disk and in MLflow); the registered model's alias ``best``."""

from __future__ import annotations

import threading
from pathlib import Path

import mlflow.artifacts
import pandas as pd
import pytest

from sweep.config.checks import eval_batch_size
from sweep.names import MODEL_ALIAS_BEST, TAG_MODEL_ID, TAG_RUN_DESCRIPTION
from sweep.study import run_words
from sweep.tracking import logged_models
from sweep.tracking.logged_models import CARD_FOLDER
from sweep.tracking.mlflow_client import TrialRun, experiment_id, open_tracking
from sweep.tracking.outage_buffer import BufferedWriter
from sweep.tracking.system_metrics import system_metrics
from sweep.training import kept_models
from sweep.training.resources import StudyResources
from tests.conftest import TINY
from tests.faults.harness import wait_for
from tests.helpers import keeping, mlflow_runs, run_sweep

DATASETS = {  # name: context, for the default data (nli_stsb) and eval=offline_extra
    "nli-triplet": "training",
    "stsb-validation": "evaluation",
    "stsb-test": "evaluation",
    "nli-triplet-heldout": "evaluation",
    "nli_pairs": "evaluation",
    "captions": "evaluation",
}


@pytest.mark.slow
def test_a_study_shows_its_data_system_metrics_descriptions_linked_metrics_card_and_alias(tmp_path):
    done = run_sweep(
        *TINY,
        "model=static_minilm",  # pretrained weights: the card names a base model
        "name=shown",
        "+study.search_space.loss.scale=[1,20]",
        "study.seeds=[0]",
        "eval=offline_extra",
        "eval.extra.0.max_samples=100",
        "eval.extra.1.max_samples=100",
        "tracking.registered_model_name=sweep-shown",
        "tracking.system_metrics_interval_s=0.2",
        "trial.save_model=all",  # a logged model for each trial: the best and one that is not
        home=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    client, (parent,), trials = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "shown")
    assert len(trials) == 2
    digests: dict[str, set[str]] = {}
    for run in trials:
        inputs = run.inputs.dataset_inputs
        assert {i.dataset.name: [t.value for t in i.tags] for i in inputs} == {k: [v] for k, v in DATASETS.items()}
        for item in inputs:
            digests.setdefault(item.dataset.name, set()).add(item.dataset.digest)
        assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(run.data.metrics)
        scale = float(run.data.params["loss.scale"])
        validation, test = run.data.metrics["stsb_validation_spearman"], run.data.metrics["stsb_test_spearman"]
        assert run.data.tags[TAG_RUN_DESCRIPTION] == (
            f"`mnrl` at scale {scale:g} (temperature {1 / scale:g}), seed 0\n\n"
            f"**COMPLETE**: STSB validation {validation:.4f}, test {test:.4f}"
        )
    assert all(len(found) == 1 for found in digests.values()), "every trial reads the same rows"

    logged = client.search_logged_models([parent.info.experiment_id])
    assert len(logged) == 2 and sum(m.tags.get("sweep.study_best") == "true" for m in logged) == 1
    for model in logged:
        run = client.get_run(model.source_run_id)
        (output,) = run.outputs.model_outputs
        assert output.model_id == model.model_id and output.step == 4, "the model is the run's output at its last step"
        linked = {m.key: m for m in model.metrics}
        assert set(linked) >= {"stsb_validation_spearman", "stsb_test_spearman", "objective", "captions_ndcg_at_10"}
        for key, dataset in (("stsb_test_spearman", "stsb-test"), ("captions_ndcg_at_10", "captions")):
            assert (linked[key].dataset_name, linked[key].dataset_digest) == (dataset, *digests[dataset])
            assert (linked[key].value, linked[key].step) == (run.data.metrics[key], 4)
        assert len(client.get_metric_history(run.info.run_id, "stsb_test_spearman")) == 1, "linked, not logged twice"
        point = run.data.tags[TAG_RUN_DESCRIPTION].split("\n")[0]
        if model.tags.get("sweep.study_best") != "true":  # the model page's Description: its trial's grid point
            assert model.tags[TAG_RUN_DESCRIPTION] == f"shown, trial {run.data.tags['sweep.trial_number']}: {point}"

    best_run_id = parent.data.tags["sweep.best_model_run_id"]
    assert client.get_model_version_by_alias("sweep-shown", MODEL_ALIAS_BEST).run_id == best_run_id

    best = kept_models.best_path(tmp_path, "shown")
    card = (best / "README.md").read_text()
    scale = float(client.get_run(best_run_id).data.params["loss.scale"])
    assert "finetuned from [sentence-transformers/all-MiniLM-L6-v2]" in card
    rate = float(client.get_run(best_run_id).data.params["trial.learning_rate"])
    static = (  # the default model is no transformer: the card says so under its first paragraph, with the switch
        "The model is a static embedding (`model.kind=static`, as the default `model=static_minilm`: "
        "`sentence-transformers/all-MiniLM-L6-v2`'s input token embeddings, mean-pooled, no transformer layers), "
        f"trained at learning rate {rate:g}: fast on a CPU, not the transformer. For the transformer itself, run with "
        "`model=minilm` (its learning rate, 2e-05, comes with it)."
    )
    assert f"clustering, and more.\n\n{static}\n\n" in card
    assert "- **Training Dataset:**\n    - nli-triplet" in card
    assert "* Loss: <code>sweep.losses.mnrl.ScaledMultipleNegativesRankingLoss</code>" in card
    assert f'"scale": {scale}' in card
    assert "Unknown" not in card, "base model, training data, language and license are all named"
    trial = parent.data.tags["sweep.best_model_trial"]
    assert f"## The study\n\nThe best model of the sweep study `shown`: trial {trial}, objective " in card
    about, _, verdict = parent.data.tags[TAG_RUN_DESCRIPTION].partition("\n\n")  # the model, the answer lines
    assert about == static, "the study's Description names the model and the switch"
    assert verdict.startswith("- STSB validation Spearman: best scale ") and f"verdict:\n\n{verdict}\n" in card
    best_model = client.get_logged_model(client.get_run(best_run_id).data.tags[TAG_MODEL_ID])
    section = card.partition("<!-- sweep: the study -->\n## The study\n\n")[2].partition("\n<!-- /sweep")[0]
    assert section.startswith(f"The best model of the sweep study `shown`: trial {trial}, ") and verdict in section
    assert best_model.tags[TAG_RUN_DESCRIPTION] == section, "the best model's Description: the study's verdict"
    assert client.get_model_version_by_alias("sweep-shown", MODEL_ALIAS_BEST).description == section
    location = best_model.artifact_location
    copy = mlflow.artifacts.download_artifacts(f"{location}/{CARD_FOLDER}/README.md", dst_path=str(tmp_path / "dl"))
    assert Path(copy).read_text() == card, "the logged model's card carries the verdict too"


def test_the_best_alias_follows_each_new_best_and_the_study_end(compose_cfg):
    # save_model=all: a superseded best stays registered (`best` removes it), for the alias to be moved back to it
    cfg = compose_cfg(
        "model=static_minilm", "name=alias", "tracking.registered_model_name=sweep-alias", "trial.save_model=all"
    )
    client = open_tracking(cfg.tracking)
    exp = experiment_id(client, "alias", cfg.tracking.artifact_location)
    model = StudyResources().model(cfg.model, seed=0, device="cpu")

    def kept(trial: int, value: float) -> TrialRun:
        run = TrialRun(client, exp, "no-parent", "alias", trial, f"trial {trial}")
        run.log_metrics({"objective": value}, step=3)
        found = keeping(cfg)
        kept = kept_models.keep(found, model, value, {"objective": value}, trial_number=trial, run_id=run.run_id)
        assert kept is not None
        logged_models.log_kept(found, kept, model, run, trial, step=3, metrics=["objective"])
        return run

    def alias() -> str:
        return client.get_model_version_by_alias("sweep-alias", MODEL_ALIAS_BEST).run_id

    first = kept(0, 0.5)
    assert alias() == first.run_id
    second = kept(1, 0.7)
    assert alias() == second.run_id, "a better trial moves the alias"
    kept(2, 0.6)
    assert alias() == second.run_id and len(client.search_model_versions("name='sweep-alias'")) == 2
    client.set_registered_model_alias("sweep-alias", MODEL_ALIAS_BEST, "1")  # e.g. another study under the name
    logged_models.mark_study_best(client, second.run_id, "sweep-alias")
    assert alias() == second.run_id, "the study's end points it at the study's best again"


def monitors() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "SystemMetricsMonitor"]


def test_system_metrics_stop_with_the_trial_also_when_it_fails(compose_cfg):
    cfg = compose_cfg("name=system", "tracking.system_metrics_interval_s=0.05")
    client = open_tracking(cfg.tracking)
    run = TrialRun(client, experiment_id(client, "system", None), "no-parent", "system", 0, "trial 0")
    with pytest.raises(RuntimeError, match="the trial failed"), system_metrics(run, cfg.tracking):
        wait_for(lambda: len(client.writer.pending) >= 2, "two samples handed to the writer", every_s=0.01)
        raise RuntimeError("the trial failed")
    assert not monitors(), "the monitor stopped"
    client.writer.flush()
    history = client.get_metric_history(run.run_id, "system/cpu_utilization_percentage")
    assert len(history) >= 2 and [m.step for m in history] == list(range(len(history)))
    off = TrialRun(client, experiment_id(client, "system", None), "no-parent", "system", 1, "trial 1")
    with system_metrics(off, compose_cfg("tracking.system_metrics=false").tracking):
        assert not monitors() and not client.writer.pending, "no monitor samples anything"
    client.writer.flush()
    assert not [k for k in client.get_run(off.run_id).data.metrics if k.startswith("system/")]


def test_a_deferred_write_waits_for_the_next_write_in_order():
    done: list[str] = []
    writer = BufferedWriter("sqlite:///unused.db", outage_timeout_s=1)
    writer.defer("sample", lambda: done.append("sample"))
    assert done == [], "a background thread's write never runs in that thread"
    writer.write("trial", lambda: done.append("trial"))
    assert done == ["sample", "trial"]


def test_the_study_builds_its_mlflow_datasets_once(compose_cfg):
    resources = StudyResources()

    def tracked(cfg):
        batch_size = eval_batch_size(cfg.trial, cfg.model.kind)
        return resources.tracked_data(cfg.data, cfg.stats.heldout_pairs, cfg.eval, batch_size)

    first = tracked(compose_cfg("loss.scale=1"))
    assert tracked(compose_cfg("loss.scale=20")) is first, "another grid point, the same data"
    assert first.scored_on("stsb_validation_spearman").name == "stsb-validation"
    assert first.scored_on("sim_gap") is None
    assert first.training == {"name": "nli-triplet"}


def test_a_trial_description_says_its_grid_point_in_words():
    loss = {"name": "mnrl", "scale": 10.0, "temperature": 0.1}
    params = {"loss.scale": 10.0, "trial.batch_size": 64, "trial.seed": 1}
    assert (
        run_words.trial_description(loss, params) == "`mnrl` at scale 10 (temperature 0.1), seed 1; trial.batch_size 64"
    )
    scheduled = {**loss, "scale": 5.0, "temperature": 0.2, "scale_schedule": {"kind": "cosine"}}
    assert run_words.trial_description(scheduled, {"loss.scale_schedule.spec": "cosine 5-50"}) == (
        "`mnrl` on a cosine scale schedule starting at scale 5 (temperature 0.2); loss.scale_schedule.spec cosine 5-50"
    )
    assert run_words.trial_outcome("PRUNED", "pruned at step 40", {}) == "**PRUNED**: pruned at step 40"


def test_a_dataset_another_worker_inserts_at_the_same_moment_is_still_logged(compose_cfg, monkeypatch):
    """Two workers logging the same dataset at once collide on the experiment's unique (name, digest) key, as in a
    CI run of the tracking-server fault test (the trial failed and was re-queued); a retry finds the other worker's
    row and links it to this run."""
    from mlflow.data.pandas_dataset import from_pandas
    from mlflow.entities import DatasetInput
    from mlflow.exceptions import MlflowException

    client = open_tracking(compose_cfg("name=inputs").tracking)
    run = TrialRun(client, experiment_id(client, "inputs", None), "no-parent", "inputs", 0, "trial 0")
    dataset = from_pandas(pd.DataFrame({"anchor": ["a"], "positive": ["b"]}), name="pairs")._to_mlflow_entity()
    real, calls = client.log_inputs, []

    def collides_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, ...")
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "log_inputs", collides_once)
    run.log_inputs([DatasetInput(dataset)])
    client.writer.flush()
    assert len(calls) == 2
    assert [d.dataset.name for d in client.get_run(run.run_id).inputs.dataset_inputs] == ["pairs"]
