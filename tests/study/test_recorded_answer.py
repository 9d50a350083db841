"""A finished study run again prints its recorded answer at once, without the training libraries or MLflow; a changed
config, or a study with trials left, takes the full path (`sweep.study.recorded_answer`)."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest

from sweep.study.recorded_answer import ATTR_ANSWER, record, recorded
from tests.conftest import TINY
from tests.helpers import REPO, clean_env

HEAVY = ("torch", "sentence_transformers", "transformers", "mlflow")
# `python -m sweep ARGS`, then the heavy modules the process imported, on the last line of its output.
RUN_AND_LIST = (
    "import atexit, sys; "
    f"atexit.register(lambda: print('imported:', [m for m in {HEAVY!r} if m in sys.modules])); "
    "sys.argv = ['sweep', *sys.argv[1:]]; "
    "from sweep.app import main; main()"
)


def _printed(output: str) -> list[str]:
    """The lines a run printed, without its log lines (``[time][logger][LEVEL] - ...``)."""
    return [line for line in output.splitlines() if not line.startswith("[")]


def _sweep(*args: str, home) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", RUN_AND_LIST, *args]
    return subprocess.run(command, cwd=REPO, env=clean_env(SWEEP_HOME=str(home)), capture_output=True, text=True)


@pytest.mark.slow
def test_a_finished_study_run_again_prints_its_answer_without_the_training_libraries(tmp_path):
    grid = "study.search_space.loss.scale=[1,20]"
    args = ["+experiment=mnrl_scale", *TINY, "stats.enabled=false", "study.seeds=[0]", grid]
    first = _sweep(*args, home=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    answer = _printed(first.stdout)[:-1]  # what the study printed, without the imported list
    assert any(line.startswith("STSB validation Spearman") for line in answer), first.stdout

    again = _sweep(*args, home=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _printed(again.stdout) == [*answer, "imported: []"], "the same lines, from no training library"
    assert "nothing to train" in again.stderr + again.stdout

    changed = _sweep(*args, "stats.paired.margin=0.02", home=tmp_path)  # another answer: the full path
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert changed.stdout.splitlines()[-1] != "imported: []"
    assert "nothing to train" in changed.stderr + changed.stdout


def test_an_answer_holds_only_for_its_config_and_its_trials(tmp_path):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    study = optuna.create_study(study_name="s", storage=storage)
    study.enqueue_trial({})
    record(study, "key", ["best scale 20"])
    assert recorded(storage, "s", "key") is None, "a trial is waiting"
    study.optimize(lambda trial: 1.0, n_trials=1)
    assert recorded(storage, "s", "key") is None, "recorded before that trial: another count"
    record(study, "key", ["best scale 20"])
    assert recorded(storage, "s", "key") == ["best scale 20"]
    assert recorded(storage, "s", "another config") is None
    assert recorded(storage, "no such study", "key") is None
    assert study.user_attrs[ATTR_ANSWER]["trials"] == {"COMPLETE": 1}


def test_looking_for_an_answer_creates_no_store(tmp_path):
    assert recorded(f"sqlite:///{tmp_path}/none.db", "s", "key") is None
    assert not list(tmp_path.iterdir())
