"""Setting a study up before it runs: its folder (`paths.root`), the sampler and pruner, the Optuna storage (under the
SQLite init lock), create-or-load and the declared search space (its grid queue: `sweep.study.grid_queue`; the
validation of the whole config: `sweep.study.validation`).

The sampler and the pruner are built with `hydra.utils.instantiate` from a `_target_`: `study.sampler` and
`study.pruner` (sweep/conf/study/default.yaml) each hold a `_target_` (null by default), a short `name` and the keys
the short names use. Short names stay the everyday form and map to a target (`SAMPLER_TARGETS`, `PRUNER_TARGETS`),
so every existing override and recorded config (`study.sampler.name=tpe`, `study.pruner.name=successive_halving
study.pruner.min_resource=25`, a recorded config.yaml without `_target_`) keeps its meaning; config group files
would have turned `study.sampler.name=...` into a group choice and broken them. Any other Optuna class is one
`_target_` away, e.g. `study.sampler._target_=optuna.samplers.QMCSampler` or `study.pruner._target_=
optuna.pruners.PercentilePruner +study.pruner.percentile=25` (a `_target_` replaces the default name, auto / none;
a different name beside it is refused). The keys of the node:

- `_target_`: the dotted path of a `BaseSampler` / `BasePruner` subclass; null: the class `name` stands for.
- shared keys (`seed`; `n_startup_trials`, `n_warmup_steps`, `min_resource`, `reduction_factor`): given to the class
  when its signature names them, skipped otherwise (a short name's class takes the ones it used before).
- any other key (added with `+`): a keyword argument of the class, refused by name when the class has none such;
  a nested `{_target_: ...}` is built too (`+study.sampler.base_sampler._target_=...`).

What the project adds on top of Optuna: `auto` is the grid sampler when the search space is a grid and TPE
otherwise; a grid sampler (`grid`, or a `_target_` subclassing `optuna.samplers.GridSampler`, which becomes
`QueuedGridSampler`) takes its grid from `study.search_space`, never from the config; HyperbandPruner (by name or
`_target_`) reads `min_resource: auto` as `trial.eval_steps`, the first report. A `_target_` that does not import,
is not an Optuna sampler / pruner class, or whose class refuses its arguments is a `ConfigError` naming the key,
raised by the validation pass before any training. The config is logged as params as before
(`study.sampler._target_` with it)."""

from __future__ import annotations

import errno
import functools
import inspect
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import hydra
import optuna
from optuna.trial import FrozenTrial, TrialState

from sweep.config import (
    PrunerConfig,
    SamplerConfig,
    StudyConfig,
    check_seeds,
    plain_dict,
    require_auto_or_int,
    require_choice,
    require_int,
    require_seed,
    search_space,
    sqlite_init_lock,
    wait_while_locked,
)
from sweep.errors import ConfigError
from sweep.names import ATTR_READY, ATTR_SEARCH_SPACE
from sweep.study.storage_retry import RetryingRDBStorage

SAMPLERS = ("auto", "grid", "tpe", "random")
PRUNERS = ("none", "median", "successive_halving", "hyperband")
# The short names' targets (`auto`: grid or tpe, chosen from the search space).
SAMPLER_TARGETS = {
    "grid": "sweep.study.setup.QueuedGridSampler",
    "tpe": "optuna.samplers.TPESampler",
    "random": "optuna.samplers.RandomSampler",
}
PRUNER_TARGETS = {
    "none": "optuna.pruners.NopPruner",
    "median": "optuna.pruners.MedianPruner",
    "successive_halving": "optuna.pruners.SuccessiveHalvingPruner",
    "hyperband": "optuna.pruners.HyperbandPruner",
}
# Keys every choice shares: given to the class when its signature names them.
SAMPLER_SHARED = ("seed",)
PRUNER_SHARED = ("n_startup_trials", "n_warmup_steps", "min_resource", "reduction_factor")


class QueuedGridSampler(optuna.samplers.GridSampler):
    """GridSampler for a grid run through the trial queue. Every point is enqueued once, so GridSampler's own
    stopping rule is not used: it assumes each trial carries a grid_id (enqueued trials do not) and would
    hand a point that another worker is still running to an idle worker."""

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        return None


def _one_line(error: BaseException) -> str:
    """An exception (its cause, for Hydra's wrapper) as one line."""
    error = error.__cause__ or error
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def _choice(
    section: str, node: SamplerConfig | PrunerConfig, default: str, targets: dict[str, str]
) -> tuple[str, Any, str]:
    """(the key to name in errors, its value, the dotted target) of `study.sampler` or `study.pruner` (``node``);
    "" as the target for a short name without one (auto)."""
    name = node.name
    target = node._target_
    if target is None:
        return f"{section}.name", name, targets.get(name, "")
    if not isinstance(target, str) or not target:
        raise ConfigError(f"{section}._target_", target, "must be the dotted path of an Optuna class, or null")
    if name != default and targets.get(name) != target:
        raise ConfigError(
            f"{section}.name", name, f"conflicts with {section}._target_={target}: give one of them (name={default})"
        )
    return f"{section}._target_", target, target


def _locate(choice: tuple[str, Any, str], base: type) -> type:
    """The class `choice` names, which must subclass `base` (BaseSampler or BasePruner)."""
    key, value, target = choice
    try:
        cls = hydra.utils.instantiate({"_target_": target, "_partial_": True}).func
    except Exception as error:  # noqa: BLE001 - any import error: name the key and stop before training
        raise ConfigError(key, value, f"cannot be imported ({_one_line(error)}); give a class path") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        kind = base.__name__.removeprefix("Base").lower()
        example = "optuna.samplers.QMCSampler" if kind == "sampler" else "optuna.pruners.PercentilePruner"
        raise ConfigError(
            key, value, f"is not an Optuna {kind} class (a subclass of optuna.{kind}s.{base.__name__}, e.g. {example})"
        )
    return cls


def _build(
    section: str,
    node: SamplerConfig | PrunerConfig,
    choice: tuple[str, Any, str],
    cls: type,
    shared: Sequence[str],
    **fixed: Any,
) -> Any:
    """Instantiate `cls` with the shared keys of `node` it names, the node's other keys as keyword arguments (nested
    `_target_`s built too) and `fixed` (what the project supplies); a failure is a ConfigError naming the key."""
    key, value, _ = choice
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    config = plain_dict(node)
    kwargs = {name: config[name] for name in shared if name in config and name in params and name not in fixed}
    for name, argument in config.items():
        if name in ("_target_", "name", *shared):
            continue
        if name in fixed:
            raise ConfigError(f"{section}.{name}", argument, "remove it: the grid comes from study.search_space")
        if name.startswith("_") or not (takes_any or name in params):
            allowed = ", ".join(p for p in params if p not in fixed) or "no arguments"
            raise ConfigError(
                f"{section}.{name}", argument, f"is not an argument of {cls.__qualname__} (it takes: {allowed})"
            )
        kwargs[name] = argument
    try:
        built = hydra.utils.instantiate({"_target_": cls, "_partial_": True, **kwargs}, _convert_="all")(**fixed)
    except Exception as error:  # noqa: BLE001 - the class refused its arguments: name the key, before training
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ConfigError(key, value, f"{cls.__qualname__}({shown}) failed ({_one_line(error)})") from None
    return built


def make_sampler(sampler: SamplerConfig, space: search_space.Space) -> optuna.samplers.BaseSampler:
    """The sampler of `study.sampler` (a short name or a `_target_`, see the module docstring)."""
    require_choice("study.sampler.name", sampler.name, SAMPLERS)
    if sampler.seed is not None:
        require_seed("study.sampler.seed", sampler.seed)
    grid = bool(space) and search_space.is_grid(space)
    choice = _choice("study.sampler", sampler, "auto", SAMPLER_TARGETS)
    if not choice[2]:  # auto
        choice = (*choice[:2], SAMPLER_TARGETS["grid" if grid else "tpe"])
    cls = _locate(choice, optuna.samplers.BaseSampler)
    if not issubclass(cls, optuna.samplers.GridSampler):
        return _build("study.sampler", sampler, choice, cls, SAMPLER_SHARED)
    if not grid:
        raise ConfigError(*choice[:2], "needs every study.search_space entry to be a list of values")
    # Enqueued grid points need the queue-aware sampler; the grid comes from the search space.
    cls = QueuedGridSampler if cls is optuna.samplers.GridSampler else cls
    return _build("study.sampler", sampler, choice, cls, SAMPLER_SHARED, search_space=space)


def make_pruner(pruner: PrunerConfig, eval_steps: int) -> optuna.pruners.BasePruner:
    """The pruner of `study.pruner` (a short name or a `_target_`, see the module docstring). Resources are training
    steps (trials report at every `eval_steps`)."""
    require_choice("study.pruner.name", pruner.name, PRUNERS)
    require_auto_or_int("study.pruner.min_resource", pruner.min_resource, note="training steps")
    require_int("study.pruner.n_startup_trials", pruner.n_startup_trials, minimum=0, note="trials")
    require_int("study.pruner.n_warmup_steps", pruner.n_warmup_steps, minimum=0, note="training steps")
    require_int("study.pruner.reduction_factor", pruner.reduction_factor, minimum=2)
    choice = _choice("study.pruner", pruner, "none", PRUNER_TARGETS)
    cls = _locate(choice, optuna.pruners.BasePruner)
    fixed = {}
    if issubclass(cls, optuna.pruners.HyperbandPruner) and pruner.min_resource == "auto":
        # HyperbandPruner has no "auto" minimum: the first report (one evaluation) is the smallest budget.
        fixed["min_resource"] = eval_steps
    return _build("study.pruner", pruner, choice, cls, PRUNER_SHARED, **fixed)


CHOOSE_ROOT = "choose a writable folder (paths.root=DIR or SWEEP_HOME=DIR)"


NOT_WRITABLE = "is not writable: choose a folder of yours (paths.root=DIR or SWEEP_HOME=DIR)"


def check_root(root: str) -> str:
    """`paths.root` (``root``) anchored at the current directory, once it is known that the study can create it or
    write in it; nothing is created (the validation pass runs before any work)."""
    path = Path(root).expanduser().resolve()
    existing = next(folder for folder in (path, *path.parents) if folder.exists())
    if not existing.is_dir():
        raise ConfigError("paths.root", str(path), unwritable(OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))))
    if not os.access(existing, os.W_OK | os.X_OK):
        if existing == path:
            raise ConfigError("paths.root", str(path), NOT_WRITABLE)
        raise ConfigError("paths.root", str(path), unwritable(OSError(errno.EACCES, os.strerror(errno.EACCES))))
    return str(path)


def make_root(root: str) -> str:
    """`paths.root` (``root``) anchored at the current directory and created, so that every derived path and URI is
    absolute."""
    path = Path(root).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError("paths.root", str(path), unwritable(error)) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError("paths.root", str(path), NOT_WRITABLE)
    return str(path)


def unwritable(error: OSError) -> str:
    """Why a folder under ``paths.root`` cannot be made, and the fix."""
    return f"cannot be created ({error.strerror}): " + CHOOSE_ROOT


def declared_space(study: StudyConfig) -> dict[str, Any]:
    """`study.search_space` (of the `study` section) with `study.seeds` (replicates, checked first: a bad seed is
    named once, as `study.seeds`, not again at each grid point) added as a `trial.seed` axis."""
    check_seeds(study.seeds)
    declared = plain_dict(study.search_space)
    if study.seeds:
        if "seed" in declared.get("trial", {}):
            raise ConfigError(
                "study.seeds", list(study.seeds), "conflicts with study.search_space.trial.seed: give one of them"
            )
        declared.setdefault("trial", {})["seed"] = list(study.seeds)
    return declared


SQLITE_BUSY_TIMEOUT_S = 60  # how long one SQLite call waits for another connection's lock before it fails

StaleTrialCallback = Callable[[optuna.Study, FrozenTrial], None]


def open_storage(study: StudyConfig, on_stale: StaleTrialCallback) -> optuna.storages.RDBStorage:
    """The RDB storage with heartbeats (a killed worker's trial is failed and re-queued by another process), whose
    calls are retried while its database restarts or, for SQLite, another process holds it locked, opening included
    (`study.outage_timeout_s`; ``study``: the `study` section)."""
    url = study.storage
    interval = study.heartbeat_interval
    engine_kwargs = (
        {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    )
    new_storage = functools.partial(
        RetryingRDBStorage,
        url,
        engine_kwargs=engine_kwargs,
        heartbeat_interval=interval,
        grace_period=3 * interval,
        heartbeat_stale_trial_callback=on_stale,
        outage_timeout_s=study.outage_timeout_s,
    )
    try:
        with sqlite_init_lock(url), warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return wait_while_locked(new_storage, url, study.outage_timeout_s, "study.outage_timeout_s")
    except Exception as error:  # noqa: BLE001 - any driver error: name the key and stop before training
        raise ConfigError("study.storage", url, f"cannot open the storage ({type(error).__name__}: {error})") from None


def create_or_load(
    study_cfg: StudyConfig,
    eval_steps: int,
    objective: str,
    storage: optuna.storages.RDBStorage,
    space: search_space.Space,
) -> tuple[optuna.Study, bool]:
    """The study `study.name` (of the `study` section; its pruner reports every `trial.eval_steps`) in `storage` and
    whether this process created it. Its objective is named ``objective`` (`objective_name`), also in a study created
    before studies named it."""
    kwargs = dict(
        study_name=study_cfg.name,
        storage=storage,
        sampler=make_sampler(study_cfg.sampler, space),
        pruner=make_pruner(study_cfg.pruner, eval_steps),
    )
    try:
        direction = cast(Literal["minimize", "maximize"], study_cfg.direction)  # checked: one of DIRECTIONS
        study, created = optuna.create_study(direction=direction, **kwargs), True
    except optuna.exceptions.DuplicatedStudyError:
        study, created = optuna.load_study(**kwargs), False
    if study.metric_names != [objective]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([objective])
    return study, created


def wait_until_ready(study: optuna.Study, timeout: float = 300.0) -> None:
    """Wait until the process that created the study has queued its grid and opened its parent run."""
    deadline = time.monotonic() + timeout
    while ATTR_READY not in study.user_attrs:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"study {study.study_name} was created by another process that never finished setting it up"
            )
        time.sleep(1.0)


def check_declared_space(study: optuna.Study, declared: dict[str, Any], storage: str) -> None:
    """A study keeps its search space: refuse a different one under the same name."""
    recorded = study.user_attrs.get(ATTR_SEARCH_SPACE)
    if recorded != declared:
        raise ConfigError(
            "study.search_space",
            declared,
            f"study {study.study_name!r} in {storage} was created with {recorded}; "
            "use a new name=... to sweep a different space",
        )


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail (and, through the storage's callback, re-queue) trials whose worker stopped sending heartbeats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
