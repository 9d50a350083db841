"""Layer 6, training: one trial (fine-tune and evaluate, from its own settings), the lockstep turns of packed trials,
the resources a study shares between its trials and the models worth keeping.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.training.fused_adamw import FusedAdamW
    from sweep.training.fused_group import FusedGroup, joining
    from sweep.training.fused_mnrl import FusedMultipleNegativesRankingLoss
    from sweep.training.fused_pack import FusedStaticPack, FusedStep, trial_batches
    from sweep.training.fused_static import FusedStaticEmbedding
    from sweep.training.fused_transformer import FusedTransformerPack
    from sweep.training.kept_models import (
        BEST,
        Keeping,
        Kept,
        Verdict,
        best_path,
        keep,
        locked,
        model_name,
        read_meta,
        study_dir,
    )
    from sweep.training.lockstep import Lockstep, Outcome, run_in_lockstep
    from sweep.training.resources import StudyResources, TrackedData, spearman, stsb_evaluator
    from sweep.training.step_clock import StepClock
    from sweep.training.trial import train_and_evaluate
    from sweep.training.trial_settings import TrialSettings

__all__ = [
    "BEST",
    "FusedAdamW",
    "FusedGroup",
    "FusedMultipleNegativesRankingLoss",
    "FusedStaticEmbedding",
    "FusedStaticPack",
    "FusedStep",
    "FusedTransformerPack",
    "Keeping",
    "Kept",
    "Lockstep",
    "Outcome",
    "StepClock",
    "StudyResources",
    "TrackedData",
    "TrialSettings",
    "Verdict",
    "best_path",
    "joining",
    "keep",
    "locked",
    "model_name",
    "read_meta",
    "run_in_lockstep",
    "spearman",
    "stsb_evaluator",
    "study_dir",
    "train_and_evaluate",
    "trial_batches",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "fused_adamw": ("FusedAdamW",),
    "fused_group": (
        "FusedGroup",
        "joining",
    ),
    "fused_mnrl": ("FusedMultipleNegativesRankingLoss",),
    "fused_pack": (
        "FusedStaticPack",
        "FusedStep",
        "trial_batches",
    ),
    "fused_static": ("FusedStaticEmbedding",),
    "fused_transformer": ("FusedTransformerPack",),
    "kept_models": (
        "BEST",
        "Keeping",
        "Kept",
        "Verdict",
        "best_path",
        "keep",
        "locked",
        "model_name",
        "read_meta",
        "study_dir",
    ),
    "lockstep": (
        "Lockstep",
        "Outcome",
        "run_in_lockstep",
    ),
    "resources": (
        "StudyResources",
        "TrackedData",
        "spearman",
        "stsb_evaluator",
    ),
    "step_clock": ("StepClock",),
    "trial": ("train_and_evaluate",),
    "trial_settings": ("TrialSettings",),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)
