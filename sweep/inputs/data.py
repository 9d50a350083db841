"""Training and evaluation data: from the Hugging Face hub, or from local CSV files with the same columns.

Offline, the local copy (``../shared/data`` beside the repository or the current directory) is found
without a path; ``data.local_dir`` or the environment variable ``SWEEP_DATA_DIR`` point elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from datasets import Dataset, load_dataset
from omegaconf import DictConfig

from sweep.config.checks import ConfigError

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_SPLITS = ("train", "validation", "test")  # the splits of `data.*`


def find_local_dir(explicit: str | None) -> Path | None:
    """The local data directory: the explicit one (which must exist), else ../shared/data near the repo or cwd."""
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(
                "data.local_dir",
                explicit,
                "is not a directory (set data.local_dir or SWEEP_DATA_DIR to the folder holding nli/ and stsb/)",
            )
        return path
    for candidate in (
        REPO_ROOT.parent / "shared" / "data",
        Path.cwd().parent / "shared" / "data",
        Path.cwd() / "shared" / "data",
    ):
        if candidate.is_dir():
            return candidate.resolve()
    return None


@dataclass(frozen=True)
class SplitSource:
    """Where one split comes from: a local CSV file or a hub dataset."""

    split: str
    local_file: Path | None
    hub: tuple[str, str | None, str] | None

    def describe(self) -> str:
        if self.local_file is not None:
            return str(self.local_file)
        assert self.hub is not None  # a source is a local file or a hub dataset
        name, subset, split = self.hub
        return f"hub:{name}" + (f"/{subset}" if subset else "") + f"[{split}]"


def resolve_source(data: DictConfig, split: str, where: str | None = None) -> SplitSource:
    """Decide where a split is read from, checking local files exist (before any training).

    ``where`` is the config path of the split's spec in messages (default ``data.<split>``)."""
    spec = data[split]
    where = where or f"data.{split}"
    key = f"{where}.local_file"
    local_file = Path(spec.local_file).expanduser() if spec.local_file else None
    if local_file is not None and not local_file.is_absolute():
        base = find_local_dir(data.local_dir) if data.source != "hub" else None
        local_file = base / local_file if base is not None else None
    hub = (spec.hub_name, spec.hub_subset, spec.hub_split) if spec.hub_name else None
    if data.source == "hub" or (data.source == "auto" and (local_file is None or not local_file.is_file())):
        if hub is None and data.source == "auto" and local_file is not None:
            raise ConfigError(key, str(local_file), "file not found (and no hub_name to read it from the hub)")
        if hub is None:
            raise ConfigError(f"{where}.hub_name", spec.hub_name, "is needed when the data is read from the hub")
        if data.source == "auto" and local_file is not None:
            log.warning("%s not found; reading %s from the hub", local_file, split)
        return SplitSource(split, None, hub)
    if local_file is None:
        raise ConfigError(
            key,
            spec.local_file,
            "no local data directory found: set data.local_dir or SWEEP_DATA_DIR, or data.source=hub",
        )
    if not local_file.is_file():
        raise ConfigError(
            key, str(local_file), "file not found (set data.local_dir / SWEEP_DATA_DIR, or data.source=hub)"
        )
    return SplitSource(split, local_file, None)


def load_split(data: DictConfig, split: str, where: str | None = None) -> Dataset:
    """Load one split, keep its configured columns (in order) and, if asked, a seeded random subset."""
    spec = data[split]
    where = where or f"data.{split}"
    source = resolve_source(data, split, where)
    if source.local_file is not None:
        if source.local_file.stat().st_size == 0:
            raise ConfigError(f"{where}.local_file", str(source.local_file), "is empty")
        with source.local_file.open() as handle:
            if not (handle.readline() and handle.readline().strip()):  # a header alone: the csv loader fails
                raise ConfigError(where, str(source.local_file), "has no rows")
        dataset = load_dataset("csv", data_files=str(source.local_file), split="train")
    else:
        assert source.hub is not None  # a source is a local file or a hub dataset
        name, subset, hub_split = source.hub
        dataset = load_dataset(name, subset, split=hub_split)
    columns = list(spec.columns)
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ConfigError(
            f"{where}.columns",
            columns,
            f"{source.describe()} has columns {dataset.column_names}, missing {missing}",
        )
    if len(dataset) == 0:
        raise ConfigError(where, source.describe(), "has no rows")
    dataset = dataset.select_columns(columns)
    for column in columns:
        if None in dataset.unique(column):
            raise ConfigError(
                f"{where}.columns",
                column,
                f"{source.describe()} has empty values in column {column!r}; clean the file",
            )
    log.info("%s: %d rows from %s", split, len(dataset), source.describe())
    return dataset


def check_available(data: DictConfig) -> None:
    """Read every split that comes from the hub once (into the datasets cache the trials then read), so that an
    unreachable hub fails before training with the split and the fix, instead of failing every trial."""
    for split in DATA_SPLITS:
        source = resolve_source(data, split)
        if source.hub is None:
            continue
        try:
            load_split(data, split)
        except ConfigError:
            raise
        except Exception as error:  # noqa: BLE001 - ConnectionError, FileNotFoundError, DatasetNotFoundError, ...
            reason = f"{type(error).__name__}: {error}".splitlines()[0]
            raise ConfigError(
                f"data.{split}",
                source.describe(),
                f"cannot be read ({reason}). Offline, point data.local_dir or SWEEP_DATA_DIR at the folder holding "
                "the local copies (nli/, stsb/; see the Data section of docs/data-and-models.md)",
            ) from None


def subset(dataset: Dataset, max_samples: int | None, seed: int) -> Dataset:
    if max_samples is None or max_samples >= len(dataset):
        return dataset
    return dataset.shuffle(seed=seed).select(range(max_samples))


def load_all(data: DictConfig, heldout_pairs: int = 0) -> dict[str, Dataset]:
    """All splits; with `heldout_pairs`, a "heldout" split (never trained on) as well.

    The training rows are one seeded permutation of the training file (`data.seed`): the held-out pairs are its
    last `heldout_pairs` rows and the training subset (`max_samples`) its first ones, so asking for held-out
    pairs never reshuffles or replaces the rows a capped training set trains on. Without `max_samples` the
    training set is every row not held out, in file order. The trial always holds the pairs out (statistics on
    or off), so statistics never change what is trained.
    """
    splits = {split: load_split(data, split) for split in DATA_SPLITS}
    train = splits["train"]
    if heldout_pairs and heldout_pairs >= len(train):
        raise ConfigError("stats.heldout_pairs", heldout_pairs, f"must be below the {len(train)} training rows")
    order = np.random.default_rng(data.seed).permutation(len(train))
    kept, heldout = order[: len(train) - heldout_pairs], order[len(train) - heldout_pairs :]
    max_samples = data.train.max_samples
    if max_samples is not None and max_samples < len(kept):
        splits["train"] = train.select(kept[:max_samples])
    elif heldout_pairs:
        splits["train"] = train.select(np.sort(kept))
    if heldout_pairs:
        splits["heldout"] = train.select(heldout)
    for split in ("validation", "test"):
        splits[split] = subset(splits[split], data[split].max_samples, data.seed)
    return splits
