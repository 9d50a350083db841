"""What `python -m sweep` writes to a log file (stdout and stderr not a terminal, as under SLURM or nohup): a line per
step of each trial's life, no progress-bar redraws and none of the trainer's raw log dicts. Before, two 4-step trials
wrote 167 lines, most of them bar redraws and dicts such as {'eval_samples_per_second': '0', ...}. The study says
what it will run before any training, and how far it is after each trial."""

from __future__ import annotations

import pytest

from tests.conftest import TINY
from tests.helpers import run_sweep


@pytest.mark.slow
def test_a_logged_run_shows_each_trials_progress_in_a_few_lines(tmp_path):
    args = [a for a in TINY if a != "quiet=true"]
    done = run_sweep(*args, "name=console", "+study.search_space.loss.scale=[1,20]", home=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "\r" not in output and "it/s]" not in output, "no progress bars in a log file"
    assert "{'loss'" not in output and "eval_samples_per_second" not in output, "no raw trainer dicts"
    lines = output.splitlines()
    assert len(lines) <= 43, "\n".join(lines)  # 40 before the study's plan and its two "k of 2 done" lines
    study = [
        "study console: 2 trials, 4 steps each; stored in ",
        "trial 0: scoring the untrained model (step 0)",
        "study console: 1 of 2 done; about ",
        "trial 1: scoring the untrained model (step 0)",
        "study console: 2 of 2 done",
    ]
    positions = [next(i for i, line in enumerate(lines) if text in line) for text in study]
    assert positions == sorted(positions), "the plan before any training, then how far the study is after each trial"
    for trial in (0, 1):
        order = [
            f"trial {trial}: scoring the untrained model (step 0)",
            f"trial {trial}: training 4 steps, validation every 2",
            f"trial {trial}: step 2/4, validation ",
            f"trial {trial}: step 4/4, validation ",
        ]
        positions = [next(i for i, line in enumerate(lines) if text in line) for text in order]
        assert positions == sorted(positions), order
