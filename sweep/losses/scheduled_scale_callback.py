"""The trainer callback of a temperature schedule (`loss.scale_schedule`, `sweep.losses.scale_schedule`): it sets the
scheduled scale before each optimizer step and reports it with the training loss."""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from sweep.losses.scale_schedule import SCHEDULED_SCALE, SCHEDULED_TEMPERATURE, ScaleSchedule


class ScaleScheduleCallback(TrainerCallback):
    """Sets the scheduled scale on every module that holds the loss's scale (the loss itself, or inside a
    Matryoshka/AdaptiveLayer wrapper) before each optimizer step, from the trainer's ``global_step`` and
    ``max_steps``; ``logged_metrics()`` reads it back from the loss (logged with the training loss)."""

    def __init__(self, schedule: ScaleSchedule, targets: list[Any]) -> None:
        self.schedule = schedule
        self.targets = targets  # loss modules with a float `scale` attribute (nn.Module's typing knows none)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        scale = self.schedule.scale_at(state.global_step, state.max_steps)
        for target in self.targets:
            target.scale = scale

    def current_scale(self) -> float:
        return float(self.targets[0].scale)

    def logged_metrics(self) -> dict[str, float]:
        scale = self.current_scale()
        return {SCHEDULED_SCALE: scale, SCHEDULED_TEMPERATURE: 1.0 / scale}
