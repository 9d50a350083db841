"""What the strength rule (`sweep.report.grading`) needs to know of this repository's studies beyond their folders: the
scale each study's start model was trained at, how many passes over its data a fixed step count makes, and a verdict's
words that name the scale putting a scale out of the confidence set when its own interval against the best reaches 0.
Every question of the page grades its claims with `facts_of`, so that the confounds the design implies are read the
same way everywhere."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from sweep.report import Facts, against_best, flat_config, folder_design, folder_facts

from .literature import MINILM_NAME, MINILM_SCALE, TRAIN_ROWS


def start_scale(folder: Path) -> float | None:
    """The scale the study's start model was trained at: all-MiniLM-L6-v2's 20 for its pretrained weights or token
    embeddings (static embeddings taken from it included); None for a random start or a start model of this
    repository's own (study 2 varies that scale on purpose)."""
    config = flat_config(folder)
    if config.get("model.static_init") == "random" and config.get("model.kind") == "static":
        return None
    if config.get("model.reinit") is True:
        return None
    return MINILM_SCALE if str(config.get("model.name_or_path")) == MINILM_NAME else None


def passes(folder: Path) -> float | None:
    """Passes over the training data of a study with a fixed step count (steps x batch / the file's rows), for the
    training files whose size `literature.TRAIN_ROWS` records; None otherwise (one-pass studies included)."""
    config = flat_config(folder)
    steps, rows = config.get("trial.max_steps"), TRAIN_ROWS.get(str(config.get("data.train.local_file")))
    if steps is None or rows is None or config.get("data.train.max_samples") is not None:
        return None
    return int(str(steps)) * int(str(config.get("trial.batch_size"))) / rows


def facts_of(folder: Path, rate: str | None = None, rate_words: str = "", start: bool = True) -> Facts:
    """`folder_facts` with the study's `Design` (`folder_design`, with `start_scale` and `passes`); ``rate`` and
    ``rate_words`` replace how the learning rate was set where another study tuned it (`grading.INHERITED`);
    ``start=False`` leaves the start model's scale out (a claim that is not about which scale is best)."""
    design = folder_design(folder, start_scale(folder) if start else None, passes(folder))
    if rate is not None:
        design = replace(design, rate=rate, rate_words=rate_words)
    return replace(folder_facts(folder), design=design)


def versus_best(rows: pd.DataFrame, row: pd.Series, column: str = "scale") -> str:
    """`against_best`, and for a scale called *worse* whose interval against the best reaches 0, which scale puts it
    out of the confidence set: one that beats it by a whole simultaneous interval, so one scoring higher than it but
    not the best (named when there is one such scale, else the candidates)."""
    words = against_best(row)
    if bool(row["best"]) or row["verdict"] != "worse" or not row["ci_low"] <= 0:
        return words
    key = "spearman" if "spearman" in rows else "mean"
    above = rows[(rows[key] > row[key]) & ~rows["best"].astype(bool)]
    names = [f"{value:g}" if isinstance(value, float) else str(value) for value in above[column]]
    if not names:
        return words
    which = names[0] if len(names) == 1 else f"one of {', '.join(names)}"
    return f"{words}: out of the confidence set because {which} beats it by a whole interval (the best does not)"
