"""What optuna-dashboard reads from a study: the objective's name, numeric grid values, and a seed that counts for no
hyperparameter importance; and a study begun before those (categorical grids, no name) still reruns."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from sweep.evaluation.objective import objective_name
from sweep.study.lifecycle import finish, open_sweep
from tests.helpers import run_study

GRID = ("+study.search_space.loss.scale=[2,10]", "study.seeds=[0,1]", "stats.enabled=false")


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ((), "stsb_validation_spearman"),
        (("eval.objective=grid_mean",), "stsb_validation_spearman_grid_mean"),
        (("eval.objective=cell", "eval.cell=L1_D16"), "stsb_validation_spearman_L1_D16"),
    ],
)
def test_the_objective_is_named_after_the_metric_it_is(compose_cfg, overrides, name):
    cfg = compose_cfg(*overrides)
    assert objective_name(cfg.eval, cfg.study.metric) == name


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:PedAnovaImportanceEvaluator computes")
def test_the_objective_is_named_scales_are_numbers_and_seeds_count_for_no_importance(compose_cfg):
    sweep, _ = run_study(compose_cfg(*GRID, "name=dashboard"))
    study = sweep.study
    assert study.metric_names == ["stsb_validation_spearman"], "not 'Objective 0'"
    trials = study.get_trials(states=(TrialState.COMPLETE,))
    points = sorted((t.params["loss.scale"], t.params["trial.seed"]) for t in trials)
    assert points == [(2, 0), (2, 1), (10, 0), (10, 1)]
    for trial in trials:
        assert trial.distributions["loss.scale"] == IntDistribution(2, 10), "ordered 2, 10 as numbers, not as text"
        assert trial.distributions["trial.seed"].single(), "the seed is the trial's one value, not a choice"
    importances = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), target=lambda t: -t.value
    )  # as optuna-dashboard computes them
    assert importances["trial.seed"] == 0.0


@pytest.mark.slow
def test_a_study_begun_with_categorical_grids_reruns_and_gets_its_objective_name(compose_cfg, monkeypatch):
    cfg = compose_cfg(*GRID, "name=begun_before")
    monkeypatch.setattr(optuna.Study, "set_metric_names", lambda study, names: None)  # studies were not named
    sweep = open_sweep(cfg)
    old = optuna.load_study(study_name="begun_before", storage=cfg.study.storage)
    trial = old.ask()  # the first queued point, asked as the code before asked grids: categorical choices
    for name, values in sweep.space.items():
        trial.suggest_categorical(name, values)
    old.tell(trial, 0.5)
    finish(sweep)
    monkeypatch.undo()

    sweep, table = run_study(compose_cfg(*GRID, "name=begun_before"))
    assert sweep.study.metric_names == ["stsb_validation_spearman"]
    assert list(table.state) == ["COMPLETE"] * 4, "the three other points trained, the old one not again"
    for trial in sweep.study.trials:
        assert isinstance(trial.distributions["loss.scale"], CategoricalDistribution), "the study's kind is kept"
        assert isinstance(trial.distributions["trial.seed"], CategoricalDistribution)
