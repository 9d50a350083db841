"""The example of `python -m sweep`'s final lines in the README and docs/getting-started.md is the real output of the
default study: every number in it is read back from
research/results/mnrl_scale (per-scale means and intervals computed by the
same function the command uses, the trial rows, the paired line)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from sweep.study.summary import per_scale_table

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "research" / "results" / "mnrl_scale"
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md"]
PER_SCALE_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d\.\d{4})\s+(\d\.\d{4})\s+(\d\.\d{4})$")
TRIAL_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d{4})\s+(inf|\d\.\d{4})\s+(\d\.\d{4})\s+(\d\.\d{4})\s+[\d.]+\s+COMPLETE$"
)


def example_block(page: Path) -> list[str]:
    text = page.read_text()
    start = text.index("```\nstudy mnrl_scale:")
    return text[start + 4 : text.index("```", start + 4)].splitlines()


def trials() -> pd.DataFrame:
    table = pd.read_csv(STUDY / "trials.csv")
    return table.rename(columns={"loss.scale": "scale", "stsb_validation_spearman": "objective"})


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_example_output_is_the_default_studys(page):
    block, table = example_block(page), trials()
    per_scale = per_scale_table(table, "objective").set_index("scale")
    scale_rows = [m.groups() for m in map(PER_SCALE_ROW.match, block) if m]
    assert len(scale_rows) >= 3
    for scale, n_seeds, mean, low, high in scale_rows:
        row = per_scale.loc[float(scale)]
        assert int(n_seeds) == row["n_seeds"]
        assert [mean, low, high] == [f"{row[c]:.4f}" for c in ("mean", "ci_low", "ci_high")]
    trial_rows = [m.groups() for m in map(TRIAL_ROW.match, block) if m]
    assert len(trial_rows) >= 2
    for number, seed, scale, _, validation, test in trial_rows:
        row = table.set_index("trial_number").loc[int(number)]
        assert (int(row["trial.seed"]), f"{row['scale']:.4f}") == (int(seed), scale)
        assert [validation, test] == [f"{row['objective']:.4f}", f"{row['stsb_test_spearman']:.4f}"]
    best = table.loc[table["objective"].idxmax()]
    expected = (
        f"best single trial by STSB validation: trial {best['trial_number']} (scale {best['scale']}), "
        f"validation {best['objective']:.4f}, test {best['stsb_test_spearman']:.4f}"
    )
    assert expected in block
    paired = pd.read_csv(STUDY / "paired_comparison.csv")
    top = paired[paired["best"]].iloc[0]
    answer = next(line for line in block if line.startswith("STSB validation Spearman: "))
    assert answer.startswith(f"STSB validation Spearman: best scale {top['scale']:g} ({top['spearman']:.3f}), ")
    words = {"not distinguishable": "cannot tell apart", "worse": "worse"}
    for verdict, word in words.items():
        scales = ", ".join(f"{s:g}" for s in paired.loc[paired["verdict"] == verdict, "scale"])
        assert (f"; {word}: {scales}" in answer) == bool(scales) or verdict == "worse"
    assert f"({top['n_seeds']} seeds x {top['n_pairs']:,} pairs, 95%)" in answer
    assert f"optimum near scale {top['optimum']:.2g}".rstrip(".") in answer
    markdown = (STUDY / "paired_comparison.md").read_text().splitlines()
    written = [
        line[2:] if line.startswith("- ") else f"  {line[4:]}" for line in markdown if line.startswith(("- ", "  - "))
    ]
    assert written == block[-5:-2]  # the study's three answer lines, as the report wrote them from its data
    assert block[-1].startswith("Disk use: ")
    assert block[-2].startswith("The answer as a figure ") and block[-2].endswith(
        "/artifacts/report/spearman_vs_scale.png?workflowType=machine_learning"
    )
