"""Extra evaluation sets (``eval.extra``): scored pairs, labelled pairs and retrieval sets, each scored with
sentence-transformers' own evaluator and logged as ``<name>_<metric>``.

An entry names a dataset the way a data split does (``hub_name``/``hub_subset``/``hub_split`` or ``local_file``,
absolute or relative to the local data directory; ``columns`` in order; ``max_samples``) plus its ``kind``:

- ``scored_pairs`` (sentence1, sentence2, score): ``EmbeddingSimilarityEvaluator``, metric ``spearman`` (cosine);
- ``labelled_pairs`` (sentence1, sentence2, label): ``BinaryClassificationEvaluator``, metrics ``ap`` and ``f1``
  (cosine); labels in ``positive_labels`` (default [1]) count as 1, in ``negative_labels`` (default [0]) as 0,
  other rows are dropped (e.g. NLI neutral);
- ``retrieval`` (query, relevant document): ``InformationRetrievalEvaluator`` over the corpus of every document of
  the set, metrics ``ndcg_at_10`` and ``mrr_at_10`` (cosine).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from sweep.config import DataConfig, EvalConfig, SplitConfig, plain_dict, require_int
from sweep.errors import ConfigError
from sweep.inputs import data as data_module
from sweep.names import ATTR_EXTRA_PREFIX

if TYPE_CHECKING:  # checking the `eval` section and naming its metrics import neither (`build_evaluator` does)
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

# kind -> (number of columns, metric names, the key of each metric in the evaluator's output after its name_)
KINDS: dict[str, tuple[int, dict[str, str]]] = {
    "scored_pairs": (3, {"spearman": "spearman_cosine"}),
    "labelled_pairs": (3, {"ap": "cosine_ap", "f1": "cosine_f1"}),
    "retrieval": (2, {"ndcg_at_10": "cosine_ndcg@10", "mrr_at_10": "cosine_mrr@10"}),
}
SPEC_KEYS = {
    "name",
    "kind",
    "hub_name",
    "hub_subset",
    "hub_split",
    "local_file",
    "columns",
    "max_samples",
    "positive_labels",
    "negative_labels",
}
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MEAN_OBJECTIVE = "mean"  # eval.objective=mean: mean of STSB validation and each set's first metric
RESERVED_PREFIXES = ("stsb", "sim", "train", "objective")


def specs(ev: EvalConfig) -> list[Any]:
    """The ``eval.extra`` entries of the `eval` section (an empty list when the key is null)."""
    return list(ev.extra or [])


def metric_names(spec: Mapping[str, Any]) -> list[str]:
    """The logged metric names of one entry, its primary metric first."""
    return [f"{spec['name']}_{metric}" for metric in KINDS[spec["kind"]][1]]


def objectives(ev: EvalConfig) -> list[str]:
    """The values ``eval.objective`` may take because of the extra sets: ``mean`` and every metric name."""
    entries = specs(ev)
    return [MEAN_OBJECTIVE, *(name for spec in entries for name in metric_names(spec))] if entries else []


def validate(ev: EvalConfig) -> None:
    """Check the shape of every ``eval.extra`` entry (no data is read: see ``check_sets``); that ``eval.extra`` is a
    list and ``eval.extra_every_eval`` a bool is the schema's (sweep.config.schema)."""
    seen: set[str] = set()
    for index, spec in enumerate(specs(ev)):
        key = f"eval.extra.{index}"
        if not isinstance(spec, DictConfig):
            raise ConfigError(key, spec, "must be a mapping with name, kind, hub_name or local_file, columns")
        unknown = sorted(set(spec) - SPEC_KEYS)
        if unknown:
            raise ConfigError(f"{key}.{unknown[0]}", spec[unknown[0]], f"unknown key; allowed: {sorted(SPEC_KEYS)}")
        name = spec.get("name")
        if not isinstance(name, str) or not NAME.match(name) or name.startswith(RESERVED_PREFIXES) or name in seen:
            raise ConfigError(
                f"{key}.name",
                name,
                "must be a unique identifier (letters, digits, _) not starting with " + "/".join(RESERVED_PREFIXES),
            )
        seen.add(name)
        kind = spec.get("kind")
        if kind not in KINDS:
            raise ConfigError(f"{key}.kind", kind, f"must be one of {', '.join(KINDS)}")
        n_columns = KINDS[kind][0]
        columns = spec.get("columns")
        if not isinstance(columns, ListConfig) or len(columns) != n_columns:
            raise ConfigError(f"{key}.columns", columns, f"kind {kind} needs {n_columns} column names, in order")
        if not spec.get("hub_name") and not spec.get("local_file"):
            raise ConfigError(f"{key}.local_file", None, "give local_file or hub_name")
        if spec.get("max_samples") is not None:
            require_int(f"{key}.max_samples", spec.max_samples, note="or null")
        for labels in ("positive_labels", "negative_labels"):
            if spec.get(labels) is not None and kind != "labelled_pairs":
                raise ConfigError(f"{key}.{labels}", spec[labels], "applies to kind labelled_pairs only")


def _as_split(spec: Mapping[str, Any]) -> SplitConfig:
    """The entry as a data split, so that ``sweep.inputs.data`` finds and checks its file like any split."""
    return SplitConfig(
        hub_name=spec.get("hub_name"),
        hub_subset=spec.get("hub_subset"),
        hub_split=spec.get("hub_split") or "test",
        local_file=spec.get("local_file"),
        columns=list(spec["columns"]),
        max_samples=spec.get("max_samples"),
    )


def _binary_labels(dataset: Dataset, spec: Mapping[str, Any], key: str) -> Dataset:
    """Map the label column to 1 (positive_labels) / 0 (negative_labels), dropping rows with other labels."""
    label = spec["columns"][2]
    positive = set(spec.get("positive_labels") or [1])
    negative = set(spec.get("negative_labels") or [0])
    kept = dataset.filter(lambda row: row[label] in positive or row[label] in negative)
    kept = kept.map(lambda row: {label: int(row[label] in positive)})
    found = set(kept.unique(label))
    if found != {0, 1}:
        raise ConfigError(
            f"{key}.columns",
            list(spec["columns"]),
            f"column {label!r} must hold both classes after mapping positive_labels {sorted(positive)} to 1 and "
            f"negative_labels {sorted(negative)} to 0 (found {sorted(found)} in {len(kept)} rows); set them",
        )
    return kept


def set_source(ev: EvalConfig, data: DataConfig, index: int) -> data_module.SplitSource:
    """Where entry ``index`` of ``eval.extra`` is read from (its file or hub dataset; ``data``: the `data` section)."""
    split = _as_split(specs(ev)[index])
    return data_module.locate(data.source, data.local_dir, "set", split, f"eval.extra.{index}")


def load_set(ev: EvalConfig, data: DataConfig, index: int) -> Dataset:
    """Entry ``index`` of ``eval.extra``: its columns, labels mapped to 0/1, a seeded ``max_samples`` subset."""
    spec, key = specs(ev)[index], f"eval.extra.{index}"
    dataset = data_module.load(set_source(ev, data, index), _as_split(spec), key)
    if spec["kind"] == "labelled_pairs":
        dataset = _binary_labels(dataset, spec, key)
    return data_module.subset(dataset, spec.get("max_samples"), data.seed)


def build_evaluator(spec: Mapping[str, Any], dataset: Dataset, batch_size: int) -> SentenceEvaluator:
    """sentence-transformers' evaluator for one loaded entry, given plain lists (a dataset's column is a lazy view
    that each evaluation would iterate row by row)."""
    from sentence_transformers.sentence_transformer.evaluation import (
        BinaryClassificationEvaluator,
        EmbeddingSimilarityEvaluator,
        InformationRetrievalEvaluator,
    )

    name, kind = spec["name"], spec["kind"]
    table = dataset.to_dict()
    columns = [table[c] for c in dataset.column_names]
    common: dict[str, Any] = {"name": name, "batch_size": batch_size, "write_csv": False}
    if kind == "scored_pairs":
        sentences1, sentences2, scores = columns  # KINDS: three columns
        return EmbeddingSimilarityEvaluator(sentences1, sentences2, scores, main_similarity="cosine", **common)
    if kind == "labelled_pairs":
        sentences1, sentences2, labels = columns
        return BinaryClassificationEvaluator(sentences1, sentences2, labels, similarity_fn_names=["cosine"], **common)
    queries: dict[str, str] = {}
    corpus: dict[str, str] = {}
    relevant: dict[str, set[str]] = {}
    for query, document in zip(*columns, strict=True):
        qid = queries.setdefault(query, f"q{len(queries)}")
        did = corpus.setdefault(document, f"d{len(corpus)}")
        relevant.setdefault(qid, set()).add(did)
    return InformationRetrievalEvaluator(
        {qid: text for text, qid in queries.items()},
        {did: text for text, did in corpus.items()},
        relevant,
        mrr_at_k=[10],
        ndcg_at_k=[10],
        accuracy_at_k=[1],
        precision_recall_at_k=[10],
        map_at_k=[10],
        score_functions=None,
        main_score_function="cosine",
        **common,
    )


@dataclass
class ExtraEvaluators:
    """The evaluators of a config's ``eval.extra`` sets."""

    entries: list[tuple[dict[str, Any], SentenceEvaluator]] = field(default_factory=list)
    sets: dict[str, tuple[Dataset, data_module.SplitSource]] = field(default_factory=dict)  # by name: rows, source

    @classmethod
    def from_config(cls, ev: EvalConfig, data: DataConfig, batch_size: int) -> ExtraEvaluators:
        """The sets of the `eval` section, read where the `data` section says, scored in batches of ``batch_size``."""
        entries, sets = [], {}
        for index, spec in enumerate(specs(ev)):
            plain = plain_dict(spec)
            dataset = load_set(ev, data, index)
            entries.append((plain, build_evaluator(plain, dataset, batch_size)))
            sets[plain["name"]] = (dataset, set_source(ev, data, index))
        return cls(entries, sets)

    def score(self, model: SentenceTransformer) -> dict[str, float]:
        """``{<name>_<metric>: value}`` for every set."""
        scores: dict[str, float] = {}
        for spec, evaluator in self.entries:
            output = evaluator(model)
            assert isinstance(output, dict)  # each evaluator of KINDS returns its metrics by name
            for metric, output_key in KINDS[spec["kind"]][1].items():
                scores[f"{spec['name']}_{metric}"] = float(output[f"{spec['name']}_{output_key}"])
        return scores

    def primary(self, scores: Mapping[str, float]) -> list[float]:
        """Each set's first metric, in config order."""
        return [scores[metric_names(spec)[0]] for spec, _ in self.entries]


@dataclass
class ExtraCache:
    """The extra evaluators of each distinct (``eval.extra``, data location, batch size), built once per study."""

    _built: dict[str, ExtraEvaluators] = field(default_factory=dict)

    def get(self, ev: EvalConfig, data: DataConfig, batch_size: int) -> ExtraEvaluators:
        key = json.dumps(
            [[OmegaConf.to_container(spec, resolve=True) for spec in specs(ev)], data.source, data.local_dir]
            + [data.seed, batch_size],
            sort_keys=True,
        )
        if key not in self._built:
            self._built[key] = ExtraEvaluators.from_config(ev, data, batch_size)
        return self._built[key]


def check_sets(ev: EvalConfig, data: DataConfig) -> None:
    """Read every set once before training: a missing file, missing columns, an empty set or unusable labels stop
    the study with one line naming the entry's key."""
    for index, spec in enumerate(specs(ev)):
        try:
            load_set(ev, data, index)
        except ConfigError:
            raise
        except Exception as error:  # noqa: BLE001 - hub errors (offline, unknown name): name the entry
            reason = f"{type(error).__name__}: {error}".splitlines()[0]
            where = spec.get("local_file") or spec.get("hub_name")
            raise ConfigError(f"eval.extra.{index}", where, f"cannot be read ({reason})") from None


def record(trial: Any, scores: Mapping[str, float]) -> None:
    """Keep the scores on the Optuna trial (``extra.<metric>``) for the final table."""
    for key, value in scores.items():
        trial.set_user_attr(ATTR_EXTRA_PREFIX + key, value)


@dataclass
class TrialScorer:
    """Scores one trial's model on the extra sets and logs them: at evaluation steps (as a step callback, with
    ``eval.extra_every_eval=true``) and at the end, without scoring the last step twice."""

    extra: ExtraEvaluators
    model: SentenceTransformer
    log_metrics: Callable[..., None]
    last: tuple[int, dict[str, float]] | None = None

    def __call__(self, step: int) -> None:
        self.last = (step, self.extra.score(self.model))
        self.log_metrics(self.last[1], step=step)

    def final(self, step: int) -> dict[str, float]:
        """The scores at the last training step, logged there (once)."""
        if self.last is None or self.last[0] != step:
            self(step)
        assert self.last is not None  # set by self(step)
        return self.last[1]


def chain(*callbacks: Callable[[int], object] | None) -> Callable[[int], None] | None:
    """One step callback calling each given one in turn (None when none is given)."""
    present = [c for c in callbacks if c is not None]
    if not present:
        return None

    def call(step: int) -> None:
        for callback in present:
            callback(step)

    return call


def table_columns(user_attrs: Mapping[str, Any]) -> dict[str, float]:
    """The extra scores recorded on a trial, as results-table columns ``<name>_<metric>``."""
    return {k.removeprefix(ATTR_EXTRA_PREFIX): v for k, v in user_attrs.items() if k.startswith(ATTR_EXTRA_PREFIX)}
