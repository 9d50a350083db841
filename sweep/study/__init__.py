"""Layer 8, the Optuna study: the one validation pass of the config, set-up (sampler, pruner, storage), the grid
queue, the run loop with its failure rules, packing and racing the seeds (`study.race`), and the results table."""

from sweep.study.lifecycle import finish, open_sweep
from sweep.study.run_loop import StudyRunner
from sweep.study.summary import results_table
from sweep.study.validation import check_config

__all__ = ["StudyRunner", "check_config", "finish", "open_sweep", "results_table"]
