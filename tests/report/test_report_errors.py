"""`python -m sweep.report` as a command: a folder it should read that does not exist is one line naming the folder
and exit code 2, before anything is written (before, `study --from-csv` exited 0 with "nothing written" and
`findings` wrote a page of "untested")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO, clean_env

CASES = {  # command: (its arguments with MISSING and OUT, the option naming the folder)
    "study": (["--from-csv", "MISSING", "--out", "OUT"], "--from-csv"),
    "loss-vs-scale": (["--from-csv", "MISSING", "--out", "OUT"], "--from-csv"),
    "findings": (["--questions", "QUESTIONS", "--results", "MISSING", "--out", "OUT/findings.md"], "--results"),
}


@pytest.mark.parametrize("command", list(CASES))
def test_a_folder_that_does_not_exist_is_one_line_naming_it_and_exit_code_2(command, tmp_path):
    missing, out = tmp_path / "nowhere", tmp_path / "out"
    arguments, option = CASES[command]
    questions = tmp_path / "questions.yaml"  # findings' file of questions, present: only the folder is missing
    questions.write_text("questions:\n  - question: Which scale?\n    compare: best_scale\n    folder: mine\n")
    arguments = [
        a.replace("MISSING", str(missing)).replace("OUT", str(out)).replace("QUESTIONS", str(questions))
        for a in arguments
    ]
    done = subprocess.run(
        [sys.executable, "-m", "sweep.report", command, *arguments],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    error = f"python -m sweep.report {command}: error: {option} {missing}: no such folder"
    assert done.stderr.splitlines() == [error] and done.stdout == ""
    assert not out.exists(), "refused before anything was written"


def test_an_untrained_baseline_folder_that_does_not_exist_is_refused_too(tmp_path, capsys):
    from sweep.report.__main__ import main

    results = tmp_path / "results"
    results.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(["study", "--from-csv", str(results), "--untrained-from", str(tmp_path / "no"), "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    expected = f"python -m sweep.report study: error: --untrained-from {tmp_path / 'no'}: no such folder"
    assert capsys.readouterr().err.splitlines() == [expected]


def test_an_unusable_output_or_tracking_store_is_refused_before_any_work_and_creates_nothing(tmp_path):
    """`study --out FILE` raised FileExistsError after 25 s of work, and a tracking URI naming a database that does
    not exist created it, then said no experiment was found (issue 52): each is one line, exit code 2, first."""
    occupied = tmp_path / "a_file"
    occupied.write_text("mine\n")
    missing_db = tmp_path / "nowhere" / "x.db"
    cases = [
        (["--from-csv", str(REPO / "research" / "results" / "mnrl_scale"), "--out", str(occupied)], "is a file"),
        (
            ["--tracking-uri", f"sqlite:///{missing_db}", "--experiment", "mnrl_scale", "--out", str(tmp_path / "o")],
            f"no such database ({missing_db})",
        ),
    ]
    for arguments, words in cases:
        done = subprocess.run(
            [sys.executable, "-m", "sweep.report", "study", *arguments],
            cwd=REPO,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr[-2000:]
    assert occupied.read_text() == "mine\n" and not missing_db.parent.exists() and not (tmp_path / "o").exists()


def test_a_live_study_from_a_store_that_does_not_exist_creates_nothing(tmp_path):
    """What the notebooks call with SWEEP_TRACKING_URI: it created the database, then found no study (issue 52)."""
    from sweep.errors import ConfigError
    from sweep.report import write_live_study

    missing = tmp_path / "nowhere" / "mlflow.db"
    with pytest.raises(ConfigError, match=r"no such database") as error:
        write_live_study(f"sqlite:///{missing}", tmp_path / "out", experiment="mnrl_scale")
    assert "\n" not in str(error.value) and not missing.parent.exists() and not (tmp_path / "out").exists()
