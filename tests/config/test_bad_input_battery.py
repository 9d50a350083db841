"""The battery of bad inputs, generated from the schema: every key of `SweepConfig`, and every key of each loss's
YAML, gets one row per way a value of its type can be bad (not a number, not finite, below or above any sane range,
not a boolean, an unknown name). Each row asserts the door's contract through the one validation pass (composition,
then `check_config`): refused, in one line naming the key, with nothing created under ``paths.root``.

A row the tool accepts on purpose is in `ACCEPTED`, with the reason, and is checked to be accepted (the list cannot
go stale). A key whose type generates no row (a list, a loose ``Any`` key) has its rows in `HAND_ROWS`. The coverage
test fails for a key of the schema with no row, so a new key cannot be added without its rows. Subprocess rows check
the same contract through ``python -m sweep`` (exit 2, one line, no folder). The rows of bad files (a CSV's cells,
header, rows) are in `tests/config/test_input_checks.py`, those of the report commands in
`tests/report/test_report_errors.py`."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from sweep.config.checks import CONFIG_DIR, flatten
from sweep.config.composition import compose_config
from sweep.config.schema import ScaleScheduleConfig, SweepConfig, WrapperConfig
from sweep.errors import ConfigError, ConfigErrors
from sweep.study.validation import check_config
from tests.helpers import run_sweep

# The ways a value of each scalar type can be bad: {type: {way: override value}}.
WAYS: dict[type, dict[str, str]] = {
    int: {"not-a-number": "abc", "below": "-1", "above": "1000000000000"},
    float: {"not-a-number": "abc", "nan": "nan", "inf": "inf", "-inf": "-inf", "below": "-1", "above": "1e12"},
    bool: {"not-a-boolean": "maybe"},
    str: {"unknown-name": "nope"},
}

TRANSFORMER = ("model=tiny_bert",)
LAYER_GRID = (*TRANSFORMER, "eval.layer_grid.enabled=true")
RACE = ("study.race.enabled=true", "study.seeds=[0,1,2]", "+study.search_space.loss.scale=[10,20]")
# Extra overrides under which a key is read (a key of a switched-off part is not): {key prefix or key: overrides}.
CONTEXTS: dict[str, tuple[str, ...]] = {
    "loss.wrapper.dims": ("loss.wrapper.name=matryoshka",),
    "loss.wrapper.weights": ("loss.wrapper.name=matryoshka", "loss.wrapper.dims=[32,16]"),
    "loss.wrapper.n_dims_per_step": ("loss.wrapper.name=matryoshka", "loss.wrapper.dims=[32,16]"),
    "loss.wrapper.": (*TRANSFORMER, "loss.wrapper.name=adaptive_layer"),
    "loss.scale_schedule.min_scale": ("loss.scale_schedule.kind=cosine", "loss.scale_schedule.max_scale=50"),
    "loss.scale_schedule.max_scale": ("loss.scale_schedule.kind=cosine", "loss.scale_schedule.min_scale=5"),
    "loss.scale_schedule.period_steps": (
        "loss.scale_schedule.kind=cosine",
        "loss.scale_schedule.min_scale=5",
        "loss.scale_schedule.max_scale=50",
    ),
    "loss.scale_schedule.start_scale": ("loss.scale_schedule.kind=linear", "loss.scale_schedule.end_scale=50"),
    "loss.scale_schedule.end_scale": ("loss.scale_schedule.kind=linear", "loss.scale_schedule.start_scale=5"),
    "eval.cell": (*LAYER_GRID, "eval.objective=cell"),
    "eval.layer_grid.": LAYER_GRID,
    "study.race.": RACE,
    "study.pruner._target_": (),
    "study.pruner.n_startup_trials": ("study.pruner.name=median",),
    "study.pruner.n_warmup_steps": ("study.pruner.name=median",),
    "study.pruner.": ("study.pruner.name=hyperband",),
}
# A loss's own keys are read once the data and model fit it: {loss option: overrides}.
LOSS_CONTEXTS = {
    "angle_composite": ("data=nli_pair_score",),
    "cosent": ("data=nli_pair_score",),
    "cached_mnrl": TRANSFORMER,
    "gist": TRANSFORMER,
}

UNBOUNDED = "a count of steps, rows, trials or seconds: any size is a valid (if long) study, null where it has none"
# Rows accepted on purpose: {(key, way): why}.
ACCEPTED: dict[tuple[str, str], str] = {
    **{
        (key, "above"): UNBOUNDED
        for key in (
            "data.train.max_samples",
            "data.validation.max_samples",
            "data.test.max_samples",
            "trial.max_steps",
            "trial.batch_size",
            "trial.eval_steps",
            "trial.logging_steps",
            "trial.early_stopping_patience",
            "study.n_trials",
            "study.timeout",
            "study.max_retries",
            "study.max_failures",
            "study.max_repeated_failures",
            "study.heartbeat_interval",
            "study.outage_timeout_s",
            "tracking.outage_timeout_s",
            "tracking.system_metrics_interval_s",
            "study.pruner.n_startup_trials",
            "study.pruner.n_warmup_steps",
            "study.pruner.reduction_factor",
            "stats.heldout_pairs",
            "stats.paired.resamples",
            "loss.wrapper.kl_div_weight",
            "loss.wrapper.last_layer_weight",
            "loss.wrapper.prior_layers_weight",
            "loss.scale_schedule.period_steps",
        )
    },
    ("model.embedding_dim", "above"): "a random static model's width: the machine's memory bounds it, unknown here",
    ("model.max_seq_length", "above"): "a static model reads whole texts (a transformer's: a hand row)",
    ("model.learning_rate", "above"): "a static model's rate has no bound the config can know (a transformer's has)",
    ("trial.learning_rate", "above"): "as model.learning_rate",
    ("trial.weight_decay", "above"): "AdamW's decay has no bound the config can know",
    ("loss.wrapper.kl_temperature", "above"): "a softening temperature: any positive value is a valid KL term",
    ("loss.uniformity_weight", "above"): "a weight: any size is a valid (if extreme) mix of the two terms",
    ("loss.uniformity_t", "above"): "the uniformity term is a logsumexp: finite at any t",
    ("loss.max_scale", "above"): "a clamp on the learnt scale: a high one clamps nothing (as null does)",
    **{(f"loss.w{i}", "above"): "AnglE's weights: any size is a valid mix of its three terms" for i in (1, 2, 3)},
    ("loss.temperature", "above"): "a high temperature is a scale near 0, beside the zero-scale control",
    ("loss.margin", "below"): "GIST's margin: a negative one filters fewer candidates (within [-2, 2], checked)",
    ("loss.wrapper.n_dims_per_step", "below"): "-1 is every dim, sentence-transformers' own value (-2: a hand row)",
    ("loss.wrapper.n_layers_per_step", "below"): "-1 is every layer, sentence-transformers' own value (-2: a hand row)",
    **{
        (key, "unknown-name"): why
        for key, why in {
            "paths.root": "a folder: created where it is written (its parent must be writable: checked)",
            "model.name_or_path": "a hub name or a folder: looked for when the study loads (load=True, tested apart)",
            "tracking.uri": "MLflow reads a plain path as a local store (its own rule)",
            "tracking.experiment_name": "any name is an MLflow experiment's",
            "tracking.artifact_location": "any folder or URI MLflow can write",
            "tracking.registered_model_name": "any name is an MLflow registered model's",
        }.items()
        if why
    },
    **{
        (f"data.{split}.{key}", "unknown-name"): "a hub dataset's name: looked for when the study loads (load=True)"
        for split in ("train", "validation", "test")
        for key in ("hub_name", "hub_subset", "hub_split")
    },
}


@dataclasses.dataclass(frozen=True)
class Row:
    key: str
    way: str
    value: str
    context: tuple[str, ...] = ()
    named: str = ""  # the key the refusal names, when it is not `key` (a loss's YAML key is named as loss.KEY)

    @property
    def id(self) -> str:
        return f"{self.key}-{self.way}" + (f"-{self.context[0]}" if self.context else "")


# Keys whose type generates no row (lists, loose keys): their rows by hand.
HAND_ROWS = [
    Row("name", "a-path", "../elsewhere"),
    Row("study.name", "a-path", "a/b"),
    Row("model.max_seq_length", "above-positions", "100000", TRANSFORMER),
    Row("model.config_overrides", "without-reinit", "{hidden_size:64}", (*TRANSFORMER, "model.reinit=false")),
    Row("data.train.columns", "empty", "[]"),
    Row("data.validation.columns", "no-score", "[sentence1,sentence2]"),
    Row("data.test.columns", "empty", "[]"),
    Row("trial.eval_batch_size", "below", "0"),
    Row("trial.eval_batch_size", "unknown-name", "sometimes"),
    Row("study.n_workers", "not-a-number", "lots"),  # auto or a count: a loose key since auto (issue 50)
    Row("study.n_workers", "below", "0"),
    Row("study.n_workers", "above", "1000000000000"),
    Row("study.pack_memory_gib", "below", "-1"),
    Row("study.pack_memory_gib", "not-a-number", "lots"),
    Row("study.pruner.min_resource", "below", "0"),
    Row("study.search_space", "without-plus", "{loss:{scale:[10,20]}}"),
    Row("+study.search_space", "not-finite", "{loss:{scale:[10,inf]}}", named="study.search_space.loss.scale"),
    Row("+study.search_space", "repeated", "{loss:{scale:[10,10]}}", named="study.search_space.loss.scale"),
    Row("study.seeds", "empty", "[]"),
    Row("study.seeds", "below", "[-1]"),
    Row("study.seeds", "above", "[4294967296]"),
    Row("study.seeds", "repeated", "[0,0]"),
    Row("study.devices", "unknown-name", "tpu"),
    Row("stats.loss_scales", "below", "[-1]"),
    Row("eval.layer_grid.layers", "not-a-number", "[a]", LAYER_GRID),
    Row("eval.layer_grid.dims", "above", "[100000]", LAYER_GRID),
    Row("eval.extra", "unknown-kind", "[{name:x,kind:nope}]", named="eval.extra.0.kind"),
    Row("loss.scale_schedule.spec", "unknown-name", "sometimes"),
    Row("loss.wrapper.dims", "increasing", "[16,32]", CONTEXTS["loss.wrapper.dims"]),
    Row("loss.wrapper.weights", "below", "[-1,1]", CONTEXTS["loss.wrapper.weights"]),
    Row("loss.wrapper.n_dims_per_step", "below-all", "-2", CONTEXTS["loss.wrapper.n_dims_per_step"]),
    Row("loss.wrapper.n_layers_per_step", "below-all", "-2", CONTEXTS["loss.wrapper."]),
    Row("loss", "unknown-name", "nope"),
]


def _scalar(annotation: Any) -> Any:
    """``int | None`` -> int; other annotations unchanged."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def schema_leaves(cls: type = SweepConfig, prefix: str = "") -> dict[str, Any]:
    """{dotted key: its scalar type} for every leaf of the schema (a nested dataclass is walked into; the `loss`
    section, untyped for OmegaConf, by its typed parts)."""
    hints = typing.get_type_hints(cls)
    leaves: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        annotation = hints[field.name]
        if dataclasses.is_dataclass(annotation):
            leaves.update(schema_leaves(annotation, f"{prefix}{field.name}."))  # type: ignore[arg-type]
        else:
            leaves[f"{prefix}{field.name}"] = _scalar(annotation)
    if cls is SweepConfig:
        leaves.update(schema_leaves(WrapperConfig, "loss.wrapper."))
        leaves.update(schema_leaves(ScaleScheduleConfig, "loss.scale_schedule."))
    return leaves


def _context(key: str) -> tuple[str, ...]:
    return next((overrides for prefix, overrides in CONTEXTS.items() if key.startswith(prefix)), ())


def loss_leaves() -> dict[str, tuple[str, type]]:
    """{loss option/key: (its loss.KEY, type)} for each number of each loss's own YAML (`sweep/conf/loss/*.yaml`):
    the untyped part of the `loss` section."""
    leaves = {}
    for option in sorted(path.stem for path in (Path(CONFIG_DIR) / "loss").glob("*.yaml")):
        section = compose_config([f"loss={option}"]).loss
        for key, value in flatten(OmegaConf.to_container(section)).items():
            if key.split(".")[0] not in ("wrapper", "scale_schedule") and isinstance(value, (int, float)):
                leaves[f"{option}/{key}"] = (f"loss.{key}", bool if isinstance(value, bool) else type(value))
    return leaves


def generated_rows() -> list[Row]:
    rows = [
        Row(key, way, value, _context(key))
        for key, kind in schema_leaves().items()
        for way, value in WAYS.get(kind, {}).items()
    ]
    for where, (key, kind) in loss_leaves().items():
        option = where.split("/")[0]
        ways = WAYS[float if kind is int else kind]  # a loss's number written as 20 is still a float key
        context = (f"loss={option}", *LOSS_CONTEXTS.get(option, ()))
        rows += [Row(key, way, value, context) for way, value in ways.items()]
    return rows


ROWS = generated_rows() + HAND_ROWS


def _refusal(row: Row, root: Path) -> ConfigError | None:
    overrides = [f"paths.root={root}", *row.context, f"{row.key}={row.value}"]
    try:
        check_config(compose_config(overrides), overrides, load=False)
    except ConfigError as error:
        return error
    return None


def _named(error: ConfigError) -> list[str]:
    return [found.key for found in (error.errors if isinstance(error, ConfigErrors) else [error])]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_each_bad_value_is_refused_in_one_line_naming_its_key(row, tmp_path):
    root = tmp_path / "runs"
    error = _refusal(row, root)
    why = ACCEPTED.get((row.key, row.way))
    if why is not None:
        assert error is None, f"accepted on purpose ({why}), but refused: {error}"
        return
    assert error is not None, f"{row.key}={row.value} is accepted: refuse it, or list it in ACCEPTED with the reason"
    assert (row.named or row.key) in _named(error), f"names {_named(error)}, not {row.named or row.key}: {error}"
    assert "Traceback" not in str(error), error
    assert not root.exists(), "nothing created: the pass runs before any work"


def test_every_key_of_the_schema_has_rows():
    """A new key of the schema (or of a loss's YAML) cannot be added without rows in the battery."""
    covered = {row.key.lstrip("+") for row in ROWS}
    loose = {"loss"}  # the untyped section: its keys come from each loss's YAML (`loss_leaves`)
    missing = sorted(set(schema_leaves()) - covered - loose)
    assert not missing, f"keys without rows (add a WAYS type, or HAND_ROWS): {missing}"
    stale = sorted({key for key, _ in ACCEPTED} - covered)
    assert not stale, f"ACCEPTED names keys no row has: {stale}"


# One row of each kind through the command itself: exit 2, one line, no traceback, no folder.
COMMAND_ROWS = [
    ("trial.learning_rate=inf",),
    ("study.seeds=[4294967296]",),
    ("stats.n_random_pairs=0",),
    ("study.storage=nope",),
    ("study.n_workers=lots",),
]


@pytest.mark.parametrize("overrides", COMMAND_ROWS, ids=[row[0] for row in COMMAND_ROWS])
def test_the_command_refuses_in_one_line_and_creates_nothing(overrides, tmp_path):
    home = tmp_path / "sweep_runs"
    done = run_sweep("+experiment=mnrl_scale", *overrides, home=home, timeout=300)
    key = overrides[0].split("=")[0]
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sweep: invalid config: {key}="), lines
    assert not home.exists() and not list(tmp_path.iterdir()), "nothing created"
