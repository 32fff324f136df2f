"""Cluster sign-flip permutation test of a zero mean difference (docs/design.md, Cluster sign-flip test).

Statistic |sum of cluster sums| / N. Exact enumeration of all 2^C sign vectors when that is at most
`max_flips` (p = share of vectors at least as extreme, the observed one included), else `max_flips`
Monte Carlo flips with p = (1 + hits) / (1 + max_flips).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from harness.inference.bootstrap import ClusterData, cluster_totals

_BATCH_CELLS = 4_000_000
_REL_TOL = 1e-12  # statistics equal up to rounding count as "at least as extreme"


@dataclass(frozen=True)
class SignFlipResult:
    statistic: float
    p_value: float
    exact: bool
    n_flips: int  # sign vectors evaluated: 2^C when exact
    seed: int
    n_clusters: int


def cluster_sign_flip(
    values: ArrayLike,
    clusters: ArrayLike | None = None,
    *,
    max_flips: int = 10_000,
    seed: int,
    batch: int | None = None,
) -> SignFlipResult:
    data, max_flips, batch = _sign_flip_iv(values, clusters, max_flips, seed, batch)
    sums = data.sums
    n_questions = data.sizes.sum()
    observed = abs(sums.sum()) / n_questions
    threshold = observed - _REL_TOL * max(observed, 1e-300)
    c = len(sums)
    exact = 2**c <= max_flips
    if exact:
        hits = _exact_hits(sums, n_questions, threshold, batch)
        n_flips = 2**c
        p = hits / n_flips
    else:
        hits = _monte_carlo_hits(sums, n_questions, threshold, max_flips, seed, batch)
        n_flips = max_flips
        p = (1 + hits) / (1 + n_flips)
    return SignFlipResult(statistic=float(observed), p_value=float(p), exact=exact, n_flips=n_flips,
                          seed=seed, n_clusters=c)


def _sign_flip_iv(
    values: ArrayLike, clusters: ArrayLike | None, max_flips: int, seed: int, batch: int | None
) -> tuple[ClusterData, int, int]:
    if isinstance(max_flips, bool) or not isinstance(max_flips, (int, np.integer)) or max_flips < 1:
        raise ValueError(f"`max_flips` must be a positive integer; got {max_flips!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer; got {seed!r}")
    data = cluster_totals(values, clusters)
    if batch is None:
        batch = max(1, _BATCH_CELLS // len(data.sums))
    elif isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"`batch` must be a positive integer; got {batch!r}")
    return data, int(max_flips), int(batch)


def _exact_hits(sums: np.ndarray, n_questions: float, threshold: float, batch: int) -> int:
    c = len(sums)
    bits = np.arange(c)
    hits = 0
    for start in range(0, 2**c, batch):
        codes = np.arange(start, min(start + batch, 2**c))
        signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
        hits += int(np.count_nonzero(np.abs(signs @ sums) / n_questions >= threshold))
    return hits


def _monte_carlo_hits(
    sums: np.ndarray, n_questions: float, threshold: float, n_flips: int, seed: int, batch: int
) -> int:
    # doubles are drawn row by row from one generator, so the batch size never changes the stream
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    total = sums.sum()
    hits = 0
    for start in range(0, n_flips, batch):
        b = min(batch, n_flips - start)
        flipped = gen.random((b, len(sums))) < 0.5
        signed = total - 2.0 * (flipped @ sums)  # flipping a cluster subtracts twice its sum
        hits += int(np.count_nonzero(np.abs(signed) / n_questions >= threshold))
    return hits
