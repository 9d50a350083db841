"""A study's ``eval.objective`` compared across scales when it is not the STSB Spearman, and confirmed on test.

An objective such as ``captions30k_val_ndcg_at_10`` (an extra set's metric) is known as one number per trial, so its
comparison is paired by seed (`sweep.report.paired_table.seed_comparisons`). Its test counterpart is the same metric
of the set named with ``_test_`` for ``_val_`` (``captions30k_test_ndcg_at_10``): when the trials have it, the lines
end with whether it confirms the scale chosen on the objective. Written as ``objective_comparison.csv`` (the
validation table, then the test one, told apart by ``metric``) and ``objective_comparison.md`` (the lines).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd

from sweep.report.best_scale_figures import STEM as BEST_SCALE_STEM
from sweep.report.best_scale_figures import write_best_scale_vs_condition
from sweep.report.gap_figures import STEM as GAP_STEM
from sweep.report.gap_figures import write_gap_vs_condition
from sweep.report.paired_table import confirmation_lines, seed_comparisons
from sweep.report.study_context import config_value
from sweep.report.summaries import markdown_table
from sweep.stats import DEFAULT_MARGIN, bullets

OBJECTIVE_STEM = "objective_comparison"
OBJECTIVE_FIGURES = (BEST_SCALE_STEM, GAP_STEM)  # drawn where the study has a numeric condition


def on_test_split(objective: str) -> str:
    """``captions30k_val_ndcg_at_10`` -> ``captions30k_test_ndcg_at_10`` (unchanged when it names no ``_val_``)."""
    return objective.replace("_val_", "_test_", 1)


def objective_comparison(
    trials: pd.DataFrame, level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> tuple[pd.DataFrame, list[str]]:
    """The table and lines of the module docstring; empty when the objective is the STSB Spearman (``full``) or the
    trials do not carry it."""
    objective = config_value(trials, "eval.objective")
    if objective is None or str(objective) not in trials:
        return pd.DataFrame(), []
    objective = str(objective)
    validation, lines = seed_comparisons(trials, level=level, margin=margin, metric=objective)
    if validation.empty:
        return validation, lines
    tables = [validation.assign(metric=objective)]
    counterpart = on_test_split(objective)
    if counterpart != objective and counterpart in trials:
        test, _ = seed_comparisons(trials, level=level, margin=margin, metric=counterpart)
        if not test.empty:
            tables.append(test.assign(metric=counterpart))
            lines += confirmation_lines(validation, test, counterpart)
    return pd.concat(tables, ignore_index=True), lines


def run_length(trials: pd.DataFrame) -> str:
    """How long each trial trained, in words for a figure across conditions: ``N steps at every value (fixed)`` when
    ``trial.max_steps`` is set, else ``one pass at each value (steps vary)``."""
    steps = config_value(trials, "trial.max_steps")
    return f"{steps} steps at every value (fixed)" if steps else "one pass at each value (steps vary)"


def write_objective_comparison(
    table: pd.DataFrame, lines: list[str], out_dir: Path, note: str = "", figures: Collection[str] | None = None
) -> list[Path]:
    """``objective_comparison.csv`` and ``.md``, and the best scale and the gaps to it by condition where the study
    has a numeric condition (`sweep.report.best_scale_figures`, `sweep.report.gap_figures`; ``note``, e.g.
    `run_length`, titles the gaps; ``figures``: only those of these stems, `OBJECTIVE_FIGURES`); nothing for an empty
    table."""
    if table.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, markdown = out_dir / f"{OBJECTIVE_STEM}.csv", out_dir / f"{OBJECTIVE_STEM}.md"
    table.to_csv(csv, index=False)
    markdown.write_text("\n".join([bullets(lines), "", *markdown_table(table), ""]))
    wanted = set(OBJECTIVE_FIGURES if figures is None else figures)
    gaps = write_gap_vs_condition(table, out_dir, note) if GAP_STEM in wanted else []
    best = write_best_scale_vs_condition(table, out_dir) if BEST_SCALE_STEM in wanted else []
    return [csv, markdown, *best, *gaps]
