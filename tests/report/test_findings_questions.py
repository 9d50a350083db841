"""``python -m sweep.report findings --questions FILE``: a findings page for a user's own studies. Three fresh results
folders of a simulated study (not this repository's: another loss, model and data, written by `write_study_figures`)
whose truth is known: the page must find the best scale, the scale that beats another pooled over studies, the best
scale that moves with the learning rate, and grade each by the strength rule. A file that cannot be answered is one
line naming the key and the fix, exit code 2, and no page."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sweep.report import write_study_figures
from sweep.report.__main__ import main

SCALES = (5.0, 10.0, 20.0, 40.0)
SEEDS = (0, 1, 2)
PROG = "python -m sweep.report findings: error: "


def quality(scale: float, best: float) -> float:
    """The simulated truth: 0.70 at the best scale, 0.03 less per doubling away from it."""
    return 0.70 - 0.03 * abs(math.log2(scale / best))


def user_study(path: Path, best_by_lr: dict[float, float], seed: int, data: str = "my_pairs.jsonl") -> Path:
    """A results folder as a user's study leaves it: trials (COMPLETE, 3 seeds, a seed effect every scale shares and
    a little noise) written by `write_study_figures`, and its ``config.yaml``; test is validation - 0.1."""
    rng = np.random.default_rng(seed)
    swept = len(best_by_lr) > 1
    rows = []
    shared_by_seed = {s: rng.normal(0, 0.02) for s in SEEDS}  # a seed trains on the same batches at every lr
    for lr, best in best_by_lr.items():
        for s in SEEDS:
            shared = shared_by_seed[s]
            for scale in SCALES:
                value = quality(scale, best) + shared + rng.normal(0, 0.001)
                rows.append(
                    {"run_id": f"{lr}-{scale}-{s}", "trial_number": len(rows), "state": "COMPLETE"}
                    | {"param.study.search_space.loss.scale": str(list(SCALES))}
                    | ({"param.study.search_space.trial.learning_rate": str(list(best_by_lr))} if swept else {})
                    | {"param.loss.scale": scale, "param.trial.learning_rate": lr, "param.trial.seed": s}
                    | {"stsb_validation_spearman": value, "stsb_test_spearman": value - 0.1}
                )
    write_study_figures(pd.DataFrame(rows), {}, path)
    config = {"name": path.name, "loss": {"name": "infonce", "scale": 20.0}, "model": {"name_or_path": "my-encoder"}}
    config |= {"trial": {"learning_rate": next(iter(best_by_lr)), "batch_size": 32, "max_steps": 100}}
    config |= {"data": {"train": {"local_file": data}}, "eval": {"objective": "stsb_validation_spearman"}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    return path


QUESTIONS = {
    "title": "My contrastive loss: which scale?",
    "questions": [
        {"question": "Is 20 right for my loss?", "compare": "best_scale", "folder": "one_lr", "reference": 20},
        {"question": "Does 10 beat 20 on both data sets?", "compare": "pooled", "folders": ["one_lr", "other_data"]}
        | {"a": 10, "b": 20, "literature": ["my colleague's paper: 20"]},
        {"question": "Does the best scale move with the learning rate?", "compare": "interaction", "folder": "lrs"}
        | {"a": 10, "b": 40, "confounds": ["the steps are fixed"], "change": ["more learning rates"]},
        {"question": "Which scale at each learning rate?", "compare": "best_scale", "folder": "lrs", "reference": 40},
        {"question": "Each scale at its own learning rate?", "compare": "tuned", "folders": ["lrs"]}
        | {"condition": "trial.learning_rate", "reference": 20},
    ],
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("my_results")
    user_study(root / "one_lr", {1e-3: 10.0}, seed=1)
    user_study(root / "other_data", {1e-3: 10.0}, seed=2, data="my_other_pairs.jsonl")
    user_study(root / "lrs", {1e-4: 40.0, 1e-3: 10.0}, seed=3)
    (root / "questions.yaml").write_text(yaml.safe_dump(QUESTIONS, sort_keys=False))
    return root


def sections(page: str) -> list[str]:
    return page.split("\n## ")[1:]


def test_the_page_answers_a_fresh_user_study_as_simulated(results, tmp_path, capsys):
    out = tmp_path / "page.md"
    args = ["findings", "--questions", str(results / "questions.yaml"), "--results", str(results), "--out", str(out)]
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == str(out)
    page = out.read_text()
    assert page.startswith("# My contrastive loss: which scale?\n") and "**Strength rule**" in page
    best, pooled, moves, per_lr, own_lr = sections(page)
    assert "**Answer.** Scale 10 is best; the reference 20 is worse (paired by seed)." in best
    assert "**Strength.** **moderate** (3 seeds, paired verdict separates, test confirms, 1 distinct condition)" in best
    assert "`one_lr`: my-encoder, loss infonce, 100 steps x batch 32, lr 0.001" in best
    # the truth: 10 - 20 = 0.03 in both studies, inside the pooled interval
    answer = re.search(
        r"\*\*Answer\.\*\* Scale 10 beats 20: 10 - 20 = (\S+) \[(\S+), (\S+)\] pooled over 2 distinct", pooled
    )
    assert answer and float(answer[2]) < 0.03 < float(answer[3]), pooled
    assert "**Strength.** **strong**" in pooled and "- my colleague's paper: 20" in pooled
    # the truth: best 40 at lr 1e-4 and 10 at 1e-3, so the gap 10 - 40 goes from -0.06 to +0.06: +0.12
    head = "**Answer.** Yes: the best scale moves: learning_rate=0.0001: 40; learning_rate=0.001: 10; the gap 10 - 40 "
    did = re.search(re.escape(head) + r"changes by (\S+) \[(\S+), (\S+)\] from learning_rate=0.0001 to", moves)
    assert did and float(did[2]) < 0.12 < float(did[3]), moves
    assert "learning_rate=0.0001: 40 is the best" in moves
    assert "**Strength.** **confounded** (moderate by the rule otherwise" in moves and "the steps are fixed" in moves
    assert "- more learning rates" in moves and "mnrl" not in page
    answer = "The best scale depends on the condition: learning_rate=0.0001: 40; learning_rate=0.001: 10; the reference"
    assert f"**Answer.** {answer} 40 is worse in 1 of 2 conditions." in per_lr
    assert (
        "**Strength.** **strong** (3 seeds, paired verdict separates, test confirms, 2 distinct conditions)" in per_lr
    )
    assert "`lrs` learning_rate=0.0001: the best is the highest scale tried; it may lie beyond" in per_lr
    assert "learning_rate=0.001: the best is the" not in per_lr  # 10 is inside the grid 5-40
    # the truth: at its own learning rate 10 (at 1e-3) and 40 (at 1e-4) both reach 0.70, 20 and 5 only 0.67
    verdicts = dict(
        re.findall(
            r"- scale (\d+): best learning rate \S+ \([^)]*\); on test (?:\S+ below the best \S+ \S+ )?(.+)", own_lr
        )
    )
    assert {verdicts["10"], verdicts["40"]} <= {"best", "equivalent", "not distinguishable"}, own_lr
    assert verdicts["20"] == verdicts["5"] == "worse", own_lr
    assert "**Answer.** Each scale at its own best learning rate (chosen on STSB validation Spearman)" in own_lr
    assert "**Strength.** **moderate**" in own_lr


def test_a_best_scale_the_data_cannot_single_out_is_weak(tmp_path):
    """Two scales equally good by construction: the page names the best but grades it weak."""
    user_study(tmp_path / "flat", {1e-3: 10.0}, seed=4)
    trials = pd.read_csv(tmp_path / "flat" / "trials.csv")
    # 20 scores exactly what 10 scores with each seed (the same seed effect as every other scale of that seed)
    at10, at20 = trials["loss.scale"].eq(10.0), trials["loss.scale"].eq(20.0)
    by_seed = trials[at10].set_index("trial.seed")["stsb_validation_spearman"]
    trials.loc[at20, "stsb_validation_spearman"] = trials.loc[at20, "trial.seed"].map(by_seed).to_numpy()
    trials.to_csv(tmp_path / "flat" / "trials.csv", index=False)
    questions = {"questions": [{"question": "q", "compare": "best_scale", "folder": "flat", "reference": 20}]}
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(questions))
    out = tmp_path / "page.md"
    assert (
        main(["findings", "--questions", str(tmp_path / "q.yaml"), "--results", str(tmp_path), "--out", str(out)]) == 0
    )
    page = out.read_text()
    assert "**Answer.** Scale 10 is best; the reference 20 is equivalent (paired by seed)." in page
    assert "**Strength.** **weak** (the verdict does not separate (not distinguishable)" in page


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda q: q["questions"][0].update(compare="best"),
            "questions[0].compare: unknown comparison 'best': use one",
        ),
        (lambda q: q["questions"][0].update(folder="nope"), "questions[0].folder: "),
        (
            lambda q: q["questions"][1].pop("a"),
            "questions[1].a: missing (the scale compared (a: 10)) for compare: pooled",
        ),
        (
            lambda q: q["questions"][2].update(a=15),
            "questions[2].folder: lrs did not run scale 15 (`a`): use one of 5, 10",
        ),
        (lambda q: q["questions"][0].update(metric="ndcg"), "has no column ndcg: fix `metric`"),
        (lambda q: q["questions"][0].update(folders="x"), "questions[0].folders: unknown key for compare: best_scale"),
        (lambda q: q.update(questions=[]), "questions: missing: a list of questions"),
        (lambda q: q["questions"][2].update(folder="one_lr"), "one_lr swept no condition besides the scale"),
        (lambda q: q["questions"][4].update(condition="trial.warmup"), "lrs has no trial.warmup (trials.csv or config"),
    ],
)
def test_a_file_that_cannot_be_answered_is_one_line_and_exit_code_2(results, tmp_path, capsys, edit, message):
    questions = yaml.safe_load(yaml.safe_dump(QUESTIONS))
    edit(questions)
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(questions))
    out = tmp_path / "page.md"
    with pytest.raises(SystemExit) as exited:
        main(["findings", "--questions", str(tmp_path / "q.yaml"), "--results", str(results), "--out", str(out)])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith(PROG) and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_folder_of_one_scale_is_refused_before_any_work(tmp_path, capsys):
    user_study(tmp_path / "one_scale", {1e-3: 10.0}, seed=5)
    trials = pd.read_csv(tmp_path / "one_scale" / "trials.csv")
    trials[trials["loss.scale"] == 10.0].to_csv(tmp_path / "one_scale" / "trials.csv", index=False)
    questions = {"questions": [{"question": "q", "compare": "best_scale", "folder": "one_scale"}]}
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(questions))
    with pytest.raises(SystemExit) as exited:
        main(["findings", "--questions", str(tmp_path / "q.yaml"), "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "questions[0].folder: one_scale ran fewer than two scales" in err, err
    assert not (tmp_path / "findings.md").exists()


def test_a_missing_or_broken_file_is_one_line_and_exit_code_2(tmp_path, capsys):
    (tmp_path / "broken.yaml").write_text("questions: [a: b: c]\n")
    for name, message in (("absent.yaml", "no such questions file"), ("broken.yaml", "not YAML")):
        with pytest.raises(SystemExit) as exited:
            main(["findings", "--questions", str(tmp_path / name), "--results", str(tmp_path)])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and message in err and err.count("\n") == 1, err
