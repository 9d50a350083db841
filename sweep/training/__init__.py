"""Layer 7, training: one trial (fine-tune and evaluate, from its own settings), the lockstep turns of packed trials,
the resources a study shares between its trials and the models worth keeping."""

from sweep.training.kept_models import best_path, keep
from sweep.training.lockstep import Lockstep, Outcome, run_in_lockstep
from sweep.training.resources import StudyResources, spearman, stsb_evaluator
from sweep.training.trial import train_and_evaluate
from sweep.training.trial_settings import TrialSettings

__all__ = [
    "Lockstep",
    "Outcome",
    "StudyResources",
    "TrialSettings",
    "best_path",
    "keep",
    "run_in_lockstep",
    "spearman",
    "stsb_evaluator",
    "train_and_evaluate",
]
