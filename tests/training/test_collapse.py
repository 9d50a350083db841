"""A model that collapses in training (every validation pair scored alike, its Spearman noise) is flagged, never kept
as the study's best, named in the summary, and the study still ends with its paired comparison."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.config import checks
from sweep.inputs.model import build_model
from sweep.names import TAG_COLLAPSE_REASON, TAG_COLLAPSED
from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
from sweep.study_command import paired_summary, summary
from sweep.training import kept_models
from tests.helpers import keeping, run_study, trial_runs
from tests.training.test_model_store import RUN_ID


def test_the_collapse_rule_separates_constant_cosines_from_narrow_healthy_ones():
    healthy = np.random.default_rng(0).normal(0.95, 0.02, size=500)  # a random tiny BERT: 0.88 to 0.99, std 0.020
    assert collapse_reason(healthy) is None
    noise = 1.0 - np.abs(np.random.default_rng(1).normal(0, 1e-7, size=500))  # float32 rounding around 1.0
    assert collapse_reason(noise).startswith("cosine std ") and f"< {COLLAPSE_STD:g}" in collapse_reason(noise)
    assert collapse_reason(np.ones(10)) == "cosine std 0.0e+00 < 0.0001: every pair scores about 1.0000"
    assert collapse_reason(np.array([0.5, np.nan])) == "a cosine is not finite"


def test_a_collapsed_trial_is_never_the_kept_best_even_with_the_higher_score(compose_cfg, tmp_path):
    """Its noise Spearman may beat a healthy trial's (tiny BERT collapsed at 0.21 against healthy ones near 0.1)."""
    cfg = compose_cfg("name=collapsed_store", "trial.save_model=all")
    model = build_model(cfg.model, seed=0, device="cpu")
    kept_models.keep(keeping(cfg), model, 0.1, {}, trial_number=0, run_id=RUN_ID)
    reason = "cosine std 7.4e-07 < 0.0001: every pair scores about 1.0000"
    kept = kept_models.keep(keeping(cfg), model, 0.9, {}, reason, trial_number=1, run_id=RUN_ID)
    best = kept_models.best_path(cfg.paths.root, "collapsed_store")
    assert kept_models.read_meta(best)["trial_number"] == 0
    assert kept is not None and not kept.is_best  # mode all: kept, not best
    assert kept_models.read_meta(kept.path)["collapsed"] == reason


@pytest.mark.slow
def test_a_study_whose_models_collapse_flags_them_keeps_none_and_ends_with_its_comparison(compose_cfg, monkeypatch):
    """The defect in small: `model=minilm` trained at the static model's learning rate collapsed (every validation
    cosine 1.0, Spearman 0.004), was kept as "Best model", and the paired comparison then raised ``All-NaN slice
    encountered``. A random tiny BERT at learning rate 2 collapses the same way in 4 steps (cosine std below 1e-5,
    Spearman 0.05 to 0.09 of noise) at both scales."""
    monkeypatch.setattr(checks, "MAX_TRANSFORMER_LEARNING_RATE", 10.0)  # the guard refuses this rate: lift it
    cfg = compose_cfg("trial.learning_rate=2.0", "+study.search_space.loss.scale=[1,20]", "name=collapse")
    sweep, table = run_study(cfg)
    assert table["state"].tolist() == ["COMPLETE", "COMPLETE"] and table["collapsed"].all()

    _, (parent,), children = trial_runs(cfg)
    for child in children:
        assert child.data.tags[TAG_COLLAPSED] == "true"
        assert child.data.tags[TAG_COLLAPSE_REASON].startswith("cosine std ")
    assert not kept_models.best_path(cfg.paths.root, "collapse").exists()
    assert kept_models.parent_tags(keeping(cfg)) == {}
    assert parent.data.metrics["n_collapsed_trials"] == 2 and "best_objective" not in parent.data.metrics

    text = summary(sweep, table)
    assert (
        "collapsed (every validation pair scored alike: Spearman is noise; never the best, not kept as the best "
        in text
    )
    assert "model): trials 0, 1\nbest: none, every complete trial collapsed" in text
    assert "Best model:" not in text and "best single trial" not in text
    assert paired_summary(sweep, table) == [
        "STSB validation Spearman: no best scale: none is scoreable; not scoreable (collapsed: cosine std < 0.0001 "
        "with some seed): 1, 20"
    ]
