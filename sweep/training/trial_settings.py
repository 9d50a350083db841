"""What one trial reads: its own sections of the config, resolved for it (its search-space values applied, the derived
keys set), and the values the study hands it. A trial never reads the study's config: not its search space, not its
name."""

from __future__ import annotations

from dataclasses import dataclass

from sweep.config import DataConfig, EvalConfig, LossConfig, ModelConfig, StatsConfig, TrialConfig


@dataclass(frozen=True)
class TrialSettings:
    """One trial's sections (the `model`, `data`, `loss`, `trial`, `stats` and `eval` sections of its resolved config)
    and what the study decides for it: the title of its kept model's card (the study, the trial and its grid point)
    and the scales at which its statistics measure the loss (`sweep.stats.probe.loss_scales`)."""

    model: ModelConfig
    data: DataConfig
    loss: LossConfig
    trial: TrialConfig
    stats: StatsConfig
    eval: EvalConfig
    title: str
    loss_scales: list[float]
