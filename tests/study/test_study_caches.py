"""What a study computes once (tokenized batches, step-0 evaluation) must give exactly what each trial would
compute on its own."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from datasets import Dataset
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState
from transformers import TrainerCallback

import sweep.training.trial as trial_module
from sweep.evaluation import layer_grid
from sweep.evaluation.extra_sets import build_evaluator
from sweep.inputs.model import build_model
from sweep.inputs.preprocess_cache import PreprocessCache
from sweep.names import ATTR_MLFLOW_RUN_ID, ATTR_TIME_PHASES, ATTR_WALL_TIME_S
from sweep.stats.probe import heldout_pairs
from sweep.study.lifecycle import open_sweep
from sweep.training.resources import stsb_evaluator
from sweep.training.step_clock import AFTER, BEFORE, OUTSIDE_SHARE, STEPS, span_metric

SENTENCES = ["a man is playing a guitar", "a woman slices an onion", "the cat sleeps", "a man is playing a guitar"]


def test_cached_preprocess_gives_the_same_embeddings_and_fresh_dicts(compose_cfg) -> None:
    cfg = compose_cfg()
    cache = PreprocessCache()
    plain = build_model(cfg.model, seed=0, device="cpu")
    cached = cache.install(build_model(cfg.model, seed=0, device="cpu"))
    for _ in range(2):
        np.testing.assert_array_equal(cached.encode(SENTENCES, batch_size=2), plain.encode(SENTENCES, batch_size=2))
    assert cache.misses == 2 and cache.hits == 2  # length-sorted batches of 2, tokenized once each

    first = cached.preprocess(SENTENCES[:2])
    first["sentence_embedding"] = "added by a module"
    assert "sentence_embedding" not in cached.preprocess(SENTENCES[:2])


def test_fifo_bound() -> None:
    cache = PreprocessCache(max_batches=2)
    calls: list[tuple[str, ...]] = []
    preprocess = cache._wrap(lambda inputs, prompt=None, **kwargs: calls.append(tuple(inputs)) or {"n": len(calls)})
    for batch in (["a"], ["b"], ["a"], ["c"], ["a"], ["b"]):
        preprocess(batch)
    # "a" hits once; "c" evicts "a", so "a" is tokenized again and then evicts "b"
    assert calls == [("a",), ("b",), ("c",), ("a",), ("b",)]


def _trial_metrics(tracking_uri: str, name: str) -> dict[float, dict[str, float]]:
    """Per scale, the step-0 and final metrics of the study's trial runs."""
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(name)
    runs = [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get("sweep.role") == "trial"]
    out = {}
    for run in runs:
        initial = client.get_metric_history(run.info.run_id, "stsb_validation_spearman")
        out[float(run.data.params["loss.scale"])] = {
            **{k: v for k, v in run.data.metrics.items() if k.startswith("sim_") or k.startswith("stsb_")},
            "step0": next(m.value for m in initial if m.step == 0),
        }
    return out


SAME_LOSS_SCALES = ("stats.loss_scales=[1,20]",)  # sim_loss_at_scale_* follow the grid unless set


@pytest.mark.slow
def test_second_trial_reuses_the_caches_and_matches_a_trial_run_alone(compose_cfg) -> None:
    together = open_sweep(
        compose_cfg(
            "+study.search_space.loss.scale=[1,20]", "name=together", "eval.layer_grid.enabled=true", *SAME_LOSS_SCALES
        )
    )
    together.run()
    caches = list(together.resources._preprocess.values())
    assert len(caches) == 1 and caches[0].hits > caches[0].misses  # the second trial tokenized nothing new
    assert len(together.resources._initial) == 1

    alone = open_sweep(
        compose_cfg(
            "+study.search_space.loss.scale=[20]", "name=alone", "eval.layer_grid.enabled=true", *SAME_LOSS_SCALES
        )
    )
    alone.run()
    shared, single = (
        _trial_metrics(together.cfg.tracking.uri, "together"),
        _trial_metrics(alone.cfg.tracking.uri, "alone"),
    )
    assert shared[1.0]["step0"] == shared[20.0]["step0"]
    assert set(shared[20.0]) == set(single[20.0]) and any(k.endswith("_init") for k in single[20.0])
    for key, value in single[20.0].items():
        assert shared[20.0][key] == pytest.approx(value, abs=1e-6), key
    # the untrained model's statistics were computed once and moved to the other trial's scale
    (initial,) = together.resources._initial.values()
    assert initial.encodings is not None and len(initial.encodings.statistics) == 1
    assert [shared[s]["sim_softmax_scale_init"] for s in (1.0, 20.0)] == [1.0, 20.0]
    assert shared[1.0]["sim_uniformity_init"] == shared[20.0]["sim_uniformity_init"]
    assert shared[1.0]["sim_softmax_entropy_init"] != shared[20.0]["sim_softmax_entropy_init"]


@pytest.mark.slow
def test_the_trainers_garbage_collection_skips_what_the_study_loaded(compose_cfg, monkeypatch) -> None:
    """The trainer collects garbage before each training (accelerate's free_memory): from the second trial on, the
    study's datasets and base model sit in the collector's permanent generation, which that collection skips; the
    study's end gives them back."""
    frozen_at_training: list[int] = []

    class Watch(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            frozen_at_training.append(gc.get_freeze_count())

    freezes: list[int] = []
    freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1) or freeze())
    monkeypatch.setattr(trial_module, "member_callbacks", lambda: [Watch()])
    gc.unfreeze()
    sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[1,20,50]", "name=frozen"))
    sweep.run()
    assert frozen_at_training[0] == 0 and all(count > 0 for count in frozen_at_training[1:])
    assert len(freezes) == 1  # nothing new loaded after the first trial: the third froze nothing more
    base_model = next(iter(sweep.resources._models.values()))
    assert gc.get_freeze_count() == 0 and any(o is base_model for o in gc.get_objects())


@pytest.mark.slow
def test_each_trial_records_its_time_before_in_and_after_its_training_steps(compose_cfg) -> None:
    sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[1,20]", "name=phases"))
    sweep.run()
    client = MlflowClient(sweep.cfg.tracking.uri)
    for trial in sweep.study.get_trials(states=[TrialState.COMPLETE]):
        phases, wall = trial.user_attrs[ATTR_TIME_PHASES], trial.user_attrs[ATTR_WALL_TIME_S]
        assert phases[BEFORE] > 0 and phases[STEPS] > 0 and phases[AFTER] > 0
        assert phases[BEFORE] + phases[STEPS] + phases[AFTER] == pytest.approx(wall, rel=1e-6)
        assert phases[OUTSIDE_SHARE] == pytest.approx((phases[BEFORE] + phases[AFTER]) / wall)
        assert 0 < phases[span_metric("preparing")] < phases[BEFORE]
        assert 0 < phases[span_metric("final_scoring")] + phases[span_metric("keeping")] < phases[AFTER]
        logged = client.get_run(trial.user_attrs[ATTR_MLFLOW_RUN_ID]).data.metrics
        assert logged[STEPS] == pytest.approx(phases[STEPS]) and logged["trial_wall_time_s"] == pytest.approx(wall)


def test_what_a_study_encodes_again_and_again_is_plain_lists_not_lazy_dataset_columns(monkeypatch) -> None:
    """A dataset column is a lazy view that every evaluation would iterate row by row again (the held-out pairs'
    encoding took 55 ms per 1,024 sentences that way): the STSB and extra-set evaluators, the held-out pairs of
    the statistics and the layer grid get plain lists, with the dataset's values."""
    dataset = Dataset.from_dict({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [0.25, 1.0]})
    kinds = [list] * 3
    evaluator = stsb_evaluator(dataset, "stsb_validation", batch_size=2)
    assert [type(column) for column in (evaluator.sentences1, evaluator.sentences2, evaluator.scores)] == kinds
    assert evaluator.sentences1 == ["a", "b"] and evaluator.scores == [0.25, 1.0]
    extra = build_evaluator({"name": "sts_ood", "kind": "scored_pairs"}, dataset, batch_size=2)
    assert [type(column) for column in (extra.sentences1, extra.sentences2, extra.scores)] == kinds
    pairs = heldout_pairs(dataset.rename_column("sentence1", "anchor"), high_threshold=0.5)
    assert pairs == [["b"], ["d"]] and [type(column) for column in pairs] == [list] * 2
    given: list[type] = []
    monkeypatch.setattr(
        layer_grid,
        "layer_dim_spearman",
        lambda model, first, second, score, *rest: given.extend(map(type, (first, second, score))),
    )
    layer_grid.stsb_layer_grid(None, dataset, ((1,), (2,)), 2)
    assert given == kinds
