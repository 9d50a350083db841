"""Give a published results folder the validation history its study logged, from a deterministic rerun.

The studies whose races the benchmark replays over seeds and steps (item 9 reads each trial's validation Spearman
at each evaluation, ``validation_history.csv``) were published before `sweep.report` wrote that file, and the
MLflow databases they came from are gone. Their trials are deterministic (on the CPU, one seed draws the same
batches and initialisation), so a rerun of the same experiment logs the same history. This reads the rerun's
results folder (``python -m sweep.report study`` on the rerun's MLflow), checks that every trial's validation at its
last step equals the published trial's Spearman exactly (trials matched by their grid point and seed: the rerun
numbers its trials in its own queue order), and writes the history into the published folder under the published
trial numbers. The run ids stay the rerun's.

Research code beside the notebooks. Usage:
``python -m research.notebooks.validation_history RERUN_FOLDER PUBLISHED_FOLDER``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from sweep.report import HISTORY_CSV, TRIALS_CSV

NUMBER, STEP, VALUE, VALIDATION = "trial_number", "step", "value", "stsb_validation_spearman"


def grid_columns(trials: pd.DataFrame) -> list[str]:
    """The columns of a ``trials.csv`` that name a trial's grid point and seed (``loss.scale``, ``trial.seed``...)."""
    return [column for column in trials.columns if "." in column]


def published_history(rerun: Path, published: Path) -> pd.DataFrame:
    """The rerun's validation history under the published folder's trial numbers; raises ValueError when a trial
    of either is missing from the other or ended on another Spearman."""
    ours, theirs = (pd.read_csv(folder / TRIALS_CSV) for folder in (rerun, published))
    keys = grid_columns(theirs)
    if sorted(grid_columns(ours)) != sorted(keys):
        raise ValueError(f"the two studies' grids differ: {grid_columns(ours)} vs {keys}")
    matched = ours.merge(theirs, on=keys, how="outer", suffixes=("_rerun", ""), indicator=True)
    if not (matched["_merge"] == "both").all():
        raise ValueError(f"trials in one study only:\n{matched.loc[matched['_merge'] != 'both', keys]}")
    history = pd.read_csv(rerun / HISTORY_CSV)
    last = history.sort_values(STEP).groupby(NUMBER)[VALUE].last()
    differs = matched[last.reindex(matched[f"{NUMBER}_rerun"]).to_numpy() != matched[VALIDATION].to_numpy()]
    if len(differs):
        raise ValueError(f"the rerun ended {len(differs)} trial(s) on another validation Spearman:\n{differs[keys]}")
    renumber = dict(zip(matched[f"{NUMBER}_rerun"], matched[NUMBER], strict=True))
    return history.assign(**{NUMBER: history[NUMBER].map(renumber)}).sort_values([NUMBER, STEP])


def main(argv: list[str]) -> None:
    rerun, published = (Path(folder) for folder in argv)
    history = published_history(rerun, published)
    history.to_csv(published / HISTORY_CSV, index=False)
    print(f"{published / HISTORY_CSV}: {history[NUMBER].nunique()} trials, every last validation as published")


if __name__ == "__main__":
    main(sys.argv[1:])
