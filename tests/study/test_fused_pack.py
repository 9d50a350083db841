"""Fused packs (`study.pack=K` with `study.fuse=true`, the default): the static-model MNRL members of a pack train as
one fused model and each equals the same trial run alone (Optuna and MLflow records, histories and scores); a member
that diverges or is pruned leaves and the others go on; members of other seeds fuse on their own batches; a trial
that cannot fuse trains in lockstep turns and the log names why."""

from __future__ import annotations

import logging

import pytest
from optuna.trial import TrialState

import sweep.study.lifecycle as lifecycle
from sweep.names import ATTR_FAIL_REASON
from tests.study.test_pack import PruneScale, assert_same_trial, by_scale
from tests.study.test_study import run_study

# a static model small enough for a test: a random 30522 x 16 table, at its own learning rate
STATIC = ("model=static_minilm", "model.static_init=random", "model.embedding_dim=16", "trial.learning_rate=0.05")
FUSED = "sweep.training.fused_group"


def fused_packs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == FUSED and "one fused pack" in r.getMessage()]


@pytest.mark.slow
def test_fused_members_equal_the_same_trials_run_alone(compose_cfg, caplog):
    """Two scales x two seeds in one pack of 4: the seeds read their own batches, and every member matches its trial
    run alone."""
    grid = ("+study.search_space.loss.scale=[5,20]", "study.seeds=[0,1]")
    alone_cfg = compose_cfg(*STATIC, *grid, "name=alone", "study.pack=1")
    run_study(alone_cfg)
    alone = by_scale(alone_cfg, seeds=True)
    caplog.set_level(logging.INFO, logger=FUSED)
    cfg = compose_cfg(*STATIC, *grid, "name=fused", "study.pack=4")
    _, table = run_study(cfg)
    assert (table.state == "COMPLETE").all() and len(table) == 4
    assert fused_packs(caplog) == [f"trials {', '.join(str(n) for n in range(4))} train as one fused pack of 4"]
    packed = by_scale(cfg, seeds=True)
    assert packed.keys() == alone.keys()
    for point in alone:
        assert_same_trial(packed[point], alone[point], rel=1e-4, tolerance=1e-4)


@pytest.mark.slow
@pytest.mark.usefixtures("diverging_scales")
def test_a_diverged_or_pruned_member_leaves_the_fused_pack_and_the_others_go_on(compose_cfg, caplog):
    alone_cfg = compose_cfg(*STATIC, "+study.search_space.loss.scale=[5]", "name=alone5", "stats.enabled=false")
    run_study(alone_cfg)
    caplog.set_level(logging.INFO, logger=FUSED)
    grid = "+study.search_space.loss.scale=[5,50,1e40]"
    cfg = compose_cfg(*STATIC, grid, "name=mixed", "study.pack=3", "stats.enabled=false")
    sweep = lifecycle.open_sweep(cfg)
    sweep.study.pruner = PruneScale(50.0)
    sweep.run()
    lifecycle.finish(sweep)
    assert len(fused_packs(caplog)) == 1
    trials = by_scale(cfg)
    assert trials[50.0]["trial"].state == TrialState.PRUNED
    assert trials[1e40]["trial"].state == TrialState.FAIL
    assert trials[1e40]["trial"].user_attrs[ATTR_FAIL_REASON].startswith("diverged")
    assert len(sweep.study.trials) == 3, "divergence is not retried"
    assert_same_trial(trials[5.0], by_scale(alone_cfg)[5.0], rel=1e-4, tolerance=1e-4)


@pytest.mark.slow
def test_a_trial_that_cannot_fuse_trains_in_turns_and_the_log_says_why(compose_cfg, caplog):
    """More steps than one pass over the rows (64 rows in batches of 8), then the tiny BERT, then fusing off."""
    caplog.set_level(logging.INFO, logger=FUSED)
    grid = "+study.search_space.loss.scale=[5,20]"
    cases = {
        "steps": (
            (*STATIC, "trial.max_steps=10"),
            "10 steps are more than one pass over the training rows (8 batches)",
        ),
        "transformer": ((), "the model is not a static embedding model"),
    }
    for name, (overrides, reason) in cases.items():
        caplog.clear()
        _, table = run_study(compose_cfg(*overrides, grid, f"name={name}", "study.pack=2", "stats.enabled=false"))
        assert (table.state == "COMPLETE").all() and len(table) == 2
        turns = [r.getMessage() for r in caplog.records if r.name == FUSED]
        assert len(turns) == 2 and all(reason in line for line in turns), turns
    caplog.clear()
    run_study(compose_cfg(*STATIC, grid, "name=off", "study.pack=2", "study.fuse=false", "stats.enabled=false"))
    assert not [r for r in caplog.records if r.name == FUSED], "fusing off: the pack takes turns and says nothing"
