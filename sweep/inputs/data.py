"""Training and evaluation data: from the Hugging Face hub, or from local CSV files with the same columns.

Offline, the local copy (``shared/data`` in the current directory or a folder above it, as ``../shared/data``
beside a checkout) is found without a path, never from where the package is installed; ``data.local_dir`` or the
environment variable ``SWEEP_DATA_DIR`` point elsewhere. A relative ``local_file`` is read from the current directory
when it is there, else from the local data directory.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from sweep.config import CONFIG_DIR, DataConfig, SplitConfig
from sweep.errors import ConfigError

if TYPE_CHECKING:  # resolving and checking a data section does not import datasets (`read` does)
    from datasets import Dataset

log = logging.getLogger(__name__)

DATA_SPLITS = ("train", "validation", "test")  # the splits of `data.*`
# At most this share of the training file is held out for the statistics (`stats.heldout_pairs`), so a small file
# of one's own is still mostly trained on. The shipped local training files hold the default 1,024 pairs out
# uncapped (tests/inputs/test_data.py), so default runs are unchanged.
HELDOUT_SHARE = 0.2


def find_local_dir(explicit: str | None) -> Path | None:
    """The local data directory: the explicit one (which must exist), else ``shared/data`` in the current directory
    or the nearest folder above it that has one."""
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(
                "data.local_dir",
                explicit,
                "is not a directory (set data.local_dir or SWEEP_DATA_DIR to the folder holding nli/ and stsb/)",
            )
        return path
    here = Path.cwd().resolve()
    for candidate in (folder / "shared" / "data" for folder in (here, *here.parents)):
        if candidate.is_dir():
            return candidate.resolve()
    return None


@dataclass(frozen=True)
class SplitSource:
    """Where one split comes from: a local CSV file or a hub dataset."""

    split: str
    local_file: Path | None
    hub: tuple[str, str | None, str | None] | None

    def describe(self) -> str:
        if self.local_file is not None:
            return str(self.local_file)
        assert self.hub is not None  # a source is a local file or a hub dataset
        name, subset, split = self.hub
        return f"hub:{name}" + (f"/{subset}" if subset else "") + f"[{split}]"


@functools.cache
def shipped_local_files() -> frozenset[str]:
    """The ``local_file`` names the shipped configs (``sweep/conf``) give: files of the local data copy, each a
    copy of the hub dataset named beside it."""
    names: set[str] = set()

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("local_file"), str):
                names.add(node["local_file"])
            node = list(node.values())
        if isinstance(node, list):
            for item in node:
                collect(item)

    for path in Path(CONFIG_DIR).rglob("*.yaml"):
        collect(yaml.safe_load(path.read_text()))
    return frozenset(names)


def split_spec(data: DataConfig, split: str) -> SplitConfig:
    """The section of `split` (one of `DATA_SPLITS`) in the `data` section."""
    return {"train": data.train, "validation": data.validation, "test": data.test}[split]


def resolve_source(data: DataConfig, split: str, where: str | None = None) -> SplitSource:
    """Where `split` of the `data` section is read from (`locate`)."""
    return locate(data.source, data.local_dir, split, split_spec(data, split), where or f"data.{split}")


def locate(source: str, local_dir: str | None, split: str, spec: SplitConfig, where: str) -> SplitSource:
    """Decide where a split (``spec``) is read from, checking local files exist (before any training); ``source``
    and ``local_dir``: `data.source` and `data.local_dir`.

    A relative ``local_file`` is looked for in the current directory first, then in the local data directory.
    ``data.source=auto`` reads the hub dataset instead only when the file is one of the shipped configs' own names
    (the local copy of that hub dataset, absent on a machine without it): a file the user named and that exists
    nowhere stops the command, because the preset's hub dataset is not the data they asked for. Telling the
    shipped names from the user's by value needs no flag the user would have to reset when naming their file.

    ``where`` is the config path of the split's spec in messages (``data.<split>``, ``eval.extra.<index>``)."""
    key = f"{where}.local_file"
    hub = (spec.hub_name, spec.hub_subset, spec.hub_split) if spec.hub_name else None
    if source == "hub" or (source == "auto" and not spec.local_file):
        if hub is None:
            raise ConfigError(f"{where}.hub_name", spec.hub_name, "is needed when the data is read from the hub")
        return SplitSource(split, None, hub)
    if not spec.local_file:
        raise ConfigError(key, spec.local_file, "is needed when data.source=local")
    named = Path(spec.local_file).expanduser()
    base = None if named.is_absolute() else find_local_dir(local_dir)
    tried = [named] if named.is_absolute() else [Path.cwd() / named, *([base / named] if base else [])]
    found = next((path for path in tried if path.is_file()), None)
    if found is not None:
        return SplitSource(split, found, None)
    looked = ", ".join(map(str, tried)) + ("" if base or named.is_absolute() else " (no local data directory)")
    shipped = spec.local_file in shipped_local_files()
    if source == "auto" and shipped and hub is not None:
        log.warning("%s not found (looked for %s); reading %s from the hub", spec.local_file, looked, split)
        return SplitSource(split, None, hub)
    if shipped:
        fix = "set data.local_dir or SWEEP_DATA_DIR to the folder holding the local copy" + (
            ", or data.source=hub" if hub is not None else ""
        )
    else:
        fix = "give an existing CSV file, absolute or relative to the current directory"
    raise ConfigError(key, spec.local_file, f"file not found (looked for {looked}); {fix}")


def load_split(data: DataConfig, split: str) -> Dataset:
    """Load one split of the `data` section and keep its configured columns (in order) (`load`)."""
    return load(resolve_source(data, split), split_spec(data, split), f"data.{split}")


def load(source: SplitSource, spec: SplitConfig, where: str) -> Dataset:
    """`read` the split ``spec`` from ``source`` and log its rows and where they come from."""
    dataset = read(source, spec, where)
    log.info("%s: %d rows from %s", source.split, len(dataset), source.describe())
    return dataset


def read_split(data: DataConfig, split: str) -> tuple[Dataset, SplitSource]:
    """One split of the `data` section (`read`) and where it was read from."""
    source = resolve_source(data, split)
    return read(source, split_spec(data, split), f"data.{split}"), source


def read(source: SplitSource, spec: SplitConfig, where: str) -> Dataset:
    """The split ``spec``, read from ``source`` (`locate`), with its configured columns (in order), checked
    (``where``: its config path in messages)."""
    from datasets import load_dataset

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
    return dataset


def check_available(data: DataConfig) -> None:
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


def load_all(data: DataConfig, heldout_pairs: int = 0) -> dict[str, Dataset]:
    """All splits; with `heldout_pairs`, a "heldout" split (never trained on) as well.

    The training rows are one seeded permutation of the training file (`data.seed`): the held-out pairs are its
    last `heldout_pairs` rows (at most `HELDOUT_SHARE` of the file) and the training subset (`max_samples`) its
    first ones, so asking for held-out pairs never reshuffles or replaces the rows a capped training set trains
    on. Without `max_samples` the training set is every row not held out, in file order. The trial always holds
    the pairs out (statistics on or off), so statistics never change what is trained. Each split's logged row
    count is what is used: for train, the rows trained on and the rows held out.
    """
    loaded = {split: read_split(data, split) for split in DATA_SPLITS}
    splits = {split: dataset for split, (dataset, _) in loaded.items()}
    train, source = loaded["train"]
    held = min(heldout_pairs, int(len(train) * HELDOUT_SHARE))
    order = np.random.default_rng(data.seed).permutation(len(train))
    kept, heldout = order[: len(train) - held], order[len(train) - held :]
    max_samples = data.train.max_samples
    if max_samples is not None and max_samples < len(kept):
        splits["train"] = train.select(kept[:max_samples])
    elif held:
        splits["train"] = train.select(np.sort(kept))
    if held:
        splits["heldout"] = train.select(heldout)
    capped = (
        f" (stats.heldout_pairs={heldout_pairs} capped at {HELDOUT_SHARE:.0%} of the file)"
        if held < heldout_pairs
        else ""
    )
    log.log(
        logging.WARNING if capped else logging.INFO,
        "train: %d rows trained on, %d held out for the statistics, of the %d in %s%s",
        len(splits["train"]),
        held,
        len(train),
        source.describe(),
        capped,
    )
    for split in ("validation", "test"):
        splits[split] = subset(splits[split], split_spec(data, split).max_samples, data.seed)
        log.info("%s: %d rows from %s", split, len(splits[split]), loaded[split][1].describe())
    return splits
