"""The README's study of your own, run as the README shows it: its YAML saved as my_study/experiment/mine.yaml
beside a CSV of (anchor, positive) pairs, and its command run from that folder (tiny model and steps on top)."""

from __future__ import annotations

import re

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import TINY
from tests.helpers import REPO, clean_env, run_sweep_from

pytestmark = pytest.mark.e2e

SHARED_DATA = REPO.parent / "shared" / "data"


def readme_block(after: str, language: str) -> str:
    """The first ``language`` code block of the README after the line holding ``after``."""
    text = (REPO / "README.md").read_text()
    found = re.search(rf"{re.escape(after)}.*?```{language}\n(.*?)```", text, re.S)
    assert found, f"the README shows a {language} block after {after!r}"
    return found.group(1)


def test_the_readme_study_of_your_own_runs_as_shown(tmp_path):
    yaml_text = readme_block("Save this as `my_study/experiment/mine.yaml`", "yaml")
    command = readme_block("and run it from the folder that holds", "bash").strip()
    assert command == "python -m sweep --config-dir my_study +experiment=mine"
    (tmp_path / "my_study" / "experiment").mkdir(parents=True)
    (tmp_path / "my_study" / "experiment" / "mine.yaml").write_text(yaml_text)
    pairs = (SHARED_DATA / "captions30k" / "train.csv").read_text().splitlines()[:101]
    assert pairs[0] == "anchor,positive", "the README's columns"
    (tmp_path / "my_pairs.csv").write_text("\n".join(pairs) + "\n")
    overrides = [*TINY, f"paths.root={tmp_path / 'runs'}"]
    done = run_sweep_from(tmp_path, *command.split()[3:], *overrides, env=clean_env(SWEEP_DATA_DIR=str(SHARED_DATA)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "study mine: 12 complete trials" in done.stdout
    answer = next(line for line in done.stdout.splitlines() if line.startswith("STSB validation Spearman: "))
    assert re.search(r"(above|below|as good as|cannot tell from) no training", answer), answer
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("mine").experiment_id])
    inputs = [d for r in runs for d in r.inputs.dataset_inputs]
    trained_on = {d.dataset.name for d in inputs if any(t.value == "training" for t in d.tags)}
    assert trained_on and all("my_pairs" in name for name in trained_on), trained_on
