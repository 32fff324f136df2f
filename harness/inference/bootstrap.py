"""BCa cluster bootstrap of a question-weighted mean (docs/design.md, BCa cluster bootstrap).

The estimate is sum(cluster sums) / number of questions. A replicate resamples clusters with replacement,
each stratum separately at its own size, and takes the same ratio over the resampled clusters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri

LEVELS = (0.90, 0.95)
_ByLevel = dict[float, tuple[float, float]]  # an interval per level of LEVELS
# Work arrays of about this many cells per batch (256 KiB of doubles, so a batch's draws, indices and
# gathered totals stay in the core's cache); the batch size never changes the result.
_BATCH_CELLS = 32_768


@dataclass(frozen=True)
class ClusterData:
    """Per-cluster totals; clusters are in sorted label order, strata hold cluster indices."""

    labels: np.ndarray
    sums: np.ndarray
    sizes: np.ndarray
    strata: tuple[np.ndarray, ...]

    @property
    def n_questions(self) -> int:
        return int(self.sizes.sum())

    @property
    def estimate(self) -> float:
        return float(self.sums.sum() / self.sizes.sum())


@dataclass(frozen=True)
class BootstrapResult:
    estimate: float
    ci90_bca: tuple[float, float]
    ci95_bca: tuple[float, float]
    ci90_percentile: tuple[float, float]
    ci95_percentile: tuple[float, float]
    z0: float
    acceleration: float
    resamples: int
    seed: int
    n_questions: int
    n_clusters: int
    n_strata: int
    degenerate: bool  # zero-range replicates: every interval is (estimate, estimate)
    replicates: np.ndarray = field(repr=False, compare=False)  # sorted, for TOST inversion


def cluster_bootstrap(
    values: ArrayLike,
    clusters: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    *,
    resamples: int = 10_000,
    seed: int,
    batch: int | None = None,
) -> BootstrapResult:
    """BCa bootstrap of the question-weighted mean of `values`, resampling whole clusters.

    `clusters` (default: one cluster per value) and `strata` (default: one stratum) are per-value labels.
    Randomness comes only from `seed`; `batch` (resamples per work array) only trades memory for speed.
    """
    data, resamples, batch = _bootstrap_iv(values, clusters, strata, resamples, seed, batch)
    estimate = data.estimate
    reps = np.sort(_replicates(data, resamples, seed, batch))
    tol = 1e-12 * max(1.0, abs(estimate))
    degenerate = bool(reps[-1] - reps[0] <= tol)
    if degenerate:
        z0, accel = 0.0, 0.0
        point = (estimate, estimate)
        bca = {level: point for level in LEVELS}
        pct = bca
    else:
        z0 = _bias_correction(reps, estimate)
        accel = _jackknife_acceleration(data.sums, data.sizes)
        bca, pct = _intervals(reps, z0, accel)
    return BootstrapResult(
        estimate=estimate,
        ci90_bca=bca[0.90],
        ci95_bca=bca[0.95],
        ci90_percentile=pct[0.90],
        ci95_percentile=pct[0.95],
        z0=z0,
        acceleration=accel,
        resamples=resamples,
        seed=seed,
        n_questions=data.n_questions,
        n_clusters=len(data.sums),
        n_strata=len(data.strata),
        degenerate=degenerate,
        replicates=reps,
    )


def cluster_totals(
    values: ArrayLike, clusters: ArrayLike | None = None, strata: ArrayLike | None = None
) -> ClusterData:
    """Sum values per cluster (clusters sorted by label); a cluster must sit in exactly one stratum."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"`values` must be a non-empty 1-D array; got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"`values` must be finite; position {int(np.argmin(np.isfinite(values)))} is not")
    n = len(values)
    cluster_labels = np.arange(n) if clusters is None else _labels("clusters", clusters, n)
    stratum_labels = np.zeros(n, dtype=int) if strata is None else _labels("strata", strata, n)
    labels, first, cluster_of = np.unique(cluster_labels, return_index=True, return_inverse=True)
    sums = np.bincount(cluster_of, weights=values, minlength=len(labels))
    sizes = np.bincount(cluster_of, minlength=len(labels)).astype(float)
    stratum_names, stratum_of = np.unique(stratum_labels, return_inverse=True)
    cluster_stratum = stratum_of[first]
    mixed = cluster_stratum[cluster_of] != stratum_of
    if mixed.any():
        bad = labels[cluster_of[int(np.argmax(mixed))]]
        # labels from a pandas column are an object array of str, which have no .item()
        raise ValueError(
            f"cluster {bad.item() if isinstance(bad, np.generic) else bad!r} has questions in more "
            "than one stratum"
        )
    groups = tuple(np.flatnonzero(cluster_stratum == s) for s in range(len(stratum_names)))
    return ClusterData(labels=labels, sums=sums, sizes=sizes, strata=groups)


def bca_quantile_levels(z0: float, acceleration: float, alphas: ArrayLike) -> np.ndarray:
    """Replicate quantiles that the BCa formula uses for nominal levels `alphas`."""
    z = ndtri(np.asarray(alphas, dtype=float))
    shifted = z0 + z
    levels: np.ndarray = ndtr(z0 + shifted / (1 - acceleration * shifted))
    return levels


def _labels(name: str, labels: ArrayLike, n: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"`{name}` must have one label per value ({n}); got shape {arr.shape}")
    return arr


def _bootstrap_iv(
    values: ArrayLike, clusters: ArrayLike | None, strata: ArrayLike | None, resamples: int, seed: int,
    batch: int | None,
) -> tuple[ClusterData, int, int]:
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 2:
        raise ValueError(f"`resamples` must be an integer >= 2; got {resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer; got {seed!r}")
    data = cluster_totals(values, clusters, strata)
    if batch is None:
        batch = max(1, _BATCH_CELLS // len(data.sums))
    elif isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"`batch` must be a positive integer; got {batch!r}")
    return data, int(resamples), int(batch)


def _replicates(data: ClusterData, resamples: int, seed: int, batch: int) -> np.ndarray:
    # One generator per stratum, each drawing doubles row by row: the stream a stratum sees is the
    # same whatever the batch size, so replicates are bit-identical across batch sizes.
    gens = [
        np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(len(data.strata))
    ]
    # a stratum whose clusters all hold as many questions adds k times that many to every replicate's count:
    # the sum of the k drawn sizes, exactly (whole numbers far below 2**53), without drawing them
    strata = [(gen, data.sums[m], data.sizes[m], bool(np.all(data.sizes[m] == data.sizes[m][0])))
              for gen, m in zip(gens, data.strata)]
    out = np.empty(resamples)
    for start in range(0, resamples, batch):
        b = min(batch, resamples - start)
        total = np.zeros(b)
        count = np.zeros(b)
        for gen, sums, sizes, one_size in strata:
            k = len(sums)
            draw = gen.random((b, k))
            draw *= k
            pick = draw.astype(np.intp)
            total += sums[pick].sum(axis=1)
            count += k * sizes[0] if one_size else sizes[pick].sum(axis=1)
        out[start : start + b] = total / count
    return out


def _bias_correction(reps: np.ndarray, estimate: float) -> float:
    below = np.searchsorted(reps, estimate, side="left")
    at_or_below = np.searchsorted(reps, estimate, side="right")
    share = (below + at_or_below) / (2 * len(reps))  # ties count half
    half = 0.5 / len(reps)  # keeps z0 finite when the estimate lies outside the replicates
    return float(ndtri(min(max(share, half), 1 - half)))


def _jackknife_acceleration(sums: np.ndarray, sizes: np.ndarray) -> float:
    if len(sums) < 3:
        return 0.0
    loo = (sums.sum() - sums) / (sizes.sum() - sizes)
    dev = loo.mean() - loo
    denom = 6.0 * np.sum(dev**2) ** 1.5
    return float(np.sum(dev**3) / denom) if denom > 0 else 0.0


def _intervals(reps: np.ndarray, z0: float, accel: float) -> tuple[_ByLevel, _ByLevel]:
    """The BCa and percentile intervals at every level of LEVELS, from one quantile call: np.quantile
    takes each level on its own, so one call with all of them gives the bits of one call per interval."""
    tails = [(1 - level) / 2 for level in LEVELS]
    nominal = [q for tail in tails for q in (tail, 1 - tail)]
    bca_levels = [q for tail in tails for q in bca_quantile_levels(z0, accel, [tail, 1 - tail])]
    ends = [float(x) for x in np.quantile(reps, bca_levels + nominal)]
    pairs = [(ends[i], ends[i + 1]) for i in range(0, len(ends), 2)]
    return dict(zip(LEVELS, pairs[: len(LEVELS)])), dict(zip(LEVELS, pairs[len(LEVELS) :]))
