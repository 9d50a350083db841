"""Racing the seeds (`study.race`) on a small static model over the real offline data: the race drops the clearly worse
point after two seeds, keeps two tied ones to the last seed, records every elimination, and gives the trials it ran
the records an unraced study gives them; a run stopped between a round's decision and the next round's queue is
continued by the rerun. (Two workers and a kill in the middle of a round: tests/faults/test_faults_race.py.)"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import optuna
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from sweep.config.checks import CONFIG_DIR
from sweep.errors import ConfigError
from sweep.names import (
    ATTR_MLFLOW_RUN_ID,
    ATTR_RACE,
    ATTR_RACE_STOPPED,
    ATTR_TEST_SPEARMAN,
    ATTR_VALIDATION_SPEARMAN,
    TAG_OPTUNA_STATE,
    TAG_RACE,
    TAG_RACE_ELIMINATED_AFTER,
    TAG_RACE_ROUNDS,
)
from sweep.stats.race import SEEDS_USED
from sweep.study import grid_queue
from sweep.study.lifecycle import finish, open_sweep
from sweep.study_command import paired_summary, summary
from tests.conftest import TINY
from tests.helpers import clear_user_state, run_study, trial_runs

# The static MiniLM embeddings (scale 0, zero gradient: the untrained control) are clearly below any trained scale
# after 16 steps; scales 19 and 20 train alike. The margin 0.001 keeps the tie from ending the race early as
# "equivalent", so 19 and 20 race to the last seed.
RACE = [
    "model=static_minilm",
    "trial.max_steps=16",
    "trial.eval_steps=8",
    "trial.batch_size=32",
    "data.train.max_samples=512",
    "+study.search_space.loss.scale=[0,19,20]",
    "study.seeds=[0,1,2]",
    "stats.paired.margin=0.001",
    "stats.enabled=false",
]
RACED = [*RACE, "study.race.enabled=true"]
LINE = f"race: eliminated after 2 seeds: 0; ended after 3 seeds ({SEEDS_USED}): 19, 20 left"
SAME_METRICS = (ATTR_VALIDATION_SPEARMAN, ATTR_TEST_SPEARMAN, "train_loss")


def compose_race(root: Path, *overrides: str):
    """The config of a race study under ``root``, its tracking URI pinned: the module-scoped fixture runs before the
    function-scoped ``no_user_state``, so a ``MLFLOW_TRACKING_URI`` left by an earlier test (``mlflow.set_tracking_uri``
    sets it) would otherwise decide where the studies log, and the tests read another database."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        uri = f"tracking.uri=sqlite:///{root}/mlflow.db"
        return compose("config", overrides=[*TINY, f"paths.root={root}", uri, *overrides])


def points(study: optuna.Study) -> Counter:
    """(scale, seed) -> how many COMPLETE trials."""
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    return Counter((t.params["loss.scale"], t.params["trial.seed"]) for t in complete)


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The raced study, stopped once between its first decision and its next round, then rerun; the same grid
    unraced."""
    root = tmp_path_factory.mktemp("race")
    with pytest.MonkeyPatch.context() as clean:
        clear_user_state(clean)
        return _race_studies(root)


def _race_studies(root: Path) -> dict:
    cfg = compose_race(root, *RACED, "name=raced")
    first = open_sweep(cfg)
    with pytest.MonkeyPatch.context() as patch:

        def killed(study, point):  # the process dies after recording round 2, before queueing round 3
            raise RuntimeError("killed")

        patch.setattr(grid_queue, "enqueue_point", killed)
        with pytest.raises(RuntimeError, match="killed"):
            first.run()
    stopped = {key: value for key, value in first.study.user_attrs.items() if key.startswith(ATTR_RACE)}
    raced, raced_table = run_study(cfg)  # the rerun
    full, full_table = run_study(compose_race(root, *RACE, "name=full"))
    return {"stopped": stopped, "raced": (raced, raced_table, cfg), "full": (full, full_table)}


@pytest.mark.slow
def test_the_race_drops_the_worse_point_and_keeps_the_tied_ones_to_the_last_seed(studies):
    raced, table, cfg = studies["raced"]
    assert set(studies["stopped"]) == {"sweep.race", "sweep.race.round_2"}, "the first run decided round 2 only"
    assert points(raced.study) == Counter([(0, 0), (0, 1), *((s, seed) for s in (19, 20) for seed in (0, 1, 2))])
    attrs = raced.study.user_attrs
    settings = {"min_seeds": 2, "level": 0.95, "margin": 0.001, "resamples": 1000, "seed": 0, "stop_early": False}
    assert attrs["sweep.race"] == settings
    first, last = attrs["sweep.race.round_2"], attrs["sweep.race.round_3"]
    assert first["eliminated"] == [json.dumps({"loss.scale": 0})] and not first["ended"]
    assert last["kept"] == [json.dumps({"loss.scale": 19}), json.dumps({"loss.scale": 20})]
    assert last["ended"] == {"": SEEDS_USED} and not last["eliminated"]
    assert raced.race.lines() == [LINE]
    assert LINE in summary(raced, table).splitlines()
    client, parents, children = trial_runs(cfg)
    assert [p.data.tags[TAG_RACE] for p in parents if p.info.run_id == raced.parent_run_id] == [LINE]
    dropped = {c.data.params["loss.scale"]: c.data.tags.get(TAG_RACE_ELIMINATED_AFTER) for c in children}
    assert dropped == {"0.0": "2", "19.0": None, "20.0": None}, "scale 0's trial runs say after how many seeds"
    assert {c.data.tags.get(TAG_RACE_ROUNDS) for c in children} == {"2"}, "3 seeds, 2 at first: 2 rounds"
    line = paired_summary(raced, table)[0]  # the study's answer: the survivors on every seed, 0 marked
    # compared at the race's round level, 1 - 0.05 / 2: the race spent its 5% over its 2 rounds
    assert "(3 seeds x 200 pairs, 97.5%)" in line and line.endswith("; eliminated by the race: after 2 seeds: 0")


def test_the_trials_a_race_ran_have_the_records_of_an_unraced_study(studies):
    raced, _, cfg = studies["raced"]
    full, _ = studies["full"]
    assert len(full.study.trials) == 9 and sum(points(raced.study).values()) == 8  # 8/9 of the steps, end to end
    unraced = {(t.params["loss.scale"], t.params["trial.seed"]): t for t in full.study.trials}
    for trial in raced.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
        twin = unraced[(trial.params["loss.scale"], trial.params["trial.seed"])]
        assert trial.value == twin.value
        assert {k: v for k, v in trial.user_attrs.items() if "spearman" in k or k in ("scale", "temperature")} == {
            k: v for k, v in twin.user_attrs.items() if "spearman" in k or k in ("scale", "temperature")
        }
    client = MlflowClient(cfg.tracking.uri)
    runs = {}
    for name in ("raced", "full"):
        experiment = client.get_experiment_by_name(name)
        for run in client.search_runs([experiment.experiment_id], "tags.`sweep.role` = 'trial'"):
            if run.info.status == "FINISHED":
                runs.setdefault((run.data.params["loss.scale"], run.data.params["trial.seed"]), {})[name] = run
    assert len(runs) == 9 and sum("raced" in pair for pair in runs.values()) == 8
    for pair in runs.values():
        if "raced" not in pair:
            continue
        ours, theirs = pair["raced"].data, pair["full"].data
        assert set(ours.metrics) == set(theirs.metrics)
        assert {k: ours.metrics[k] for k in SAME_METRICS} == {k: theirs.metrics[k] for k in SAME_METRICS}
        different = {k for k in ours.params if ours.params[k] != theirs.params.get(k)}
        assert different == {"name", "study.name", "tracking.experiment_name", "study.race.enabled"}


def test_a_rerun_with_other_race_settings_is_refused(studies, tmp_path_factory):
    _, _, cfg = studies["raced"]
    root = cfg.paths.root
    with pytest.raises(ConfigError) as error:
        open_sweep(compose_race(Path(root), *RACED, "name=raced", "stats.paired.margin=0.01"))
    assert error.value.key == "stats.paired.margin" and "races with 0.001" in str(error.value)
    with pytest.raises(ConfigError) as error:
        open_sweep(compose_race(Path(root), *RACE, "name=raced"))
    assert error.value.key == "study.race.enabled" and "was created racing" in str(error.value)
    rerun = open_sweep(compose_race(Path(root), *RACED, "name=raced"))
    rerun.run()  # the race is over: nothing is queued again
    assert sum(points(rerun.study).values()) == 8
    finish(rerun)


# The race over steps too (`study.race.stop_early`): evaluations every 4 of the 16 steps. In this queue order
# (`study.sampler.seed=1`) scale 0's seed-1 trial comes after two trained points have both seeds and a finished pair
# shows how a lead at step 4 moves by step 16: it is stopped at its first evaluation.
STOPPED = [*(o for o in RACED if not o.startswith("trial.eval_steps")), "trial.eval_steps=4"]
STOPPED += ["study.race.stop_early=true", "study.sampler.seed=1"]
STOPPED_LINE = f"race: stopped at a validation of the first 2 seeds: 0; ended after 3 seeds ({SEEDS_USED}): 19, 20 left"


@pytest.fixture(scope="module")
def stopped_race(tmp_path_factory):
    """The race with stop_early, killed after its first round's decision, then rerun twice."""
    root = tmp_path_factory.mktemp("stopped_race")
    with pytest.MonkeyPatch.context() as clean:
        clear_user_state(clean)
        cfg = compose_race(root, *STOPPED, "name=stopped")
        first = open_sweep(cfg)
        with pytest.MonkeyPatch.context() as patch:

            def killed(study, point):  # the process dies after round 2's decision, before round 3's queue
                raise RuntimeError("killed")

            patch.setattr(grid_queue, "enqueue_point", killed)
            with pytest.raises(RuntimeError, match="killed"):
                first.run()
        first_trials = len(first.study.trials)
        raced, table = run_study(cfg)
        again, _ = run_study(cfg)
        return {"first_trials": first_trials, "raced": raced, "table": table, "again": again, "cfg": cfg}


@pytest.mark.slow
def test_a_trial_far_behind_is_stopped_at_its_first_evaluation_and_never_trained_again(stopped_race):
    raced, cfg = stopped_race["raced"], stopped_race["cfg"]
    stopped = [t for t in raced.study.trials if ATTR_RACE_STOPPED in t.user_attrs]
    assert len(stopped) == 1
    trial = stopped[0]
    assert trial.state == optuna.trial.TrialState.PRUNED and trial.params == {"loss.scale": 0, "trial.seed": 1}
    assert list(trial.intermediate_values) == [4], "stopped at the first of its 4 evaluations"
    assert trial.user_attrs[ATTR_RACE_STOPPED].startswith(("19 leads", "20 leads"))
    assert points(raced.study) == Counter([(0, 0), *((s, seed) for s in (19, 20) for seed in (0, 1, 2))])
    steps = sum(max(t.intermediate_values) for t in raced.study.trials if t.intermediate_values)
    assert steps == 7 * 16 + 4, "the stopped trial's 12 steps are saved, and nothing is trained twice"
    assert raced.race.lines() == [STOPPED_LINE]
    assert STOPPED_LINE in summary(raced, stopped_race["table"]).splitlines()
    _, _, children = trial_runs(cfg)
    run = next(c for c in children if c.info.run_id == trial.user_attrs[ATTR_MLFLOW_RUN_ID])
    assert run.info.status == "KILLED" and run.data.tags[ATTR_RACE_STOPPED] == trial.user_attrs[ATTR_RACE_STOPPED]
    assert run.data.tags[TAG_OPTUNA_STATE] == "PRUNED"
    assert len(stopped_race["again"].study.trials) == len(raced.study.trials), "a third run trains nothing"


def test_the_stopped_point_is_no_evidence_and_the_answer_is_the_full_grids(stopped_race, studies):
    """The race's answer compares the points on every seed: scale 0's one finished seed is not compared (the race
    put it out in its first round, and its runs say so), and the confidence set for the best is the unraced grid's."""
    raced, table = stopped_race["raced"], stopped_race["table"]
    line = paired_summary(raced, table)[0]
    full_line = paired_summary(*studies["full"])[0]
    best_set = "best scale 19 (0.693); cannot tell apart: 20;"
    assert best_set in line and best_set in full_line
    assert "(3 seeds x 200 pairs, 97.5%)" in line and line.endswith("; eliminated by the race: after 2 seeds: 0")
    assert raced.study.user_attrs["sweep.race.round_2"]["stopped"] == [json.dumps({"loss.scale": 0})]
    _, _, children = trial_runs(stopped_race["cfg"])
    tagged = {
        (c.data.params["loss.scale"], c.data.params["trial.seed"]): c.data.tags.get(TAG_RACE_ELIMINATED_AFTER)
        for c in children
        if c.data.params["loss.scale"] == "0.0"
    }
    assert tagged == {("0.0", "0"): "2", ("0.0", "1"): "2"}, "both of scale 0's trial runs, the stopped one too"
