"""Planning numbers: the minimum detectable difference of a contrast, and the clusters a TOST needs.

The cluster standard error linearises the question-weighted mean sum(S_c) / N: each cluster contributes
u_c = (S_c - n_c * estimate) / N, and within each stratum the variance of the u_c is scaled by C/(C-1)
(clusters are resampled per stratum, as the bootstrap does). The minimum detectable difference at power
1 - beta for a two-sided test at alpha is (z_{1-alpha/2} + z_{1-beta}) * SE: the true difference a
contrast of this size and spread would call diff. with 80% probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from harness.inference.bootstrap import cluster_totals
from harness.inference.simulate import redraw_clusters

POWER = 0.80  # the power the planning numbers are quoted at


def cluster_standard_error(
    values: ArrayLike, clusters: ArrayLike | None = None, strata: ArrayLike | None = None
) -> float:
    """SE of the question-weighted mean, clusters as units, strata summed; 0 with one cluster per stratum."""
    data = cluster_totals(values, clusters, strata)
    estimate = data.estimate
    u = (data.sums - data.sizes * estimate) / data.n_questions
    variance = 0.0
    for members in data.strata:
        c = len(members)
        if c > 1:
            dev = u[members] - u[members].mean()
            variance += c / (c - 1) * float(np.sum(dev**2))
    return math.sqrt(variance)


def minimum_detectable_difference(se: float, *, alpha: float, power: float = POWER) -> float:
    """(z_{1-alpha/2} + z_power) x SE, in the units of `se`."""
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must be in (0, 1); got {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"`power` must be in (0, 1); got {power!r}")
    if se < 0 or not math.isfinite(se):
        raise ValueError(f"`se` must be a finite number >= 0; got {se!r}")
    return float((ndtri(1 - alpha / 2) + ndtri(power)) * se)


def clusters_to_show(se: float, n_clusters: int, distance: float, *, alpha: float, power: float = POWER,
                     sides: int = 2) -> int | None:
    """The clusters at which a true gap of `distance` points (the estimate's distance from 0 for a difference,
    from the margin for equivalence) would be shown with probability `power`, the cluster SE shrinking as
    1 / sqrt(clusters) from `se` at `n_clusters`: the smallest n with (z_{1-alpha/sides} + z_power) x SE(n) <=
    distance. None when no number would (a gap of 0 or less)."""
    if se < 0 or not math.isfinite(se):
        raise ValueError(f"`se` must be a finite number >= 0; got {se!r}")
    if n_clusters < 1 or sides not in (1, 2):
        raise ValueError(f"`n_clusters` must be >= 1 and `sides` 1 or 2; got {n_clusters!r}, {sides!r}")
    if not distance > 0:
        return None
    z = float(ndtri(1 - alpha / sides) + ndtri(power))
    return max(1, math.ceil(n_clusters * (z * se / distance) ** 2 - 1e-9))


@dataclass(frozen=True)
class PowerPoint:
    n_clusters: int
    power: float  # share of simulated studies whose TOST showed equivalence
    simulations: int


@dataclass(frozen=True)
class PowerResult:
    """Clusters a TOST needs (None when no size tried reached the target) and the curve behind it."""

    margin: float
    alpha: float
    target: float
    true_difference: float
    pilot_clusters: int
    pilot_questions: int
    pilot_sd_of_cluster_means: float
    n_clusters: int | None
    curve: tuple[PowerPoint, ...]
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "curve"} | {
            "curve": [p.__dict__ for p in self.curve]}


def tost_clusters_for_power(
    values: ArrayLike, clusters: ArrayLike | None = None, *, margin: float, alpha: float = 0.05,
    target: float = POWER, true_difference: float = 0.0, sizes: list[int] | None = None,
    simulations: int = 1000, seed: int,
) -> PowerResult:
    """Cluster bootstrap of a pilot: for each candidate size n, draw `simulations` studies of n pilot
    clusters (with replacement), shift every difference so the true mean is `true_difference`, and count
    how often the TOST at `alpha` shows equivalence (the 1 - 2 alpha CI inside (-margin, +margin)). Each
    simulated study's CI is the normal interval from its cluster SE: a nested bootstrap per study would
    cost `simulations` x 10,000 resamples per size and change the answer little at these sizes.
    The smallest n reaching `target` is returned."""
    if margin <= 0:
        raise ValueError(f"`margin` must be > 0; got {margin!r}")
    data = cluster_totals(values, clusters)
    n_pilot = len(data.sums)
    if n_pilot < 2:
        raise ValueError(f"the pilot needs at least 2 clusters; got {n_pilot}")
    # centre the pilot on the assumed true difference, keeping its spread and cluster sizes
    sums = data.sums - data.sizes * (data.estimate - true_difference)
    sizes_q = data.sizes
    candidates = sorted(set(sizes or _default_sizes(n_pilot)))
    if not candidates or candidates[0] < 2:
        raise ValueError(f"candidate cluster counts must be >= 2; got {candidates}")
    z = float(ndtri(1 - alpha))
    rng = np.random.Generator(np.random.PCG64(seed))
    curve = []
    found = None
    for n in candidates:
        pick = redraw_clusters(rng, n_pilot, n, simulations)
        s, m = sums[pick], sizes_q[pick]
        total = m.sum(axis=1)
        est = s.sum(axis=1) / total
        u = (s - m * est[:, None]) / total[:, None]
        se = np.sqrt(n / (n - 1) * np.sum((u - u.mean(axis=1, keepdims=True)) ** 2, axis=1))
        inside = (est - z * se > -margin) & (est + z * se < margin)
        point = PowerPoint(n, float(inside.mean()), simulations)
        curve.append(point)
        if found is None and point.power >= target:
            found = n
    cluster_means = data.sums / data.sizes
    return PowerResult(margin=float(margin), alpha=float(alpha), target=float(target),
                       true_difference=float(true_difference), pilot_clusters=n_pilot,
                       pilot_questions=data.n_questions,
                       pilot_sd_of_cluster_means=float(np.std(cluster_means, ddof=1)),
                       n_clusters=found, curve=tuple(curve), seed=seed)


def _default_sizes(n_pilot: int) -> list[int]:
    """From 10 clusters (or the pilot's size if smaller) up to 40 times the pilot, about 12 steps per
    decade."""
    start = max(2, min(10, n_pilot))
    out, n = [], float(start)
    while n <= 40 * max(n_pilot, 10):
        out.append(int(round(n)))
        n *= 10 ** (1 / 12)
    return out
