"""Temperature schedules of `loss.scale_schedule`: constant (today's `loss.scale`), a cosine between two scales
(Kukleva et al. 2023) or a linear ramp; their formula, their checks, the derived `loss.scale`, their label in words
(the trainer callback that sets the scale before each step is `sweep.losses.scheduled_scale_callback`).

Both schedules move the *temperature* tau = 1/scale, the quantity Kukleva et al. schedule; the scale is its
reciprocal. With t the optimizer steps already taken (0 for the first step) and T = ``trial.max_steps``:

- cosine: tau_t = tau_min + (tau_max - tau_min) (1 + cos(2 pi t / P)) / 2, tau_min = 1/max_scale,
  tau_max = 1/min_scale, period P = ``period_steps`` (null: T, one cycle over the run); it starts at min_scale.
- linear: tau_t = tau_start + (tau_end - tau_start) t / (T - 1): the first step trains at start_scale, the last at
  end_scale (start 5, end 50: a cool-down from high to low temperature; start 50, end 5: a warm-up).

``spec`` writes a whole schedule as one string ("constant 20", "cosine 5-50", "cosine 5-50 period 40",
"linear 50-5"): Optuna grids are Cartesian, so arms such as two constant scales and three schedules are one grid
axis only as one value each (as `loss.weights` enumerates AnglE's triples).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from sweep.config import MAX_SCALE, LossConfig, given_scale, plain_dict, require_choice, require_int, require_number
from sweep.errors import ConfigError

KINDS = ("constant", "cosine", "linear")
KEY = "loss.scale_schedule"
SCHEDULED_SCALE = "scheduled_scale"  # metric: the scale the last optimizer step trained at (every logging step)
SCHEDULED_TEMPERATURE = "scheduled_temperature"
# The spec's grammar (hand-written: three fixed forms, no library parses them): a kind, then its scales.
_NUMBER = r"(\d+(?:\.\d*)?(?:e[+-]?\d+)?)"
_SPEC = re.compile(
    rf"^(?:constant(?: {_NUMBER})?|cosine {_NUMBER}-{_NUMBER}(?: period (\d+))?|linear {_NUMBER}-{_NUMBER})$"
)
NOT_ZERO = "scale 0 is the untrained control, not a schedule's end"
ONE_CYCLE = "or null for one cycle over the run"
SPEC_FORMS = '"constant [SCALE]", "cosine MIN-MAX [period STEPS]" or "linear START-END", e.g. "cosine 5-50"'


@dataclass(frozen=True)
class ScaleSchedule:
    """One schedule: its kind and the keys of that kind (the others None). ``scale``: a constant's own scale
    (a spec "constant 10"); None trains at ``loss.scale``."""

    kind: str = "constant"
    scale: float | None = None
    min_scale: float | None = None
    max_scale: float | None = None
    period_steps: int | None = None
    start_scale: float | None = None
    end_scale: float | None = None

    def scale_at(self, step: int, max_steps: int) -> float:
        """The scale of the optimizer step after ``step`` steps (the formulas above); a constant's own scale."""
        if self.kind == "cosine":
            assert self.min_scale is not None and self.max_scale is not None  # checked (`check_schedule`)
            period = self.period_steps or max_steps
            low, high = 1.0 / self.max_scale, 1.0 / self.min_scale
            return 1.0 / (low + (high - low) * (1.0 + math.cos(2.0 * math.pi * step / period)) / 2.0)
        if self.kind == "linear":
            assert self.start_scale is not None and self.end_scale is not None
            start, end = 1.0 / self.start_scale, 1.0 / self.end_scale
            return 1.0 / (start + (end - start) * step / (max_steps - 1)) if max_steps > 1 else self.start_scale
        assert self.scale is not None, "a constant at loss.scale has no schedule to follow"
        return self.scale

    def initial_scale(self) -> float | None:
        """The scale of the first step (what `loss.scale` becomes); None for a constant at `loss.scale`."""
        return None if self.kind == "constant" and self.scale is None else self.scale_at(0, 1)

    def words(self, scale: float | None = None) -> str:
        """The schedule as its spec ("cosine 5-50"), a constant at ``loss.scale`` = ``scale`` included."""
        if self.kind == "cosine":
            period = f" period {self.period_steps}" if self.period_steps is not None else ""
            return f"cosine {self.min_scale:g}-{self.max_scale:g}{period}"
        if self.kind == "linear":
            return f"linear {self.start_scale:g}-{self.end_scale:g}"
        own = self.scale if self.scale is not None else scale
        return "constant" if own is None else f"constant {own:g}"

    def keys(self) -> dict[str, Any]:
        """The section's keys that say what trains (``loss.scale_schedule.*`` but ``spec``)."""
        return {f"{KEY}.{f.name}": getattr(self, f.name) for f in fields(self) if f.name != "scale"}


def parse_spec(spec: str) -> ScaleSchedule:
    """The schedule of a spec string (`SPEC_FORMS`)."""
    match = _SPEC.match(spec.strip()) if isinstance(spec, str) else None
    if match is None:
        raise ConfigError(f"{KEY}.spec", spec, f"must read {SPEC_FORMS}")
    constant, low, high, period, start, end = match.groups()
    if spec.strip().startswith("cosine"):
        return ScaleSchedule("cosine", min_scale=float(low), max_scale=float(high), period_steps=_int(period))
    if spec.strip().startswith("linear"):
        return ScaleSchedule("linear", start_scale=float(start), end_scale=float(end))
    return ScaleSchedule("constant", scale=float(constant) if constant is not None else None)


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


def from_keys(section: Mapping[str, Any]) -> ScaleSchedule:
    """The schedule of the section's keys of its ``kind``; ``spec`` is not read. Every key that is set is checked,
    but the keys of other kinds are not used (so that a grid can sweep ``kind`` alone)."""
    kind = section["kind"]
    require_choice(f"{KEY}.kind", kind, KINDS)
    for name in ("min_scale", "max_scale", "start_scale", "end_scale"):
        if section[name] is not None:
            require_number(f"{KEY}.{name}", section[name], low=0, strict=True, note=NOT_ZERO)
    if section["period_steps"] is not None:
        require_int(f"{KEY}.period_steps", section["period_steps"], note=ONE_CYCLE)
    own = {"cosine": ("min_scale", "max_scale", "period_steps"), "linear": ("start_scale", "end_scale")}
    return ScaleSchedule(kind, **{name: section[name] for name in own.get(kind, ())})


def schedule_of(loss: LossConfig) -> ScaleSchedule:
    """The schedule a loss config asks for: its ``spec`` when set, which must agree with every key set beside it
    (a key at its default, null or kind constant, is not set), else its keys."""
    section = plain_dict(loss.scale_schedule)
    if section["spec"] is None:
        return check_schedule(from_keys(section))
    schedule = check_schedule(parse_spec(section["spec"]))
    for key, value in schedule.keys().items():
        given = section[key.rsplit(".", 1)[-1]]
        if given not in (None, "constant") and given != value:
            raise ConfigError(
                key, given, f"disagrees with {KEY}.spec={section['spec']!r}: give the schedule once, as spec or as keys"
            )
    return schedule


def check_schedule(schedule: ScaleSchedule) -> ScaleSchedule:
    """Scales of a schedule > 0 (scale 0 is the untrained control, never a schedule's end), min <= max, a period
    of at least one step; a constant's own scale >= 0."""
    if schedule.kind == "cosine":
        low = require_number(f"{KEY}.min_scale", schedule.min_scale, low=0, high=MAX_SCALE, strict=True, note=NOT_ZERO)
        note = f"at least {KEY}.min_scale"
        require_number(f"{KEY}.max_scale", schedule.max_scale, low=low, high=MAX_SCALE, note=note)
        if schedule.period_steps is not None:
            require_int(f"{KEY}.period_steps", schedule.period_steps, note=ONE_CYCLE)
    elif schedule.kind == "linear":
        for name in ("start_scale", "end_scale"):
            require_number(f"{KEY}.{name}", getattr(schedule, name), low=0, high=MAX_SCALE, strict=True, note=NOT_ZERO)
    elif schedule.scale is not None:
        require_number(f"{KEY}.spec", schedule.scale, low=0, high=MAX_SCALE, note="a constant's scale")
    return schedule


def schedule_values(loss: LossConfig) -> dict[str, Any]:
    """The keys a schedule derives ({dotted key: value}): a spec's keys, and `loss.scale` / `loss.temperature` at
    the schedule's first step. A scale or temperature the config sets itself (not the loss's default) that
    disagrees with that first scale is refused: the schedule owns the scale. Empty for a constant at `loss.scale`."""
    schedule = schedule_of(loss)
    derived = schedule.keys() if loss.scale_schedule.spec is not None else {}
    first = schedule.initial_scale()
    if first is None:
        return derived
    given = given_scale(loss)
    if given is not None and not math.isclose(given, first, rel_tol=1e-9):
        raise ConfigError(
            "loss.scale",
            given,
            f"is set by {KEY} ({schedule.words()} starts at {first:g}): leave loss.scale and loss.temperature at "
            f"their defaults, or use {KEY}.kind=constant",
        )
    return {**derived, "loss.scale": first, "loss.temperature": math.inf if first == 0 else 1.0 / first}
