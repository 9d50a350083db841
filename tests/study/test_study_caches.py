"""What a study computes once (tokenized batches, step-0 evaluation) must give exactly what each trial would
compute on its own."""

from __future__ import annotations

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from sweep.inputs.model import build_model
from sweep.inputs.preprocess_cache import PreprocessCache
from sweep.study.lifecycle import open_sweep

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
