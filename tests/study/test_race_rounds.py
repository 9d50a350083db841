"""A race's rounds in the Optuna storage (`sweep.study.race.Race.advance`), without training: trials are told their
objective by hand (`eval.objective` other than full: the rounds compare the objective over seeds), and a stand-in for
the study's tracking records the tags it is asked to set."""

from __future__ import annotations

import json
from types import SimpleNamespace

import optuna
import pytest

from sweep.names import ATTR_NOT_RETRIED, ATTR_RACE, PARAM_SEED, TAG_RACE, TAG_RACE_ELIMINATED_AFTER
from sweep.stats.race import ONE_LEFT
from sweep.study import grid_queue
from sweep.study.race import Race

SPACE = {"loss.scale": [0, 19, 20], PARAM_SEED: [0, 1, 2]}
# per-seed objective: scale 0 is 0.2 below on both seeds (the scale x seed error, 2 df, puts it out after 2 seeds);
# 19 and 20 differ by a seed-dependent amount (0 and 0.01) too small to rank and too uncertain to call equivalent
VALUES = {0: [0.5, 0.51, 0.5], 19: [0.7, 0.71, 0.7], 20: [0.7, 0.72, 0.701]}
SETTINGS = {"min_seeds": 2, "level": 0.95, "margin": 0.01, "resamples": 100, "seed": 0}


@pytest.fixture
def race(tmp_path):
    study = optuna.create_study(storage=f"sqlite:///{tmp_path}/optuna.db", direction="maximize")
    study.set_user_attr(ATTR_RACE, SETTINGS)
    grid_queue.enqueue_grid(study, SPACE, 0, seeds=[0, 1])
    tags: list[tuple[str, str, str]] = []
    tracker = SimpleNamespace(  # the study's tracking (`sweep.study.StudyLogger`), recording the tags it sets
        parent_run_id="parent",
        set_tag=lambda run, key, value: tags.append((run, key, value)),
        flush=lambda: None,
    )
    made = Race("grid_mean", "maximize", SPACE, study, tracker)  # type: ignore[arg-type]
    made.tags = tags  # type: ignore[attr-defined]
    return made


def train_queued(study: optuna.Study, diverge: tuple[int, int] | None = None, fail: tuple[int, int] | None = None):
    """Pop every queued trial and tell it its value (or fail it: diverged, or with a retryable error)."""
    while study.get_trials(states=(optuna.trial.TrialState.WAITING,)):
        trial = study.ask()
        point = grid_queue.queued_point(study, trial)
        scale, seed = point["loss.scale"], point[PARAM_SEED]
        trial.set_user_attr("mlflow_run_id", f"run-{scale}-{seed}")
        if (scale, seed) in (diverge, fail):
            trial.set_user_attr(ATTR_NOT_RETRIED, (scale, seed) == diverge)
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, VALUES[scale][seed])


def key(scale: int) -> str:
    return json.dumps({"loss.scale": scale})


def test_a_round_drops_the_worse_point_queues_the_next_seed_for_the_rest_and_drops_a_diverged_one(race):
    train_queued(race.study)
    assert race.advance(), "round 2 decided, seed 2 queued for the survivors"
    assert race.study.user_attrs["sweep.race.round_2"]["eliminated"] == [key(0)]
    queued = [grid_queue.grid_point(t) for t in race.study.get_trials(states=(optuna.trial.TrialState.WAITING,))]
    assert sorted((p["loss.scale"], p[PARAM_SEED]) for p in queued) == [(19, 2), (20, 2)]
    assert (
        race.dropped({"loss.scale": 0, PARAM_SEED: 2}) == "after 2 seeds" and race.dropped({"loss.scale": 19}) is None
    )
    assert race.advance(), "a round that is not trained yet is not decided again"
    assert "sweep.race.round_3" not in race.study.user_attrs

    train_queued(race.study, diverge=(19, 2))
    assert not race.advance(), "the race is over"
    last = race.study.user_attrs["sweep.race.round_3"]
    assert last["failed"] == [key(19)] and last["kept"] == [key(20)] and last["ended"] == {"": ONE_LEFT}
    line = (
        "race: eliminated after 2 seeds: 0; failed for good (diverged) after 3 seeds: 19; "
        f"ended after 3 seeds ({ONE_LEFT}): 20 left"
    )
    assert race.lines() == [line]
    assert ("run-0-0", TAG_RACE_ELIMINATED_AFTER, "2") in race.tags and ("parent", TAG_RACE, line) in race.tags
    assert not [t for t in race.tags if t[0].startswith("run-19") or t[0].startswith("run-20")]


def test_a_round_with_a_point_whose_retries_ran_out_waits_for_the_rerun(race):
    train_queued(race.study, fail=(20, 1))
    assert not race.advance()
    assert not race.rounds(), "nothing decided without that point"
    grid_queue.requeue_exhausted(race.study)  # the rerun queues it again
    assert race.advance(), "queued: the round is trained first"
    train_queued(race.study)
    assert race.advance() and race.rounds()[2]["eliminated"] == [key(0)]
