"""Checks of values that sweep hands straight to a library or reads from disk (the optimizer and scheduler names,
the device, a user's CSV files) and of command-line overrides that the search space would silently replace: all
before any training, each a `ConfigError` naming the key."""

from __future__ import annotations

import ast
import csv
import functools
import importlib
import importlib.util
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep.config.checks import flatten
from sweep.config.schema import TrialConfig
from sweep.errors import ConfigError

DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
# Setting one of these replaces the other (scale = 1/temperature): an override of either is lost when one is swept.
LINKED_KEYS = {"loss.scale": "loss.temperature", "loss.temperature": "loss.scale"}


@functools.lru_cache(maxsize=4)
def transformers_names(module: str, enum: str) -> tuple[str, ...]:
    """The values of the string enum `enum` of transformers' `module` (``training_args``: `OptimizerNames`), read from
    the installed source file without importing it: importing transformers.training_args imports torch, seconds of a
    refusal. Where the file or the class is not found (another transformers layout), the enum is imported."""
    spec = importlib.util.find_spec("transformers")  # finds the package without importing it
    locations = spec.submodule_search_locations if spec is not None else None
    source = Path(next(iter(locations)), f"{module}.py") if locations else None
    if source is not None and source.is_file():
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name == enum:
                values = tuple(
                    item.value.value
                    for item in node.body
                    if isinstance(item, ast.Assign)
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                )
                if values:
                    return values
    members = getattr(importlib.import_module(f"transformers.{module}"), enum)
    return tuple(member.value for member in members)


def check_optimizer_and_scheduler(trial: TrialConfig) -> None:
    """`trial.optimizer` and `trial.lr_scheduler` are names transformers knows (`transformers_names`)."""
    for key, value, names, kind in (
        (
            "trial.optimizer",
            trial.optimizer,
            ("training_args", "OptimizerNames"),
            "optimizer (transformers OptimizerNames)",
        ),
        (
            "trial.lr_scheduler",
            trial.lr_scheduler,
            ("trainer_utils", "SchedulerType"),
            "scheduler (transformers SchedulerType)",
        ),
    ):
        allowed = transformers_names(*names)
        if value not in allowed:
            raise ConfigError(key, value, f"is not a transformers {kind}: one of {', '.join(allowed)}")


def check_device(device: Any) -> None:
    """`trial.device` is auto, cpu, cuda, cuda:N or mps, and the accelerator it names exists here."""
    if not isinstance(device, str) or not DEVICE.fullmatch(device):
        raise ConfigError("trial.device", device, "must be auto, cpu, cuda, cuda:N or mps")
    if device in ("auto", "cpu"):
        return
    import torch  # slow to import: only for an explicit accelerator

    if device == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError("trial.device", device, "MPS is not available here: use trial.device=cpu or auto")
        return
    if not torch.cuda.is_available():
        raise ConfigError(
            "trial.device",
            device,
            f"CUDA is not available here (torch {torch.__version__}, torch.cuda.is_available() is false): "
            "use trial.device=cpu or auto",
        )
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise ConfigError("trial.device", device, f"only {torch.cuda.device_count()} CUDA device(s) here")


NUMERIC_COLUMNS = ("score", "label")  # gold similarity scores and labels: the evaluators and losses need numbers


def check_csv(key: str, path: Path, columns: Sequence[str]) -> None:
    """A user's CSV `path` is readable, its header has `columns`, it has a row, and every row has a value in each of
    them (a number in ``score``/``label``): an empty cell or file found only when a trial starts would fail that
    trial, so the first bad cell is named here by its line and column. Reads the whole file once (85k rows take well
    under a second)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as file:
            rows = csv.reader(file)
            header = next(rows, None)
            if not header:
                raise ConfigError(key, str(path), "is empty (a CSV with a header line is needed)")
            missing = [column for column in columns if column not in header]
            if missing:
                raise ConfigError(
                    key, str(path), f"has columns {header}, missing {missing} (set {key.rsplit('.', 1)[0]}.columns)"
                )
            where = [(header.index(column), column) for column in columns]
            filled = 0
            for row in rows:
                if not any(cell.strip() for cell in row):  # blank lines skipped
                    continue
                filled += 1
                problem = _bad_cell(row, where)
                if problem:  # line_num: the file's line, right even when a quoted cell spans lines
                    raise ConfigError(key, str(path), f"line {rows.line_num} {problem}")
            if not filled:
                raise ConfigError(key, str(path), "has no rows, only its header: add at least one row")
    except OSError as error:
        raise ConfigError(key, str(path), f"cannot be read ({error.strerror})") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise ConfigError(key, str(path), f"is not a UTF-8 CSV file ({error})") from None


def _bad_cell(row: list[str], where: list[tuple[int, str]]) -> str | None:
    """What is wrong with the first bad cell of `row` ((index, column) pairs in `where`), or None."""
    for index, column in where:
        cell = row[index].strip() if index < len(row) else ""
        if not cell:
            return f"has no value in column {column!r}: fill or drop the row"
        if column in NUMERIC_COLUMNS and not _is_number(cell):
            return f"has {cell!r} in column {column!r}, not a number"
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_swept_overrides(overrides: Sequence[str], declared: dict[str, Any], values: Mapping[str, Any]) -> None:
    """Refuse a command-line override (``loss.scale=-1``) of a key the search space sets in every trial (``values``:
    the config's flat keys, `flatten`, for the message)."""
    swept = flatten(declared)
    for override in overrides:
        key = override.partition("=")[0].lstrip("+~")
        for setter in (key, LINKED_KEYS.get(key)):
            if setter in swept:
                raise ConfigError(
                    key,
                    values.get(key),
                    f"is set in every trial by the search space (study.search_space.{setter}={swept[setter]}), so "
                    f"this override would be ignored: sweep other values with 'study.search_space.{setter}=[...]'",
                )
