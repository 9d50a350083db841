"""What optuna-dashboard reads from a study: the objective's name."""

from __future__ import annotations

import optuna
import pytest

from sweep.evaluation.objective import objective_name
from tests.helpers import run_study

GRID = ("+study.search_space.loss.scale=[2,10]", "stats.enabled=false")


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ((), "stsb_validation_spearman"),
        (("eval.objective=grid_mean",), "stsb_validation_spearman_grid_mean"),
        (("eval.objective=cell", "eval.cell=L1_D16"), "stsb_validation_spearman_L1_D16"),
    ],
)
def test_the_objective_is_named_after_the_metric_it_is(compose_cfg, overrides, name):
    assert objective_name(compose_cfg(*overrides)) == name


def test_the_objective_is_named_also_in_a_study_created_before(compose_cfg, monkeypatch):
    monkeypatch.setattr(optuna.Study, "set_metric_names", lambda study, names: None)  # studies were not named
    sweep, _ = run_study(compose_cfg(*GRID, "name=begun_before"))
    assert sweep.study.metric_names is None
    monkeypatch.undo()
    sweep, _ = run_study(compose_cfg(*GRID, "name=begun_before"))
    assert sweep.study.metric_names == ["stsb_validation_spearman"], "not 'Objective 0'"
