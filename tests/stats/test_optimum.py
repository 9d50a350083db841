"""The continuous optimum (a parabola in log scale near the peak) on simulated studies with a known true peak.

The draws are a parametric bootstrap, as in test_scale_verdicts: the point estimates are the true curve plus one
draw of correlated Gaussian noise, the resamples the point plus fresh noise of the same law.
"""

from __future__ import annotations

import numpy as np
import pytest

from sweep.stats.optimum import Optimum, locate_optimum

LEVEL = 0.95
N_STUDIES = 400
RESAMPLES = 500
# at N_STUDIES, a rate whose truth is 0.95 leaves this band with probability < 0.3%
BAND = 3 * np.sqrt(0.95 * 0.05 / N_STUDIES)
GRID = np.array([5.0, 10, 15, 20, 30, 50])
NAN = float("nan")


def _truth(scales: np.ndarray, peak: float, curvature: float = 0.04, top: float = 0.82) -> np.ndarray:
    """A Spearman curve quadratic in log scale with its maximum ``top`` at ``peak``."""
    return top - curvature * (np.log(scales) - np.log(peak)) ** 2


def _noise(size: int, sd: float = 0.005, correlation: float = 0.6) -> np.ndarray:
    """The Cholesky factor of a sampling covariance: SD ``sd`` per scale, ``correlation`` between any two."""
    covariance = sd**2 * (correlation + (1 - correlation) * np.eye(size))
    return np.linalg.cholesky(covariance)


@pytest.mark.parametrize("peak", [12.0, 25.0])  # between grid points: 10 < 12 < 15, 20 < 25 < 30
def test_the_interval_covers_the_true_peak_at_its_level(peak: float) -> None:
    rng = np.random.default_rng(int(peak))
    truth, factor = _truth(GRID, peak), _noise(GRID.size)
    covered, widths = 0, []
    for _ in range(N_STUDIES):
        point = truth + factor @ rng.standard_normal(GRID.size)
        optimum = locate_optimum(GRID, point, point[:, None] + factor @ rng.standard_normal((GRID.size, RESAMPLES)))
        covered += not optimum.flag and optimum.low <= peak <= optimum.high  # a flagged study counts as a miss
        widths.append(optimum.high / optimum.low)
    assert abs(covered / N_STUDIES - LEVEL) <= BAND
    assert np.median(widths) < 2  # informative: far narrower than the grid's span (5 to 50: a ratio of 10)


def test_without_noise_the_parabola_finds_the_true_peak_on_an_uneven_grid_in_any_order() -> None:
    scales = np.array([30.0, 2, 7, 13, 0, 90])
    point = np.where(scales > 0, _truth(np.fmax(scales, 1), 9.0), 0.9)  # scale 0, the untrained control, highest
    optimum = locate_optimum(scales, point, np.repeat(point[:, None], 10, axis=1))
    assert (optimum.estimate, optimum.low, optimum.high, optimum.flag) == pytest.approx((9.0, 9.0, 9.0, ""))


def test_draws_whose_best_is_an_edge_pin_their_vertex_at_that_edge() -> None:
    point = _truth(GRID, 12.0)
    leaning = _truth(GRID, 3.0)  # a resample whose highest point is the lowest scale
    optimum = locate_optimum(GRID, point, np.column_stack([point] * 50 + [leaning] * 50))
    assert optimum.low == pytest.approx(5.0)
    assert optimum.high == pytest.approx(12.0)


@pytest.mark.parametrize(
    ("peak", "edge", "flag", "words"),
    [
        (2.0, 5.0, "peak at the low edge of the grid (scale 5)", "optimum: at or below scale 5 (the grid's low edge)"),
        (120.0, 50.0, "peak at the high edge of the grid (scale 50)", "optimum: at or above scale 50"),
    ],
)
def test_a_peak_at_the_grids_edge_is_flagged_not_located(peak: float, edge: float, flag: str, words: str) -> None:
    point = _truth(GRID, peak)
    optimum = locate_optimum(GRID, point, point[:, None] + np.zeros((1, 20)))
    assert optimum.estimate == edge
    assert optimum.flag.startswith(flag)
    assert np.isnan(optimum.low) and np.isnan(optimum.high)
    assert optimum.text().startswith(words)


def test_a_curve_within_the_margin_everywhere_is_flat_not_located() -> None:
    point = _truth(GRID, 12.0, curvature=0.002)  # 0.004 from top to bottom over the grid
    optimum = locate_optimum(GRID, point, point[:, None] + np.zeros((1, 20)), margin=0.01)
    assert optimum.flag.startswith("flat")
    assert optimum.text() == "optimum: flat near the peak, not located"
    located = locate_optimum(GRID, point, point[:, None] + np.zeros((1, 20)), margin=0.001)
    assert located.flag == ""  # the same curve, with a margin below its variation
    rising = _truth(GRID, 80.0, curvature=0.001)  # highest at the edge, 0.008 above the lowest: flat, not an edge
    at_edge = locate_optimum(GRID, rising, rising[:, None] + np.zeros((1, 20)), margin=0.01)
    assert at_edge.flag.startswith("flat") and at_edge.estimate == 50.0


def test_scale_zero_is_left_out_and_three_trained_scales_are_needed() -> None:
    optimum = locate_optimum([0, 5, 10], [0.9, 0.7, 0.8], np.zeros((3, 4)))
    assert optimum.flag == "needs 3 scales > 0, got 2"
    assert optimum.text() == "optimum: not located (needs 3 scales > 0, got 2)"


def test_text_rounds_to_two_significant_figures_without_scientific_notation() -> None:
    assert Optimum(12.3, 9.46, 17.2).text() == "optimum near scale 12 [9.5, 17]"
    assert Optimum(123.4, 81.0, 987.0).text() == "optimum near scale 120 [81, 990]"
    assert Optimum(0.5, 0.0123, 1.0).text() == "optimum near scale 0.5 [0.012, 1]"


@pytest.mark.parametrize(
    ("scales", "point", "draws", "match"),
    [
        ([5, 10, 15], [0.7, 0.8], np.zeros((3, 4)), "scales and point of one shape"),
        ([5, 10, 15], [0.7, 0.8, 0.7], np.zeros(3), "draws of shape"),
        ([5, 10, 15], [0.7, 0.8, 0.7], np.zeros((2, 4)), "draws of shape"),
        ([5, 10, 15], [0.7, 0.8, 0.7], np.zeros((3, 0)), "draws of shape"),
        ([5, 10, 15], [0.7, NAN, 0.7], np.zeros((3, 4)), "finite"),
        ([5, 10, 10], [0.7, 0.8, 0.7], np.zeros((3, 4)), "distinct scales"),
        ([-5, 10, 15], [0.7, 0.8, 0.7], np.zeros((3, 4)), "distinct scales >= 0"),
    ],
)
def test_inputs_of_the_wrong_shape_or_values_are_refused(
    scales: list[float], point: list[float], draws: np.ndarray, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        locate_optimum(scales, point, draws)


def test_level_and_margin_are_checked() -> None:
    with pytest.raises(ValueError, match="level in"):
        locate_optimum(GRID, _truth(GRID, 12.0), np.zeros((6, 4)), level=1.0)
    with pytest.raises(ValueError, match="margin >= 0"):
        locate_optimum(GRID, _truth(GRID, 12.0), np.zeros((6, 4)), margin=-0.1)
