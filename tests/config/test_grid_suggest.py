"""How a trial asks Optuna for its grid point (`search_space.suggest`): numeric grids as numbers with the grid's exact
values, other grids as categorical choices, the seed as its one value."""

from __future__ import annotations

import os
from typing import Any

import optuna
import pytest
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from sweep.config import search_space
from sweep.config.checks import MAX_WORKERS, usable_cores, worker_threads
from sweep.errors import ConfigError
from sweep.study.grid_queue import grid_point
from sweep.study.validation import check_config


def ask_enqueued(
    space: search_space.Space, point: dict[str, Any], categorical: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], optuna.trial.FrozenTrial]:
    """(the params `suggest` returns, the trial as stored) of a trial enqueued with `point`, as the grid queue does."""
    study = optuna.create_study()
    study.enqueue_trial(point)
    params = search_space.suggest(study.ask(), space, point, categorical)
    return params, study.trials[0]


@pytest.mark.parametrize(
    ("values", "enqueued", "expected", "distribution"),
    [
        ([0, 1, 2, 10, 15, 20], 20, 20, IntDistribution(0, 20)),
        ([0.01, 0.05, 0.1], 0.05, 0.05, FloatDistribution(0.01, 0.1)),
        ([0.5, 20], 20, 20, FloatDistribution(0.5, 20.0)),
        ([0.5, 20], 20.0, 20, FloatDistribution(0.5, 20.0)),  # requeued from the stored trial (20.0)
    ],
)
def test_numeric_grids_are_asked_as_numbers_and_keep_their_exact_values(
    values: list[Any], enqueued: Any, expected: Any, distribution: BaseDistribution
) -> None:
    params, stored = ask_enqueued({"loss.scale": values}, {"loss.scale": enqueued})
    assert params == {"loss.scale": expected} and type(params["loss.scale"]) is type(expected)
    assert stored.distributions["loss.scale"] == distribution, "numbers: optuna-dashboard orders them as numbers"
    assert grid_point(stored) == {"loss.scale": expected}, "the grid queue still finds the point"


@pytest.mark.parametrize("values", [[True, False], ["mean", "cls"], [None, 1], [1, "a"], [0, True]])
def test_other_grids_stay_categorical(values: list[Any]) -> None:
    params, stored = ask_enqueued({"key": values}, {"key": values[-1]})
    assert params["key"] == values[-1] and type(params["key"]) is type(values[-1])
    assert stored.distributions["key"] == CategoricalDistribution(values)


@pytest.mark.filterwarnings("ignore:PedAnovaImportanceEvaluator computes")
def test_the_seed_is_asked_as_its_one_value_and_counts_for_no_importance() -> None:
    space = search_space.parse({"loss": {"scale": [0, 20]}, "trial": {"seed": [0, 1, 2]}})
    study = optuna.create_study(direction="maximize")
    for point in search_space.grid_points(space):
        study.enqueue_trial(point)
    for point in search_space.grid_points(space):
        params = search_space.suggest(trial := study.ask(), space, point)
        study.tell(trial, params["trial.seed"] - params["loss.scale"] / 100)  # the seed matters more than the scale
    for trial in study.trials:
        seed = trial.params["trial.seed"]
        assert trial.distributions["trial.seed"] == IntDistribution(seed, seed)
    importances = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), target=lambda t: -t.value
    )  # what optuna-dashboard computes
    assert importances["trial.seed"] == 0.0 and importances["loss.scale"] > 0


def test_lists_stay_categorical_outside_a_grid_and_where_the_study_has_them_so() -> None:
    space: search_space.Space = {"loss.scale": [0, 20]}
    study = optuna.create_study()
    search_space.suggest(study.ask(), space)  # no point: the sampler draws from the list
    assert study.trials[0].distributions["loss.scale"] == CategoricalDistribution([0, 20])
    _, legacy = ask_enqueued(space, {"loss.scale": 20}, categorical=frozenset({"loss.scale"}))
    assert legacy.distributions["loss.scale"] == CategoricalDistribution([0, 20])


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("[10,inf]", "inf is not a finite number"),  # was accepted: its trials diverged until killed (issue 52)
        ("[10,-inf]", "-inf is not a finite number"),
        ("[10,20,10]", "lists 10 twice"),  # was trained once, and no line said it was listed twice
        ("[10,10.0]", "lists 10.0 twice"),
    ],
)
def test_a_grid_that_would_not_train_as_listed_is_refused_before_any_work(compose_cfg, grid, message):
    cfg = compose_cfg("+experiment=mnrl_scale", f"study.search_space.loss.scale={grid}")
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    assert error.value.key == "study.search_space.loss.scale" and message in str(error.value), str(error.value)
    assert "\n" not in str(error.value)


def test_a_boolean_and_the_number_one_are_two_grid_values():
    space = search_space.parse({"model": {"normalize": [True, 1]}})
    assert space["model.normalize"] == [True, 1]


def test_more_workers_than_cores_are_refused_before_any_work(compose_cfg):
    """`study.n_workers=1000` started 999 processes (issue 52): the count is bounded by the usable cores."""
    cores = usable_cores()
    check_config(compose_cfg(f"study.n_workers={min(cores, MAX_WORKERS)}"), load=False)
    with pytest.raises(ConfigError) as error:
        check_config(compose_cfg("study.n_workers=1000"), load=False)
    assert error.value.key == "study.n_workers" and f"the {cores} CPU cores" in str(error.value)


def test_each_worker_gets_its_share_of_the_cores_this_process_may_use(monkeypatch):
    """The torch threads of a worker came from the host's core count (`os.cpu_count`) while `study.n_workers` was
    bounded by the process's own cores: a task given 4 of 64 cores ran 2 workers at 32 threads each."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert usable_cores() == 4
    assert [worker_threads(n) for n in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]
