"""TOST by inverting the BCa interval at -margin and +margin (docs/design.md, TOST).

p_lower is the smallest alpha at which the BCa lower bound exceeds -margin, p_upper the smallest alpha at
which the upper bound falls below +margin. The inversion uses the same linear-interpolated replicate
quantiles as the intervals, so for one test p_tost < 0.05 exactly when the 90% BCa interval lies inside
(-margin, +margin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from harness.inference.bootstrap import BootstrapResult


@dataclass(frozen=True)
class TostResult:
    margin: float
    p_lower: float  # H0: difference <= -margin
    p_upper: float  # H0: difference >= +margin
    p_tost: float


def tost(boot: BootstrapResult, *, margin: float) -> TostResult:
    margin = _tost_iv(margin)
    if boot.degenerate:
        p_lower = 0.0 if boot.estimate > -margin else 1.0
        p_upper = 0.0 if boot.estimate < margin else 1.0
    else:
        reps = boot.replicates
        p_lower = _p_lower(_last_quantile_at_or_below(reps, -margin), boot.z0, boot.acceleration)
        p_upper = _p_upper(_first_quantile_at_or_above(reps, margin), boot.z0, boot.acceleration)
    return TostResult(margin=margin, p_lower=p_lower, p_upper=p_upper, p_tost=max(p_lower, p_upper))


def _tost_iv(margin: float) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)):
        raise ValueError(f"`margin` must be a positive number; got {margin!r}")
    margin = float(margin)
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"`margin` must be a positive number; got {margin!r}")
    return margin


def _position(reps: np.ndarray, k: int, v: float) -> float:
    """Quantile level at which linear interpolation between reps[k-1] and reps[k] reaches v."""
    lo, hi = reps[k - 1], reps[k]
    level: float = ((k - 1) + (v - lo) / (hi - lo)) / (len(reps) - 1)
    return level


def _last_quantile_at_or_below(reps: np.ndarray, v: float) -> float:
    """max{q : Q(q) <= v}; -inf when every replicate exceeds v."""
    k = int(np.searchsorted(reps, v, side="right"))
    if k == 0:
        return -math.inf
    if k == len(reps):
        return 1.0
    return _position(reps, k, v)


def _first_quantile_at_or_above(reps: np.ndarray, v: float) -> float:
    """min{q : Q(q) >= v}; +inf when every replicate is below v."""
    k = int(np.searchsorted(reps, v, side="left"))
    if k == len(reps):
        return math.inf
    if k == 0:
        return 0.0
    return _position(reps, k, v)


def _nominal_z(q: float, z0: float, accel: float) -> tuple[float | None, float]:
    """(z_alpha whose BCa-adjusted quantile level is q, or None when no level maps to q; w = ndtri(q) -
    z0)."""
    w = float(ndtri(q)) - z0
    denom = 1 + accel * w
    if denom <= 0:
        return None, w
    return w / denom - z0, w


def _p_lower(q: float, z0: float, accel: float) -> float:
    # the lower bound at nominal alpha is Q(bca(alpha)); it exceeds v exactly when bca(alpha) > q
    if q <= 0:
        return 0.0
    if q >= 1:
        return 1.0
    z, w = _nominal_z(q, z0, accel)
    if z is None:  # q is beyond the range the BCa map reaches: below it (w < 0) always rejects
        return 0.0 if w < 0 else 1.0
    return float(ndtr(z))


def _p_upper(q: float, z0: float, accel: float) -> float:
    # the upper bound at nominal 1 - alpha falls below v exactly when bca(1 - alpha) < q
    if q >= 1:
        return 0.0
    if q <= 0:
        return 1.0
    z, w = _nominal_z(q, z0, accel)
    if z is None:
        return 1.0 if w < 0 else 0.0
    return float(ndtr(-z))
