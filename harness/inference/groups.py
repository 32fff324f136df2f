"""Means of paired differences within question groups, and the difference between two groups.

A group mean is the question-weighted mean of its questions with a BCa cluster-bootstrap CI (the same
bootstrap as every contrast). The difference between two groups resamples whole clusters once for both
groups, so a cluster holding questions of both groups moves them together; its CI is the percentile
interval of the replicates. A replicate in which one group drew no question is undefined: it is
dropped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from harness.inference.bootstrap import cluster_bootstrap

RESAMPLES = 10_000


@dataclass(frozen=True)
class GroupMean:
    group: str
    n_questions: int
    n_clusters: int
    estimate: float
    ci95: tuple[float, float]


@dataclass(frozen=True)
class GroupContrast:
    first: str
    second: str
    estimate: float
    ci95: tuple[float, float]  # percentile
    resamples: int
    undefined_replicates: int  # replicates without a question of one group, dropped


def group_mean(group: str, diffs: ArrayLike, clusters: ArrayLike, strata: ArrayLike, mask: ArrayLike, *,
               seed: int, resamples: int = RESAMPLES) -> GroupMean | None:
    """None when the group has no question."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return None
    boot = cluster_bootstrap(np.asarray(diffs)[mask], np.asarray(clusters)[mask], np.asarray(strata)[mask],
                             resamples=resamples, seed=seed)
    return GroupMean(group, boot.n_questions, boot.n_clusters, boot.estimate, boot.ci95_bca)


def group_contrast(first: str, second: str, diffs: ArrayLike, clusters: ArrayLike, strata: ArrayLike,
                   groups: ArrayLike, *, seed: int,
                   resamples: int = RESAMPLES) -> GroupContrast | None:
    """mean(first) - mean(second); None when either group is empty."""
    diffs, clusters, strata, groups = map(np.asarray, (diffs, clusters, strata, groups))
    in1, in2 = groups == first, groups == second
    if not in1.any() or not in2.any():
        return None
    labels, cluster_of = np.unique(clusters, return_inverse=True)
    k = len(labels)
    s1 = np.bincount(cluster_of, weights=np.where(in1, diffs, 0.0), minlength=k)
    n1 = np.bincount(cluster_of, weights=in1.astype(float), minlength=k)
    s2 = np.bincount(cluster_of, weights=np.where(in2, diffs, 0.0), minlength=k)
    n2 = np.bincount(cluster_of, weights=in2.astype(float), minlength=k)
    cluster_stratum = np.empty(k, dtype=object)
    cluster_stratum[cluster_of] = strata
    stratum_names = sorted(set(map(str, cluster_stratum)))
    members = [np.flatnonzero(cluster_stratum.astype(str) == s) for s in stratum_names]
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(len(members))]
    t1, c1, t2, c2 = (np.zeros(resamples) for _ in range(4))
    for gen, idx in zip(gens, members):
        pick = idx[(gen.random((resamples, len(idx))) * len(idx)).astype(np.intp)]
        t1 += s1[pick].sum(axis=1)
        c1 += n1[pick].sum(axis=1)
        t2 += s2[pick].sum(axis=1)
        c2 += n2[pick].sum(axis=1)
    ok = (c1 > 0) & (c2 > 0)
    reps = t1[ok] / c1[ok] - t2[ok] / c2[ok]
    estimate = float(s1.sum() / n1.sum() - s2.sum() / n2.sum())
    lo, hi = np.quantile(reps, [0.025, 0.975]) if len(reps) else (np.nan, np.nan)
    return GroupContrast(first, second, estimate, (float(lo), float(hi)), resamples, int((~ok).sum()))


def win_tie_loss(diffs: ArrayLike) -> tuple[float, float, float]:
    """Shares of questions where A beats B, ties it, loses to it."""
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    return float((d > 0).sum() / n), float((d == 0).sum() / n), float((d < 0).sum() / n)
