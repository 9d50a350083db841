"""A findings page's questions as a small YAML file, read and checked before any number is computed: which results
folders each question reads and which comparison answers it (`COMPARISONS`). `sweep.report.answers` computes the
answers; docs/reports.md shows a file. Everything wrong with the file is a `QuestionsError`: one line naming the key
and the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from sweep.errors import QuestionsError
from sweep.report.results_folder import TRIALS_CSV, flat_config

SCALE, SEED = "loss.scale", "trial.seed"
BEST_SCALE, POOLED, INTERACTION, TUNED = "best_scale", "pooled", "interaction", "tuned"
# each comparison: its required keys (besides question and compare) and its optional ones, with what each is for
COMPARISONS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    BEST_SCALE: ({"folder": "the results folder (folder: my_study)"}, {"reference": "a scale to read against"}),
    POOLED: (
        {
            "folders": "a list of results folders",
            "a": "the scale compared (a: 10)",
            "b": "the scale it is compared with (b: 20)",
        },
        {},
    ),
    INTERACTION: (
        {
            "folder": "a results folder that swept a condition besides the scale",
            "a": "the scale compared (a: 10)",
            "b": "the scale it is compared with (b: 20)",
        },
        {},
    ),
    TUNED: (
        {
            "folders": "results folders of one set-up (same seeds)",
            "condition": "the config key tuned per scale (condition: trial.learning_rate)",
        },
        {"reference": "a scale to read against"},
    ),
}
PROSE = ("confounds", "literature", "change")  # the page shows them as given
COMMON = {"question", "compare", "metric", *PROSE}
TOP_KEYS = {"title", "intro", "metric", "questions"}


@dataclass(frozen=True)
class Question:
    """One question of the file: the comparison that answers it, the folders it reads (paths under the results
    directory), the scales it names, and the prose the page shows beside the numbers."""

    question: str
    compare: str
    folders: tuple[Path, ...]
    metric: str | None = None
    a: float | None = None
    b: float | None = None
    reference: float | None = None
    condition: str | None = None
    confounds: tuple[str, ...] = ()
    literature: tuple[str, ...] = ()
    change: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuestionFile:
    title: str
    intro: str
    questions: list[Question] = field(default_factory=list)


def _strings(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise QuestionsError(f"{key}: a text or a list of texts, got {value!r}")
    return tuple(value)


def _scale(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuestionsError(f"{key}: a scale (a number, e.g. {key.rsplit('.', 1)[-1]}: 20), got {value!r}")
    return float(value)


def _columns(folder: Path, key: str) -> Sequence[str]:
    if not (folder / TRIALS_CSV).is_file():
        raise QuestionsError(
            f"{key}: {folder} has no {TRIALS_CSV}: name a results folder under --results (python -m sweep.report "
            "study --out DIR writes one)"
        )
    return list(pd.read_csv(folder / TRIALS_CSV, nrows=0).columns)


def _check_folder(folder: Path, key: str, question: Question) -> None:
    """The folder exists, has the metric and the scales the question names, and (interaction) swept a condition."""
    columns = _columns(folder, key)
    if question.metric is not None and question.metric not in columns:
        raise QuestionsError(f"{key}: {folder / TRIALS_CSV} has no column {question.metric}: fix `metric`")
    if SCALE not in columns:
        raise QuestionsError(f"{key}: {folder / TRIALS_CSV} has no column {SCALE}: the study did not sweep the scale")
    scales = set(pd.read_csv(folder / TRIALS_CSV, usecols=[SCALE])[SCALE].dropna())
    if len(scales - {0.0}) < 2:  # scale 0: the untrained model, not a scale to choose
        raise QuestionsError(f"{key}: {folder.name} ran fewer than two scales: nothing to compare, name another folder")
    for name in ("a", "b", "reference"):
        value = getattr(question, name)
        if value is not None and value not in scales:
            tried = ", ".join(f"{s:g}" for s in sorted(scales))
            raise QuestionsError(f"{key}: {folder.name} did not run scale {value:g} (`{name}`): use one of {tried}")
    swept = [c for c in columns if "." in c and c not in (SCALE, SEED)]
    if question.compare == INTERACTION and not swept:
        raise QuestionsError(f"{key}: {folder.name} swept no condition besides the scale: use compare: best_scale")
    if question.condition is not None and question.condition not in columns:
        if question.condition not in flat_config(folder):
            raise QuestionsError(
                f"{key}: {folder.name} has no {question.condition} (trials.csv or config.yaml): fix `condition`"
            )


def _question(entry: object, key: str, results: Path, metric: str | None) -> Question:
    if not isinstance(entry, Mapping):
        raise QuestionsError(f"{key}: a mapping with question, compare and its keys, got {entry!r}")
    compare = entry.get("compare")
    if compare not in COMPARISONS:
        raise QuestionsError(f"{key}.compare: unknown comparison {compare!r}: use one of {', '.join(COMPARISONS)}")
    required, optional = COMPARISONS[str(compare)]
    for name in ["question", *required]:
        if name not in entry:
            what = required.get(name, "the question the section answers")
            raise QuestionsError(f"{key}.{name}: missing ({what}) for compare: {compare}")
    unknown = sorted(set(entry) - COMMON - set(required) - set(optional))
    if unknown:
        allowed = ", ".join(sorted(COMMON | set(required) | set(optional)))
        raise QuestionsError(f"{key}.{unknown[0]}: unknown key for compare: {compare} (allowed: {allowed})")
    names = _strings(entry["folders"], f"{key}.folders") if "folders" in entry else (str(entry["folder"]),)
    if not names:
        raise QuestionsError(f"{key}.folders: empty: name at least one results folder")
    given = entry.get("metric", metric)
    scales = {name: _scale(entry[name], f"{key}.{name}") if name in entry else None for name in ("a", "b", "reference")}
    prose = {name: _strings(entry[name], f"{key}.{name}") if name in entry else () for name in PROSE}
    question = Question(
        question=str(entry["question"]),
        compare=str(compare),
        folders=tuple(results / name for name in names),
        metric=str(given) if given is not None else None,
        a=scales["a"],
        b=scales["b"],
        reference=scales["reference"],
        condition=str(entry["condition"]) if "condition" in entry else None,
        confounds=prose["confounds"],
        literature=prose["literature"],
        change=prose["change"],
    )
    if question.a is not None and question.a == question.b:
        raise QuestionsError(f"{key}.b: the same scale as a ({question.a:g}): compare two different scales")
    field_name = "folders" if "folders" in entry else "folder"
    for folder in question.folders:
        _check_folder(folder, f"{key}.{field_name}", question)
    return question


def read_questions(path: Path, results: Path) -> QuestionFile:
    """The questions of ``path`` with their folders under ``results``, every key, folder, metric and scale checked."""
    if not path.is_file():
        raise QuestionsError(f"{path}: no such questions file: give --questions FILE (docs/reports.md shows one)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise QuestionsError(f"{path}: not YAML: {' '.join(str(error).split())}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list) or not data["questions"]:
        raise QuestionsError(f"{path}: questions: missing: a list of questions, each with question, compare and folder")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise QuestionsError(f"{path}: {unknown[0]}: unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    metric = data.get("metric")
    try:
        questions = [
            _question(entry, f"questions[{index}]", results, str(metric) if metric is not None else None)
            for index, entry in enumerate(data["questions"])
        ]
    except QuestionsError as error:
        raise QuestionsError(f"{path}: {error}") from None
    return QuestionFile(str(data.get("title", "Findings")), str(data.get("intro", "")), questions)
