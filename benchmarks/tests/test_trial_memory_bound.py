"""The GPU memory estimate that `study.n_workers=auto` sizes workers by (`sweep.inputs.estimated_trial_bytes`)
against what the H200 measured on 2026-11-27 (`benchmarks/results/gpu/2026-11-27-h200`: nvidia-smi's memory in use,
once a second): an upper bound of each process's peak, and not so loose that it would leave most of the GPU idle."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from sweep.config.checks import CONFIG_DIR
from sweep.inputs import estimated_trial_bytes

MEASURED = Path(__file__).resolve().parents[1] / "results" / "gpu" / "2026-11-27-h200"
MIB = 2**20
LOOSEST = 3.0  # the bound may exceed the measured peak at most this many times
# what each measured process trained: the kit's static study and its MiniLM-architecture trials one at a time
# (benchmarks/gpu_check.py: GPU), and the 8-worker probe (probes/workers_probe.sh), all on mnrl_scale's triplets
SECTIONS = {
    "static_fp32": ["+experiment=mnrl_scale"],
    "bf16_pack1": ["+experiment=mnrl_scale", "model=minilm", "model.reinit=true", "trial.precision=bf16"],
}


def estimate(overrides: list[str]) -> int:
    with initialize_config_dir(str(CONFIG_DIR), version_base=None):
        cfg = compose("config", overrides=overrides)
    return estimated_trial_bytes(cfg.model, cfg.trial, texts_per_example=len(cfg.data.train.columns))


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_the_estimate_bounds_the_peak_of_one_process_of_the_kit(section):
    samples = pd.read_csv(MEASURED / "kit" / "samples.csv")
    peak = samples.loc[samples["section"] == section, "gpu_mem_used_mib"].max() * MIB
    bound = estimate(SECTIONS[section])
    assert peak <= bound <= LOOSEST * peak, (section, peak / MIB, bound / MIB)


def test_the_estimate_bounds_each_of_eight_workers_sharing_the_gpu():
    samples = pd.read_csv(MEASURED / "probes" / "workers8_gpu_samples.csv", header=None, names=["util", "mib"])
    per_worker = samples["mib"].max() * MIB / 8
    bound = estimate(SECTIONS["bf16_pack1"])
    assert per_worker <= bound <= LOOSEST * per_worker, (per_worker / MIB, bound / MIB)
