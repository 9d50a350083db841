"""Layer 8, the Optuna study: the one validation pass of the config, set-up (sampler, pruner, storage), the grid
queue, the run loop with its failure rules, packing and racing the seeds (`study.race`), and the results table.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.study.lifecycle import finish, open_sweep
    from sweep.study.run_loop import StudyRunner
    from sweep.study.setup import unwritable
    from sweep.study.study_logger import StudyLogger
    from sweep.study.summary import (
        COLLAPSED,
        OBJECTIVE,
        STSB_TEST,
        STSB_VALIDATION,
        objective_is_stsb_validation,
        objective_lines,
        per_scale_table,
        results_table,
    )
    from sweep.study.validation import check_config

__all__ = [
    "COLLAPSED",
    "OBJECTIVE",
    "STSB_TEST",
    "STSB_VALIDATION",
    "StudyLogger",
    "StudyRunner",
    "check_config",
    "finish",
    "objective_is_stsb_validation",
    "objective_lines",
    "open_sweep",
    "per_scale_table",
    "results_table",
    "unwritable",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "lifecycle": (
        "finish",
        "open_sweep",
    ),
    "run_loop": ("StudyRunner",),
    "setup": ("unwritable",),
    "study_logger": ("StudyLogger",),
    "summary": (
        "COLLAPSED",
        "OBJECTIVE",
        "STSB_TEST",
        "STSB_VALIDATION",
        "objective_is_stsb_validation",
        "objective_lines",
        "per_scale_table",
        "results_table",
    ),
    "validation": ("check_config",),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
