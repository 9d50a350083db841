"""The best scale as a continuous quantity: a parabola in log scale near the grid's peak, with an interval.

Beside the verdicts on grid points (`sweep.stats.verdicts`), this says where between the grid points the
optimum lies: ``optimum near scale 12 [9, 17]``. Input, for one condition: the swept ``scales``, the point estimates
``point`` (S,) (mean STSB Spearman over seeds) and ``draws`` (S, B), B joint resamples of that statistic (every scale
on the same drawn seeds and pairs, `sweep.stats.bootstrap`), so that the draws carry the correlation of the
scales' estimates.

**Method.** On x = ln(scale), over the scales > 0 only (scale 0 is the untrained control, not a point of the curve):

1. the best grid point k has the highest point estimate; with its neighbours (x1, y1), (x2, y2), (x3, y3), in
   offsets d1 = x1 - x2 < 0 < d3 = x3 - x2 and rises g1 = y1 - y2, g3 = y3 - y2 (exact fit, uneven spacing allowed),
   the parabola y2 + b t + a t^2 has a = (g1/d1 - g3/d3) / (d1 - d3), b = g1/d1 - a d1 and its vertex at
   t* = -b / (2a), of height y2 - b^2 / (4a). The estimate is exp(x2 + t*).
   Since the middle point is the highest, a <= 0 and the vertex lies between the midpoints (x1 + x2)/2 and
   (x2 + x3)/2: the fit only moves the best grid point by up to half a step (a tie, a = 0, keeps it there);
2. the interval repeats step 1 on every draw, the best re-selected inside each draw (as the confidence set for the
   best does): a draw whose best is the lowest or highest scale puts its vertex at that edge. The interval is the
   (1 - level)/2 and (1 + level)/2 percentiles of the draws' vertices, in scale units (exp of the log).

Why: the Spearman-vs-scale curve is smooth and roughly symmetric in log scale near its peak (the scale multiplies
the logits, so its effect is multiplicative), a parabola is the lowest-order curve with a maximum, and three points
fit it exactly without a model of the whole curve's shape. Re-selecting the best inside each draw, as the
confidence set does, lets a draw's vertex go wherever that draw peaks, beyond the point estimate's neighbours too.
On simulated studies (a truth quadratic in log scale, correlated Gaussian noise; tests/stats/test_optimum.py) the
interval covers the true peak at about its nominal level.

**Flags** (estimate and interval not located; ``text()`` says so in words):

- fewer than 3 scales > 0: no parabola;
- *flat* (checked first): every scale > 0 lies within ``margin`` of the peak's height (the vertex's, or the best
  point's at an edge). Then no swept scale is worse by a difference a user would act on, and the location of the
  maximum is noise: "near the peak" is read as "anywhere on the grid", because the neighbours of the peak alone
  are usually within the margin of it even when the curve has a clear optimum;
- *edge*: the best point estimate is the lowest or highest scale > 0; the optimum may lie beyond the grid, which
  a fit inside it cannot tell. The estimate is that edge scale, the interval NaN.

**Limits.** The fit is local (3 points): the estimate cannot leave half a grid step around the best grid point, and
on a coarse grid the parabola is a poor model of a curve that is asymmetric around its peak. The interval is a
percentile interval of resamples centred on the estimate: it is as good as the draws' covariance and no better than
the grid's resolution (its ends are grid points or within half a step of one). A curve asymmetric around its
peak (steeper on one side) biases the vertex towards the flatter side, and the interval then covers less than its
level: the parabola is exact only for a curve symmetric in log scale near the peak. A peak one step inside the edge
gets draws whose best sits at the edge, whose vertices are pinned there: the interval then ends at the edge scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweep.stats.verdicts import DEFAULT_MARGIN

MIN_SCALES = 3  # a parabola needs three points
LOW_EDGE, HIGH_EDGE, FLAT, TOO_FEW = "peak at the low edge", "peak at the high edge", "flat", "needs"


def _number(value: float) -> str:
    """Two significant figures, never scientific between 1e-4 and 1e6: ``12``, ``9.5``, ``120``, ``0.012``."""
    return f"{float(f'{value:.2g}'):g}"


@dataclass(frozen=True)
class Optimum:
    """The continuous optimum of one condition: ``estimate`` [``low``, ``high``] in scale units; ``flag`` is ""
    when located, else why not (the module docstring's flags); low and high are NaN when flagged."""

    estimate: float
    low: float
    high: float
    flag: str = ""

    def text(self) -> str:
        """``optimum near scale 12 [9, 17]``, or a short phrase saying why it was not located."""
        if not self.flag:
            return f"optimum near scale {_number(self.estimate)} [{_number(self.low)}, {_number(self.high)}]"
        if self.flag.startswith(LOW_EDGE):
            return f"optimum: at or below scale {_number(self.estimate)} (the grid's low edge)"
        if self.flag.startswith(HIGH_EDGE):
            return f"optimum: at or above scale {_number(self.estimate)} (the grid's high edge)"
        if self.flag.startswith(FLAT):
            return "optimum: flat near the peak, not located"
        return f"optimum: not located ({self.flag})"


def _vertices(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertex in x, its height) per column of ``y`` (S, B) over sorted ``x`` (S,): the parabola through the
    column's highest point and its two neighbours; at an edge, that edge point itself."""
    columns = np.arange(y.shape[1])
    best = np.argmax(y, axis=0)
    vertex, height = x[best], y[best, columns]
    inner = (best > 0) & (best < x.size - 1)
    k, c = best[inner], columns[inner]
    d1, d3 = x[k - 1] - x[k], x[k + 1] - x[k]
    g1, g3 = y[k - 1, c] - y[k, c], y[k + 1, c] - y[k, c]
    a = (g1 / d1 - g3 / d3) / (d1 - d3)  # <= 0: the middle point is the highest
    b = g1 / d1 - a * d1
    curved = a < 0
    safe = np.where(curved, a, -1.0)
    shift = np.where(curved, np.clip(-b / (2 * safe), d1, d3), 0.0)
    vertex[inner] = x[k] + shift
    height[inner] = y[k, c] + np.where(curved, -(b**2) / (4 * safe), 0.0)
    return vertex, height


def _checked(scales: object, point: object, draws: object, level: float, margin: float) -> tuple[np.ndarray, ...]:
    """The inputs as float arrays, or a ValueError naming what is wrong."""
    scale, estimate, drawn = (np.asarray(v, dtype=float) for v in (scales, point, draws))
    if scale.ndim != 1 or estimate.shape != scale.shape:
        raise ValueError(f"need scales and point of one shape (S,); got {scale.shape} and {estimate.shape}")
    if drawn.ndim != 2 or len(drawn) != scale.size or drawn.shape[1] < 1:
        raise ValueError(f"need draws of shape (scales={scale.size}, resamples >= 1); got {drawn.shape}")
    if not (np.isfinite(scale).all() and np.isfinite(estimate).all() and np.isfinite(drawn).all()):
        raise ValueError("need finite scales, point and draws; leave scales that were not scoreable out")
    if (scale < 0).any() or np.unique(scale).size != scale.size:
        raise ValueError(f"need distinct scales >= 0; got {scale.tolist()}")
    if not 0 < level < 1 or margin < 0:
        raise ValueError(f"need level in (0, 1) and margin >= 0; got level {level}, margin {margin}")
    return scale, estimate, drawn


def locate_optimum(
    scales: object, point: object, draws: object, level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> Optimum:
    """The module docstring's optimum of one condition: ``scales`` (S,), ``point`` (S,), ``draws`` (S, B)."""
    scale, estimate, drawn = _checked(scales, point, draws, level, margin)
    order = np.argsort(scale)
    order = order[scale[order] > 0]
    nan = float("nan")
    if order.size < MIN_SCALES:
        return Optimum(nan, nan, nan, f"{TOO_FEW} {MIN_SCALES} scales > 0, got {order.size}")
    x, y = np.log(scale[order]), estimate[order]
    vertex, height = _vertices(x, y[:, None])
    best = int(np.argmax(y))
    edge = best in (0, x.size - 1)
    located = float(scale[order][best]) if edge else float(np.exp(vertex[0]))
    if height[0] - y.min() < margin:
        flag = f"{FLAT}: every scale > 0 lies within the margin {margin:g} of the peak"
        return Optimum(located, nan, nan, flag)
    if edge:
        side, beyond = (LOW_EDGE, "below") if best == 0 else (HIGH_EDGE, "above")
        flag = f"{side} of the grid (scale {_number(located)}): the optimum may lie {beyond} it"
        return Optimum(located, nan, nan, flag)
    resampled, _ = _vertices(x, drawn[order])
    low, high = np.exp(np.quantile(resampled, [(1 - level) / 2, (1 + level) / 2]))
    return Optimum(located, float(low), float(high))
