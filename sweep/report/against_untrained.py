"""Each condition's best scale against its untrained model, read from the trials' step-0 predictions.

Every trial logs its untrained base model's per-pair predictions (``predictions/stsb_{split}_untrained.csv``,
`sweep.evaluation.predictions`). For the best scale of a comparison, its trials' final predictions and their own
untrained predictions, seed by seed, go to `sweep.stats.untrained.against_untrained`. Nothing is added where the
comparison already holds scale 0 (the untrained control is then a row of the verdicts), where the best is not a
trained scale, or where the trials logged no untrained predictions (runs from before they were logged, a results
folder's shipped ranks).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pandas as pd

from sweep.evaluation import untrained_part
from sweep.report.predictions_file import Fetch
from sweep.stats import PairedComparison, against_untrained, pair_resamples

UNTRAINED_COLUMNS = ["untrained_spearman", "diff_to_untrained", "untrained_low", "untrained_high", "untrained_verdict"]


class ConditionArrays(NamedTuple):
    """What a condition's paired comparison is computed from, over the seeds every scale has."""

    gold: np.ndarray  # (pairs,)
    predictions: np.ndarray  # (scales, seeds, pairs): each trial's final cosines
    labels: list[float] | list[str]  # the scales, or grid points' labels, sorted
    run_ids: list[list[str]]  # (scales, seeds): the trial run behind each row of ``predictions``


def compare_with_untrained(
    result: PairedComparison,
    arrays: ConditionArrays,
    fetch: Fetch,
    split: str,
    n_resamples: int,
    seed: int,
    chosen: object = None,
) -> PairedComparison:
    """``result`` with its best scale, or the ``chosen`` one (the scale validation chose, read on test), compared
    with the untrained model (``untrained``, and the `UNTRAINED_COLUMNS` on its row), when the trials allow it;
    ``arrays``: what ``result`` was computed from."""
    if not result.table["best"].any() or (result.numeric and (result.table["scale"] == 0).any()):
        return result
    compared = result.best["scale"] if chosen is None else chosen
    reasons = result.table.set_index("scale")["not_scoreable"].astype(object).fillna("")
    scored = [i for i, label in enumerate(arrays.labels) if reasons.get(label, "") == ""]
    position = next((k for k, i in enumerate(scored) if arrays.labels[i] == compared), None)
    if position is None:  # the chosen scale is not scoreable here
        return result
    tables = [fetch(run_id, untrained_part(split)) for run_id in arrays.run_ids[scored[position]]]
    untrained = [t["cosine"].to_numpy() for t in tables if t is not None and len(t) == arrays.gold.size]
    if len(untrained) < len(tables):  # runs from before the untrained predictions were logged
        return result
    stacked = np.concatenate([np.asarray(untrained)[None], arrays.predictions[scored]])  # (1 + scales, seeds, pairs)
    per_seed, covariance = pair_resamples(arrays.gold, stacked, n_resamples, seed)
    if np.isnan(per_seed[0]).any():  # an untrained model without spread in its cosines has no Spearman
        return result
    comparison = against_untrained(per_seed, covariance, 1 + position, result.level, result.margin, seed)
    values = [comparison.untrained, comparison.difference, comparison.low, comparison.high, comparison.verdict]
    table = result.table.assign(**{name: pd.Series(dtype=object) for name in UNTRAINED_COLUMNS})
    for name, value in zip(UNTRAINED_COLUMNS, values, strict=True):
        table.loc[table["scale"] == compared, name] = value
    return dataclasses.replace(result, table=table, untrained=comparison if chosen is None else None)
