"""Reporting: figures and tables of studies, and findings pages that answer questions from results folders.

The public face, for a project's own findings page or notebook (this repository's ``research/findings`` uses
nothing else): each name is imported from its module on first use (``from sweep.report import pooled_report``), so
that each subcommand of ``python -m sweep.report`` still imports only what it needs.

- a results folder read back: ``read_csv``, ``complete_trials``, ``flat_config``, ``load_results_folder``,
  ``TRIALS_CSV``, ``PAIRED_TEST_CSV``, ``HISTORY_CSV`` (each trial's validation at each evaluation); a study's outputs:
  ``write_study_figures``, ``write_trials_table``, ``findings_block`` (a README's generated numbers),
  ``write_best_scale_vs_condition``, ``write_gap_vs_condition``, ``mechanism_summary`` (the sim_* mechanism table),
  ``concentration_summary`` (the random-pair cosine table), ``spearman_summary``, ``metric_words``;
- comparisons over folders: ``pooled_report`` (scale a vs b pooled over distinct conditions), ``tuned_report``
  (each scale at its own best value of a condition), ``seed_contrasts`` and ``write_forest`` (contrasts such as
  best - 20 paired over seeds, one forest-plot row per study condition), ``folder_frame`` (a folder as the tidy
  frame of ``sweep.stats``), ``tidy`` (condition, scale, seed, value);
- figures redrawn: ``redraw_results_folder`` (a results folder's figures from its CSVs), ``write_live_study`` (a
  study's figures from MLflow), the analytic loss vs scale (``DEFAULT_PROFILES``, ``parse_scales``,
  ``profile_label``, ``loss_table``, ``write_loss_vs_scale``);
- a findings page: ``Section`` and ``render`` (a question's six parts in markdown), the strength rule written once
  (`sweep.report.grading`: ``strength`` with ``Facts`` (``folder_facts``), ``Design`` (``folder_design``) and
  ``Control``, ``lowest`` over an answer's claims, ``regrade``, ``strength_rule``, the labels), ``scope``, the
  readers ``table``, ``present``, ``status``, ``objective``, ``best_row``, ``row_at``, ``against_best``,
  ``by_number``, ``untested`` and the formatters ``num``, ``signed``, ``interval``, ``temperature``, ``plural``;
  ``questions_page`` / ``write_questions_page`` answer a YAML file of questions (``read_questions``; its errors, like
  every error of sweep, are in `sweep.errors`; ``python -m sweep.report findings --questions FILE``).

Modules (``sweep.report.<name>``): ``loss_curves`` and ``loss_figures`` (analytic loss vs scale), ``runs`` (MLflow),
``summaries`` (the tables behind the figures), ``axes`` (drawing helpers), ``study_context``, ``scale_figures``,
``history_figures``, ``mechanism_figures``, ``convergence_figures``, ``grid_figures``, ``study_figures``,
``results_folder``, ``pooled``, ``tuned``, ``forest``, ``findings`` (a results README's generated block), ``grading``,
``evidence``, ``question_file`` and ``answers`` (findings pages). CLI: ``python -m sweep.report --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.report.answers import questions_page, write_questions_page
    from sweep.report.best_scale_figures import metric_words, write_best_scale_vs_condition
    from sweep.report.evidence import (
        PARTS,
        STSB_TEST,
        STSB_VALIDATION,
        Section,
        against_best,
        best_row,
        by_number,
        folder_design,
        folder_facts,
        interval,
        num,
        objective,
        plural,
        present,
        render,
        row_at,
        scope,
        signed,
        status,
        table,
        temperature,
        test_metric,
        tidy,
        untested,
    )
    from sweep.report.findings import findings_block
    from sweep.report.folder_comparison import redraw_results_folder
    from sweep.report.forest import FOREST_COLUMNS, seed_contrasts, write_forest
    from sweep.report.gap_figures import write_gap_vs_condition
    from sweep.report.grading import (
        CONFOUNDED,
        EDGE,
        FIXED,
        INHERITED,
        LABELS,
        MODERATE,
        NO_INTERVAL,
        PAIRED,
        RATE,
        REPEATED,
        SHORT,
        START,
        STRONG,
        TUNED,
        UNPAIRED,
        UNTESTED,
        WEAK,
        Control,
        Design,
        Facts,
        Strength,
        lowest,
        regrade,
        strength,
        strength_rule,
    )
    from sweep.report.live_study import log_study_report, write_live_study
    from sweep.report.loss_curves import DEFAULT_PROFILES, loss_table, parse_scales, profile_label
    from sweep.report.loss_figures import write_loss_vs_scale
    from sweep.report.mechanism_figures import mechanism_summary
    from sweep.report.paired_table import STSB_VALIDATION_LABEL
    from sweep.report.pooled import PooledReport, folder_frame, pooled_report
    from sweep.report.question_file import read_questions
    from sweep.report.results_folder import (
        HISTORY_CSV,
        PAIRED_TEST_CSV,
        TRIALS_CSV,
        complete_trials,
        flat_config,
        load_results_folder,
        read_csv,
    )
    from sweep.report.study_figures import write_study_figures, write_trials_table
    from sweep.report.summaries import concentration_summary, spearman_summary
    from sweep.report.tuned import TunedReport, tuned_report

__all__ = [
    "CONFOUNDED",
    "Control",
    "DEFAULT_PROFILES",
    "Design",
    "EDGE",
    "FIXED",
    "FOREST_COLUMNS",
    "Facts",
    "HISTORY_CSV",
    "INHERITED",
    "LABELS",
    "MODERATE",
    "NO_INTERVAL",
    "PAIRED",
    "PAIRED_TEST_CSV",
    "PARTS",
    "PooledReport",
    "RATE",
    "REPEATED",
    "SHORT",
    "START",
    "STRONG",
    "STSB_TEST",
    "STSB_VALIDATION",
    "STSB_VALIDATION_LABEL",
    "Section",
    "Strength",
    "TRIALS_CSV",
    "TUNED",
    "TunedReport",
    "UNPAIRED",
    "UNTESTED",
    "WEAK",
    "against_best",
    "best_row",
    "by_number",
    "complete_trials",
    "concentration_summary",
    "findings_block",
    "flat_config",
    "folder_design",
    "folder_facts",
    "folder_frame",
    "interval",
    "load_results_folder",
    "log_study_report",
    "loss_table",
    "lowest",
    "mechanism_summary",
    "metric_words",
    "num",
    "objective",
    "parse_scales",
    "plural",
    "pooled_report",
    "present",
    "profile_label",
    "questions_page",
    "read_csv",
    "read_questions",
    "redraw_results_folder",
    "regrade",
    "render",
    "row_at",
    "scope",
    "seed_contrasts",
    "signed",
    "spearman_summary",
    "status",
    "strength",
    "strength_rule",
    "table",
    "temperature",
    "test_metric",
    "tidy",
    "tuned_report",
    "untested",
    "write_best_scale_vs_condition",
    "write_forest",
    "write_gap_vs_condition",
    "write_live_study",
    "write_loss_vs_scale",
    "write_questions_page",
    "write_study_figures",
    "write_trials_table",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "answers": (
        "questions_page",
        "write_questions_page",
    ),
    "best_scale_figures": (
        "metric_words",
        "write_best_scale_vs_condition",
    ),
    "evidence": (
        "PARTS",
        "STSB_TEST",
        "STSB_VALIDATION",
        "Section",
        "against_best",
        "best_row",
        "by_number",
        "folder_design",
        "folder_facts",
        "interval",
        "num",
        "objective",
        "plural",
        "present",
        "render",
        "row_at",
        "scope",
        "signed",
        "status",
        "table",
        "temperature",
        "test_metric",
        "tidy",
        "untested",
    ),
    "findings": ("findings_block",),
    "folder_comparison": ("redraw_results_folder",),
    "forest": (
        "FOREST_COLUMNS",
        "seed_contrasts",
        "write_forest",
    ),
    "gap_figures": ("write_gap_vs_condition",),
    "grading": (
        "CONFOUNDED",
        "Control",
        "Design",
        "EDGE",
        "FIXED",
        "Facts",
        "INHERITED",
        "LABELS",
        "MODERATE",
        "NO_INTERVAL",
        "PAIRED",
        "RATE",
        "REPEATED",
        "SHORT",
        "START",
        "STRONG",
        "Strength",
        "TUNED",
        "UNPAIRED",
        "UNTESTED",
        "WEAK",
        "lowest",
        "regrade",
        "strength",
        "strength_rule",
    ),
    "live_study": (
        "log_study_report",
        "write_live_study",
    ),
    "loss_curves": (
        "DEFAULT_PROFILES",
        "loss_table",
        "parse_scales",
        "profile_label",
    ),
    "loss_figures": ("write_loss_vs_scale",),
    "mechanism_figures": ("mechanism_summary",),
    "paired_table": ("STSB_VALIDATION_LABEL",),
    "pooled": (
        "PooledReport",
        "folder_frame",
        "pooled_report",
    ),
    "question_file": ("read_questions",),
    "results_folder": (
        "HISTORY_CSV",
        "PAIRED_TEST_CSV",
        "TRIALS_CSV",
        "complete_trials",
        "flat_config",
        "load_results_folder",
        "read_csv",
    ),
    "study_figures": (
        "write_study_figures",
        "write_trials_table",
    ),
    "summaries": (
        "concentration_summary",
        "spearman_summary",
    ),
    "tuned": (
        "TunedReport",
        "tuned_report",
    ),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
