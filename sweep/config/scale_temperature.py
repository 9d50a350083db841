"""Which of `loss.scale` and `loss.temperature` a config means when both are given (scale = 1/temperature).

Rule: a key counts as *set* when its value differs from the loss's own default (`sweep/conf/loss/NAME.yaml`), so
that `loss=gist loss.scale=50` trains at scale 50 although GIST's YAML sets a default temperature. The set key
wins over the other's default; two values that agree (scale * temperature = 1, or scale 0 with temperature inf)
are accepted; two set keys that disagree are refused with one line naming both and the fix.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from omegaconf import OmegaConf

from sweep.config.checks import CONFIG_DIR, plain_dict, require_number
from sweep.config.schema import LossConfig
from sweep.errors import ConfigError

KEYS = ("scale", "temperature")
# The highest scale a config may set: CLIP caps its learnt scale at 100, and at a scale far above that the softmax is
# a hard maximum (at 65504, a cosine of 1 overflows fp16).
MAX_SCALE = 1000.0


@functools.cache
def _loss_defaults(name: str) -> dict[str, object]:
    path = Path(CONFIG_DIR) / "loss" / f"{name}.yaml"
    if not path.is_file():
        return {}
    return {key: value for key, value in plain_dict(OmegaConf.load(path), resolve=False).items() if key in KEYS}


def agree(scale: float, temperature: float) -> bool:
    """Whether scale = 1/temperature (scale 0 with temperature inf included)."""
    if scale == 0 or math.isinf(temperature):
        return scale == 0 and math.isinf(temperature)
    return math.isclose(float(scale) * float(temperature), 1.0, rel_tol=1e-9)


def winning_key(loss: LossConfig) -> str | None:
    """``"scale"`` or ``"temperature"``: the key that defines the scale (None when neither is given)."""
    scale, temperature = loss.get("scale"), loss.get("temperature")
    if temperature is None:
        return None if scale is None else "scale"
    if scale is None or not isinstance(scale, (int, float)) or not isinstance(temperature, (int, float)):
        return "temperature"
    if agree(scale, temperature):
        return "temperature" if scale != 0 else "scale"
    defaults = _loss_defaults(str(loss.get("name")))
    changed = [key for key in KEYS if not defaults or loss.get(key) != defaults.get(key)]
    if changed == ["scale"]:
        return "scale"
    if changed == ["temperature"]:
        return "temperature"
    raise ConfigError(
        "loss.scale",
        scale,
        f"disagrees with loss.temperature={temperature!r} (scale = 1/temperature): set only one of them "
        "(loss.temperature=null to use the scale)",
    )


def scale_values(loss: LossConfig) -> dict[str, float]:
    """``{"loss.scale": S, "loss.temperature": 1/S}``, consistent (empty for a loss without `loss.scale`).

    The key the user set wins over the loss's default for the other; two set keys that disagree are refused
    (see sweep.config.scale_temperature). Scale 0 has temperature inf (``loss``: the `loss` section).
    """
    if "scale" not in loss:
        return {}
    scale = loss.scale
    if winning_key(loss) == "temperature":
        temperature = require_number(
            "loss.temperature",
            loss.temperature,
            low=1 / MAX_SCALE,
            note="scale = 1/temperature; use loss.scale=0 for the zero-scale control",
        )
        scale = 1.0 / temperature
    note = "0 is the untrained control; scale = 1/temperature"
    scale = require_number("loss.scale", scale, low=0, high=MAX_SCALE, note=note)
    return {"loss.scale": scale, "loss.temperature": math.inf if scale == 0 else 1.0 / scale}


def given_scale(loss: LossConfig) -> float | None:
    """The scale a config sets itself (`scale_values`), or None when `loss.scale` and `loss.temperature` both keep
    the loss's own default (a loss without `loss.scale`: None)."""
    defaults = _loss_defaults(str(loss.get("name")))
    if defaults and all(loss.get(key) == defaults.get(key) for key in KEYS):
        return None
    return scale_values(loss).get("loss.scale")
