"""The real command line, `python -m sweep +experiment=mnrl_scale`, with tiny overrides on the real offline data:
what it prints (the results table, the final verdict lines checked against the study's trials) and what it stores."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

import pytest
from mlflow.tracking import MlflowClient

from sweep.names import ATTR_VALIDATION_SPEARMAN, ROLE_STUDY, ROLE_TRIAL, TAG_ROLE
from tests.conftest import TINY
from tests.helpers import REPO, clean_env, load_trials

pytestmark = pytest.mark.e2e

VALIDATION_LINE = re.compile(
    r"STSB validation Spearman: (?:TRAINING HURT: every scale is below the untrained model \(\d\.\d{3}\)"
    r"(?: on these pairs \(one seed\))?; )?best scale (?P<best>\S+) \((?P<mean>\d\.\d{3})\)(?:, optimum[^;]*)?"
    r"(?:; (?P<untrained>above no training|below no training|as good as no training \(within 0\.01\)|cannot tell "
    r"from no training)(?: on these pairs)? \(\d\.\d{3}\): [+-]\d\.\d{3}(?: \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\])?)?"
    r"(?P<groups>(?:; [a-z ]+(?: \(within 0\.01\))?: [^;(]+)*) "
    r"\((?:(?P<seeds>\d+) seeds x (?P<pairs>[\d,]+) pairs, 95%|(?P<one>one seed): these intervals leave out "
    r"seed-to-seed noise; add study\.seeds)\)"
)
DETAIL_LINE = re.compile(
    r"  (?:95% confidence set for the best|P\(best\) on these pairs): (?P<set>.+?); method: (?P<seeds>\d+) seeds? x "
    r"(?P<pairs>[\d,]+) pairs, .+"
)
TEST_LINE_ONE_SEED = re.compile(
    r"STSB test Spearman: test (?:also ranks scale (?P<same>\S+) first|ranks scale (?P<top>\S+) first, not scale "
    r"(?P<chosen>\S+) chosen on validation) \(one seed: no confidence set on test either; add study\.seeds\)"
)
SHARE = {"<0.01": 0.005, ">0.99": 0.995}
TEST_LINE = re.compile(
    r"STSB test Spearman: test (?P<verdict>confirms|does not confirm) scale (?P<chosen>\S+) chosen on validation "
    r"\(.+ on test; 95% confidence set for the best on test: (?P<set>.+?)\)(?:; on test, .+ no training .+)?"
)


def scales(listed: str) -> list[float]:
    """The scales of a verdict group (``0, 1`` or ``none``)."""
    return [] if listed == "none" else [float(s) for s in listed.split(", ")]


def check_verdict_lines(output: str, storage: str, n_seeds: int, n_pairs: int) -> None:
    """The three answer lines (after `Best model`, before the figure's address and the disk use, the last line),
    against the study itself (its trials in Optuna): the best scale is the one with the highest mean validation
    Spearman over seeds, with that mean; every other scale of the grid gets exactly one verdict, and with one seed
    never *worse* nor *as good*; the detail line's set starts with the best, by falling P(best), and holds no worse
    scale; the data named are the study's pairs and seeds; the test line names the same scale and confirms it exactly
    when it is in test's confidence set (with one seed, it says only what test ranks first)."""
    lines = output.strip().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("STSB validation Spearman: "))
    validation_line, detail_line, test_line = lines[at : at + 3]
    assert lines[-1].startswith("Disk use: "), "the last line says what the study keeps on disk"
    spearman = defaultdict(list)
    for trial in load_trials(storage):
        if trial.state.name == "COMPLETE":
            spearman[float(trial.params["loss.scale"])].append(trial.user_attrs[ATTR_VALIDATION_SPEARMAN])
    means = {scale: mean(values) for scale, values in spearman.items()}
    best = max(means, key=means.__getitem__)

    answer, detail = VALIDATION_LINE.fullmatch(validation_line), DETAIL_LINE.fullmatch(detail_line)
    assert answer and detail, (validation_line, detail_line)
    assert float(answer["best"]) == best and abs(float(answer["mean"]) - means[best]) <= 5e-4 + 1e-9
    assert (int(detail["pairs"].replace(",", "")), int(detail["seeds"])) == (n_pairs, n_seeds)
    assert bool(answer["one"]) == (n_seeds == 1), "one seed says that seed noise is left out"
    groups = {
        word: scales(listed)
        for word, listed in re.findall(r"; ([a-z ]+?)(?: \(within 0\.01\))?: ([^;]+)", answer["groups"])
    }
    judged = [scale for listed in groups.values() for scale in listed]
    assert sorted(judged) == sorted(set(means) - {best}), "every other scale of the grid: exactly one verdict"
    if n_seeds == 1:
        assert not groups.keys() & {"worse", "as good"}, "one seed never gives the strong words"
    members = re.findall(r"(\S+) \((?:P\(best\) )?(<0\.01|>0\.99|\d(?:\.\d\d)?)\)", detail["set"])
    assert float(members[0][0]) == best and detail["set"].startswith(f"{answer['best']} (P(best) ")
    shares = [SHARE[share] if share in SHARE else float(share) for _, share in members]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 1 + 0.005 * len(shares)
    assert not {float(s) for s, _ in members} & set(groups.get("worse", [])), "a worse scale is out of the set"

    if n_seeds == 1:  # no set on test either: the line says what test ranks first
        ranked = TEST_LINE_ONE_SEED.fullmatch(test_line)
        assert ranked and float(ranked["same"] or ranked["chosen"]) == best, test_line
        return
    confirmation = TEST_LINE.fullmatch(test_line)
    assert confirmation, test_line
    on_test = [float(s) for s in re.findall(r"scale (\S+?)(?:,|$)", confirmation["set"])]
    assert float(confirmation["chosen"]) == best and set(on_test) <= set(means)
    assert (confirmation["verdict"] == "confirms") == (best in on_test)


def sweep_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args],
        cwd=REPO,
        env=clean_env(SWEEP_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mnrl_scale_end_to_end_and_rerun_trains_nothing(tmp_path):
    args = ["+experiment=mnrl_scale", *TINY, "study.seeds=[0]", "study.search_space.loss.scale=[0,1,20,50]"]
    first = sweep_cli(*args, home=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    out = first.stdout
    assert "study mnrl_scale: 4 complete trials" in out
    for column in ("scale", "temperature", "stsb_val", "stsb_test", "wall_s"):
        assert column in out
    db = tmp_path / "mlflow.db"
    assert f"mlflow ui --backend-store-uri sqlite:///{db}" in out
    assert f"sqlite:///{tmp_path / 'optuna.db'}" in out
    pairs = int(next(a for a in TINY if a.startswith("data.validation.max_samples=")).partition("=")[2])
    check_verdict_lines(out, f"sqlite:///{tmp_path / 'optuna.db'}", n_seeds=1, n_pairs=pairs)

    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("mnrl_scale")
    runs = client.search_runs([experiment.experiment_id])
    assert sum(r.data.tags.get(TAG_ROLE) == ROLE_STUDY for r in runs) == 1
    assert sorted(float(r.data.params["loss.scale"]) for r in runs if r.data.tags.get(TAG_ROLE) == ROLE_TRIAL) == [
        0,
        1,
        20,
        50,
    ]

    parent = next(r for r in runs if r.data.tags.get(TAG_ROLE) == ROLE_STUDY).info
    second = sweep_cli(*args, home=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "nothing to train" in second.stderr + second.stdout
    assert len(client.search_runs([experiment.experiment_id])) == 5
    rerun = client.get_run(parent.run_id).info  # the rerun trained nothing: MLflow's duration is still the study's
    assert (rerun.status, rerun.start_time, rerun.end_time) == ("FINISHED", parent.start_time, parent.end_time)


def test_bad_value_exits_with_one_line_naming_the_key(tmp_path):
    result = sweep_cli("+experiment=mnrl_scale", "study.search_space.loss.scale=[0,-2]", home=tmp_path)
    assert result.returncode == 2
    assert "sweep: invalid config: loss.scale=-2" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "optuna.db").exists(), "refused before the study (or any training) started"
