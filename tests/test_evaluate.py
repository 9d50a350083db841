"""`python -m sweep.evaluate` as a command: a saved model's scores, the same as the trial's evaluator gives them; a
source that does not exist is one line and exit code 2 before anything is loaded."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from sentence_transformers import SentenceTransformer

from sweep.config.checks import eval_batch_size
from sweep.config.composition import compose_config
from sweep.evaluate import stsb_scores
from sweep.inputs.model import build_model
from tests.conftest import TINY
from tests.helpers import REPO, clean_env

DATA = [a for a in TINY if a.startswith(("model=", "data.", "trial.device="))]  # the tiny model, a slice of STSB


def evaluate(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sweep.evaluate", *args]
    return subprocess.run(command, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_saved_model_is_scored_as_the_trials_evaluator_scores_it(tmp_path):
    cfg = compose_config([*DATA, f"paths.root={tmp_path}"])
    folder = tmp_path / "model"
    build_model(cfg.model, seed=0, device="cpu").save(str(folder))
    out = tmp_path / "scores" / "scores.csv"
    done = evaluate("--model", str(folder), "--out", str(out), *DATA, f"paths.root={tmp_path}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == str(out), "the CSV's path, last"
    (row,) = pd.read_csv(out).to_dict("records")
    assert (row["source"], row["model"]) == ("folder", str(folder.resolve()))
    model = SentenceTransformer(str(folder))
    batch_size = eval_batch_size(cfg.trial, cfg.model.kind)
    for split, evaluator in stsb_scores(cfg.data, ["validation", "test"], batch_size).items():
        expected = float(evaluator(model)[f"stsb_{split}_spearman_cosine"])
        assert row[f"stsb_{split}_spearman"] == pytest.approx(expected, abs=1e-6)
        assert f"{expected:.4f}" in done.stdout, "the printed table"


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (["--model", "ROOT/nowhere"], "--model ROOT/nowhere: not a folder"),
        (
            ["--study", "never_ran"],
            "--study never_ran: no kept best model in ROOT/models/never_ran/best (trial.save_model=best or all)",
        ),
    ],
)
def test_a_source_that_does_not_exist_is_one_line_and_exit_code_2(tmp_path, source, error):
    out = tmp_path / "scores.csv"
    done = evaluate(*(a.replace("ROOT", str(tmp_path)) for a in source), "--out", str(out), f"paths.root={tmp_path}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"python -m sweep.evaluate: error: {error.replace('ROOT', str(tmp_path))}"]
    assert not out.exists() and done.stdout == ""
