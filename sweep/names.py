"""The names a study writes and the report, the benchmark and the tests read: MLflow tags and Optuna attributes.

One home for them, so that a rename is one edit and a reader can see every name a study leaves behind.
"""

from __future__ import annotations

# MLflow tags on the parent (study) run and the child (trial) runs.
TAG_ROLE = "sweep.role"  # "study" or "trial"
ROLE_STUDY = "study"
ROLE_TRIAL = "trial"
TAG_STUDY_NAME = "sweep.study_name"
TAG_TRIAL_NUMBER = "sweep.trial_number"
TAG_OPTUNA_STATE = "sweep.optuna_state"  # COMPLETE / PRUNED / FAIL
TAG_END_REASON = "sweep.end_reason"  # why a trial failed or was pruned
TAG_SCALE_ZERO = "sweep.scale_zero"
TAG_ONE_PASS_STEPS = "sweep.one_pass_steps"  # trial.max_steps=null: the steps of one pass over the training rows
TAG_BEST_PARAMS = "sweep.best_params"
TAG_WORKER = "sweep.worker"  # hostname:pid of the process that trained the trial
TAG_PARENT_RUN_ID = "mlflow.parentRunId"
TAG_RUN_NAME = "mlflow.runName"
SCALE_ZERO_MODE = "trained_with_zero_gradient"  # the value of TAG_SCALE_ZERO
# A trial whose trained model collapsed (sweep.stats.collapse): "true", and why; never kept as the study's best.
TAG_COLLAPSED = "sweep.collapsed"
TAG_COLLAPSE_REASON = "sweep.collapse_reason"
# The kept best model, on the parent run (see sweep.training.kept_models).
TAG_BEST_MODEL_PATH = "sweep.best_model_path"  # the study's best-model folder
TAG_BEST_MODEL_URI = "sweep.best_model_uri"  # runs:/<trial run id>/trial-NNN: the best kept model
TAG_BEST_MODEL_RUN_ID = "sweep.best_model_run_id"
TAG_BEST_MODEL_TRIAL = "sweep.best_model_trial"
TAG_MODEL_LOGGED = "sweep.model_logged"  # on a trial run whose model was logged with the sentence_transformers flavor
TAG_MODEL_URI = "sweep.model_uri"  # that trial run: runs:/<run id>/trial-NNN (the logged model is named by trial)
TAG_MODEL_ID = "sweep.model_id"  # that trial run: the MLflow logged model's id
TAG_MODEL_REMOVED = "sweep.model_removed"  # a trial run whose logged model was removed: why (a better trial)
TAG_STUDY_BEST = "sweep.study_best"  # "true" on the study's best kept model: its logged model and its trial run
MODEL_ALIAS_BEST = "best"  # registered model alias (tracking.registered_model_name): the study's best version
# MLflow experiment tag read by the MLflow 3 UI: "custom_model_development" opens the runs page, not GenAI views.
TAG_EXPERIMENT_KIND = "mlflow.experimentKind"
EXPERIMENT_KIND_MODELS = "custom_model_development"

# Optuna study attributes.
ATTR_READY = "sweep.ready"  # set by the creating process once the grid is queued and the parent run exists
ATTR_SEARCH_SPACE = "search_space"
ATTR_MLFLOW_PARENT_RUN_ID = "mlflow_parent_run_id"

# Optuna parameters.
PARAM_SEED = "trial.seed"  # the replicate axis (`study.seeds`): a parameter, but not a hyperparameter

# Optuna trial attributes.
ATTR_GRID_POINT = "sweep.grid_point"
ATTR_ATTEMPT = "sweep.attempt"
ATTR_DISCARDED = "sweep.discarded"  # a grid trial that lost a multi-worker race for its point
ATTR_MLFLOW_RUN_ID = "mlflow_run_id"
ATTR_WALL_TIME_S = "wall_time_s"
ATTR_TRAIN_SECONDS = "train_seconds"
ATTR_TIME_PHASES = "time_phases"  # seconds before, in and after the training steps (sweep/training/step_clock.py)
ATTR_SCALE = "scale"
ATTR_TEMPERATURE = "temperature"
ATTR_FAIL_REASON = "fail_reason"
ATTR_CONFIG_ERROR = "sweep.config_error"  # the trial failed on a ConfigError: not retried, the study stops
ATTR_NOT_RETRIED = "sweep.not_retried"  # a failure that a retry cannot help (divergence, a config error)
ATTR_COLLAPSED = "sweep.collapsed"  # a COMPLETE trial whose model collapsed: why (sweep.stats.collapse)
ATTR_VALIDATION_SPEARMAN = "stsb_validation_spearman"  # the full model's, whatever eval.objective is
ATTR_TEST_SPEARMAN = "stsb_test_spearman"
ATTR_EXTRA_PREFIX = "extra."  # extra.<set>_<metric>: the eval.extra scores (sweep.evaluation.extra_sets)
TAG_RUN_DESCRIPTION = "mlflow.note.content"  # what the MLflow UI shows as a run's Description (markdown)
TAG_PAIRED_COMPARISON = "sweep.paired_comparison"  # parent run: the "best scale ...; confidence set ..." line(s)
TAG_OBJECTIVE_COMPARISON = "sweep.objective_comparison"  # parent run: the same for eval.objective, paired by seed

# MLflow artifacts.
ARTIFACT_PREDICTIONS = "predictions/stsb_{split}.csv"  # trial run: gold and cosine per STSB pair (final model)
UNTRAINED_SUFFIX = "_untrained"  # ... and of its untrained base model: predictions/stsb_{split}_untrained.csv
ARTIFACT_PAIRED_COMPARISON = "paired_comparison.csv"  # parent run: the paired-bootstrap table
ARTIFACT_REPORT = "report"  # parent run: the study's figures and their CSVs (python -m sweep.report study's files)
ARTIFACT_SPEARMAN_FIGURE = f"{ARTIFACT_REPORT}/spearman_vs_scale.png"  # parent run: the answer, mean over seeds
ARTIFACT_CONFIG = "config.yaml"  # parent run: the study's composed config, paths as given (a results folder's copy)

# Where a trial ran (sweep.config.devices.trial_records): each an Optuna trial attribute and an MLflow trial-run tag.
TAG_DEVICE = "sweep.device"  # cpu, mps or cuda:<physical GPU> (its CUDA_VISIBLE_DEVICES entry)
TAG_SLURM_JOB_ID = "sweep.slurm_job_id"  # in a SLURM job: SLURM_JOB_ID
TAG_SLURM_LOCALID = "sweep.slurm_localid"  # in a SLURM task: SLURM_LOCALID (the task's index on its node)
ATTR_DEVICE, ATTR_SLURM_JOB_ID, ATTR_SLURM_LOCALID = TAG_DEVICE, TAG_SLURM_JOB_ID, TAG_SLURM_LOCALID
# Racing the seeds (`study.race`, sweep.study.race).
ATTR_VERDICT = (
    "verdict"  # study attribute: the study's answer lines (the parent run's Description), for optuna-dashboard
)
ATTR_RACE = "sweep.race"  # study attribute: the race's settings, pinned when the study is created
ATTR_RACE_ROUND = "sweep.race.round_{seeds}"  # study attribute: one round's decision (kept, eliminated, ended)
TAG_RACE = "sweep.race"  # parent run: the race's record ("eliminated after 2 seeds: 1, 2, 50; ...")
TAG_RACE_ELIMINATED_AFTER = "sweep.race.eliminated_after"  # trial run of a dropped point: the seeds it had then
TAG_RACE_ROUNDS = "sweep.race.rounds"  # trial run of a raced study: the rounds its race spends the level over
ATTR_RACE_STOPPED = "sweep.race.stopped"  # trial attribute and run tag: why the race stopped it at a validation
