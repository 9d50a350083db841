"""``python -m research.findings``: the committed ``results/FINDINGS.md`` is what the research code writes from the
committed CSVs (every number regenerated), each question has its six parts, the strength rule on small folders
written here, and a data-size study that has not run (or has) shows as such."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from research.findings.__main__ import main
from research.findings.datasize import question_b
from research.findings.page import findings_page
from sweep.report import CONFOUNDED, MODERATE, PARTS, STRONG, UNTESTED, WEAK, folder_facts, strength

RESULTS = Path(__file__).resolve().parents[2] / "research" / "results"
PAGE = RESULTS / "FINDINGS.md"
DECIMAL = re.compile(r"-?\d+\.\d+")
SECTION = re.compile(r"^## \((?P<letter>[a-g])\) ", re.MULTILINE)


@pytest.fixture(scope="module")
def regenerated() -> str:
    return findings_page(RESULTS)


def test_the_committed_page_is_what_the_csvs_give(regenerated):
    committed = PAGE.read_text()
    assert DECIMAL.findall(committed) == DECIMAL.findall(regenerated), "a number differs: rerun the findings command"
    assert committed == regenerated, "research/results/FINDINGS.md is stale: python -m research.findings"


def test_each_of_the_seven_questions_has_its_six_parts_in_order():
    text = PAGE.read_text()
    starts = [match.start() for match in SECTION.finditer(text)]
    assert [m.group("letter") for m in SECTION.finditer(text)] == list("abcdefg")
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        section = text[start:end]
        positions = [section.find(f"**{part}.**") for part in PARTS]
        assert -1 not in positions and positions == sorted(positions), section[:80]
        assert re.search(r"\*\*Strength\.\*\* \*\*(strong|moderate|weak|confounded|untested)\*\*", section)
    assert "**Strength rule**" in text[: starts[0]]


def write_study(
    path: Path,
    seeds: int,
    test_confirms: bool = True,
    metric: str = "stsb_validation_spearman",
    condition: str | None = None,
    gaps: dict[float, float] | None = None,
    paired: bool = True,
) -> Path:
    """A small results folder: trials at scales 10 and 20 (10 ahead by 0.02), config.yaml and, when ``paired``, the
    paired tables with test confirming the validation choice or not. ``gaps``: per value of ``condition``, how far
    scale 10 is ahead."""
    path.mkdir(parents=True)
    rng = np.random.default_rng(0)
    test = metric.replace("_val_", "_test_").replace("validation", "test")
    rows = [
        {"state": "COMPLETE", "loss.scale": scale, "trial.seed": float(seed)}
        | ({condition: value} if condition else {})
        | {metric: 0.7 + (gap if scale == 10.0 else 0.0) + rng.normal(0, 0.002)}
        | {test: 0.6 + (gap if scale == 10.0 else 0.0) + rng.normal(0, 0.002)}
        for value, gap in (gaps or {0.0: 0.02}).items()
        for seed in range(seeds)
        for scale in (5.0, 10.0, 20.0)
    ]
    pd.DataFrame(rows).to_csv(path / "trials.csv", index=False)
    config = {"name": path.name, "loss": {"name": "mnrl", "scale": 20.0}, "eval": {"objective": metric}}
    config |= {"model": {"kind": "static", "name_or_path": "m"}, "trial": {"max_steps": None, "batch_size": 64}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    if paired:
        common = {"condition": "", "n_seeds": seeds, "p_best": np.nan}
        validation = pd.DataFrame(
            [common | {"scale": 10.0, "best": True, "in_confidence_set": True, "verdict": "best"}]
            + [common | {"scale": 20.0, "best": False, "in_confidence_set": False, "verdict": "worse"}]
        )
        validation.to_csv(path / "paired_comparison.csv", index=False)
        on_test = validation.assign(in_confidence_set=[test_confirms, True], best=[test_confirms, not test_confirms])
        on_test.to_csv(path / "paired_comparison_test.csv", index=False)
    return path


def test_the_strength_rule_on_small_folders(tmp_path):
    good = folder_facts(write_study(tmp_path / "good", seeds=3))
    one_seed = folder_facts(write_study(tmp_path / "one", seeds=1))
    unconfirmed = folder_facts(write_study(tmp_path / "unconfirmed", seeds=3, test_confirms=False))
    assert (good.n_seeds, good.confirmed, one_seed.n_seeds, unconfirmed.confirmed) == (3, True, 1, False)
    assert strength([good], True, 1).label == MODERATE
    assert strength([good], True, 2).label == STRONG
    assert strength([good], True, 2, ["the learning rate"]).label == CONFOUNDED
    assert strength([one_seed], True, 2).label == WEAK and "1 seed" in strength([one_seed], True, 2).reason
    assert strength([good, unconfirmed], True, 2).label == WEAK
    assert strength([good], False, 2, ["the learning rate"]).label == WEAK  # weak before confounded
    assert strength([], True, 2).label == UNTESTED


def test_without_paired_tables_the_facts_come_from_the_trials_by_seed(tmp_path):
    facts = folder_facts(write_study(tmp_path / "seeds", seeds=3, paired=False))
    assert (facts.n_seeds, facts.confirmed) == (3, True)
    assert folder_facts(write_study(tmp_path / "single", seeds=1, paired=False)).n_seeds == 1


def test_without_the_data_size_study_the_page_says_not_yet_run(tmp_path):
    (tmp_path / "mnrl_scale_data").symlink_to(RESULTS / "mnrl_scale_data")
    section = question_b(tmp_path)
    assert "`mnrl_scale_datasize`: not yet run" in section.answer
    assert section.strength.label == WEAK or section.strength.label == CONFOUNDED


def test_the_data_size_study_answers_b_when_it_is_there(tmp_path):
    metric, sizes = "captions30k_val_ndcg_at_10", {2000.0: 0.06, 8000.0: 0.03, 30000.0: 0.0}
    write_study(tmp_path / "mnrl_scale_datasize", 3, metric=metric, condition="data.train.max_samples", gaps=sizes)
    section = question_b(tmp_path)
    assert section.answer.startswith("On captions30k at one pass, the near-optimum gap 10 - 20 shrinks")
    assert any("difference in differences" in line for line in section.evidence)
    assert section.strength.label == CONFOUNDED and "one pass" in section.strength.reason


def test_the_command_writes_the_page_and_an_empty_results_dir_is_untested(tmp_path, capsys):
    out = tmp_path / "page.md"
    assert main(["--results", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert capsys.readouterr().out.strip() == str(out)
    assert text.count("**Strength.** **untested**") == 7 and "`mnrl_scale_datasize`: not yet run" in text
