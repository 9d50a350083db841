"""The per-pair STSB predictions a results folder ships, ``predictions.npz``: its format, its writer and its reader.

The paired statistics read a trial's cosines through their ranks only (`sweep.stats.bootstrap` ranks them,
on all pairs and on every resample of pairs, ties averaged), and the collapse check
(`sweep.stats.collapse.collapse_reason`) reads the cosines themselves only for a trial whose cosines collapsed. So
the file keeps, for each trial, the dense rank of its cosines (1 the lowest, equal cosines one rank: every tie
kept), and the cosines themselves of the trials that collapsed: every statistic and every line recomputed from it
is the same, byte for byte, as from the cosines (`tests/report/test_predictions_file.py`), at a fifth of the size
of the cosines as gzipped text.

The format: a NumPy ``.npz`` (a zip of ``.npy`` arrays, compressed with LZMA; ``numpy.load`` reads it), with, for
each split ``S`` (``validation``, ``test``, and ``validation_untrained``, ``test_untrained``: the trial's untrained base
model, the same rows for every trial of a pretrained base, which LZMA stores once) that some trial logged:

- ``S.trials`` int64 (T,): the trial numbers, ascending;
- ``S.gold`` float64 (P,): the gold scores of the P pairs, in the evaluator's order (every trial's are the same);
- ``S.rank_bytes`` uint8 (B, T, P): the trials' dense ranks as B byte planes, most significant first (rank =
  sum over b of ``plane[b] << 8 * (B - 1 - b)``; planes rather than int16 because LZMA packs them ~15% smaller);
  0 for a collapsed trial;
- ``S.collapsed`` int64 (C,) and ``S.cosine`` float64 (C, P): the trials whose cosines collapsed, and those
  cosines as logged (`sweep.evaluation.predictions`: 7 significant digits).

Folders published before this format ship ``predictions.csv.gz`` (trial number, split, gold, cosine per pair);
`read_predictions` reads either, and a redraw (``python -m sweep.report study --from-csv``) writes the ``.npz``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from sweep.stats import collapse_reason

PREDICTIONS_FILE = "predictions.npz"
LEGACY_PREDICTIONS_CSV = "predictions.csv.gz"  # the text format of folders published before predictions.npz
COLUMNS = ["trial_number", "split", "gold", "cosine"]  # the long table both formats hold
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # a fixed member time: the same predictions give the same bytes
# (run id, split) -> a trial's gold/cosine table, or None (a results folder's run id is its trial number); ``cosine``
# may hold any order-preserving stand-in of a trial that did not collapse (a folder ships ranks), as the paired
# statistics read ranks only
Fetch = Callable[[str, str], pd.DataFrame | None]


def split_arrays(split: str, table: pd.DataFrame) -> dict[str, np.ndarray]:
    """The arrays of one split (the module docstring) from its long table (``trial_number, gold, cosine``);
    ValueError when the trials' pairs or gold scores differ."""
    trials = np.sort(table["trial_number"].unique()).astype(np.int64)
    parts = [table[table["trial_number"] == number] for number in trials]
    gold = parts[0]["gold"].to_numpy(dtype=np.float64)
    for number, part in zip(trials, parts, strict=True):
        if not np.array_equal(part["gold"].to_numpy(dtype=np.float64), gold, equal_nan=True):
            raise ValueError(f"{split}: trial {number}'s pairs differ from trial {trials[0]}'s: one gold per split")
    cosines = np.stack([part["cosine"].to_numpy(dtype=np.float64) for part in parts])
    collapsed = np.array([collapse_reason(row) is not None for row in cosines])
    ranks = np.zeros(cosines.shape, dtype=np.int64)
    if (~collapsed).any():
        ranks[~collapsed] = rankdata(cosines[~collapsed], axis=1, method="dense")
    width = max(1, (int(ranks.max()).bit_length() + 7) // 8)
    planes = np.stack([(ranks >> (8 * (width - 1 - b))) & 0xFF for b in range(width)]).astype(np.uint8)
    return {
        f"{split}.trials": trials,
        f"{split}.gold": gold,
        f"{split}.rank_bytes": planes,
        f"{split}.collapsed": trials[collapsed],
        f"{split}.cosine": cosines[collapsed],
    }


def write_predictions(table: pd.DataFrame, path: Path) -> Path:
    """Write the long table (`COLUMNS`: one row per trial, split and pair, in the evaluator's order) as ``path``."""
    arrays: dict[str, np.ndarray] = {}
    for split, part in table.groupby("split", sort=True):
        arrays |= split_arrays(str(split), part)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", ZIP_TIME)
            member.compress_type = zipfile.ZIP_LZMA
            with archive.open(member, "w") as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(array), allow_pickle=False)
    return path


def _split_tables(arrays: dict[str, np.ndarray], split: str) -> dict[tuple[str, str], pd.DataFrame]:
    """(trial number as text, split) -> ``gold, cosine`` of one split: the ranks as floats, the collapsed trials'
    cosines as logged."""
    planes = arrays[f"{split}.rank_bytes"].astype(np.int64)
    ranks = sum(plane << (8 * (len(planes) - 1 - b)) for b, plane in enumerate(planes))
    values = dict(zip(arrays[f"{split}.trials"].tolist(), np.asarray(ranks, dtype=np.float64), strict=True))
    values |= dict(zip(arrays[f"{split}.collapsed"].tolist(), arrays[f"{split}.cosine"], strict=True))
    gold = arrays[f"{split}.gold"]
    return {(str(n), split): pd.DataFrame({"gold": gold, "cosine": cosine}) for n, cosine in values.items()}


def _legacy_tables(path: Path) -> dict[tuple[str, str], pd.DataFrame]:
    """The same tables from a ``predictions.csv.gz`` (the cosines themselves)."""
    return {
        (str(number), str(split)): part[["gold", "cosine"]].reset_index(drop=True)
        for (number, split), part in pd.read_csv(path).groupby(["trial_number", "split"], sort=False)
    }


def read_predictions(folder: Path) -> Fetch | None:
    """The folder's shipped predictions as a lookup (trial number as text, split) -> ``gold, cosine`` table, where
    ``cosine`` holds a trial's dense ranks (the cosines of a collapsed trial, or of a ``predictions.csv.gz``):
    what the paired statistics read, the same from either. None when the folder ships neither file."""
    if (folder / PREDICTIONS_FILE).exists():
        with np.load(folder / PREDICTIONS_FILE, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        splits = sorted({name.split(".", 1)[0] for name in arrays})
        tables = {key: frame for split in splits for key, frame in _split_tables(arrays, split).items()}
    elif (folder / LEGACY_PREDICTIONS_CSV).exists():
        tables = _legacy_tables(folder / LEGACY_PREDICTIONS_CSV)
    else:
        return None
    return lambda number, split: tables.get((number, split))


def predictions_table(folder: Path) -> pd.DataFrame | None:
    """The long table (`COLUMNS`) of the folder's ``predictions.csv.gz``, or None: what a redraw converts."""
    path = folder / LEGACY_PREDICTIONS_CSV
    return pd.read_csv(path)[COLUMNS] if path.exists() else None
