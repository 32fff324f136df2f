"""Cluster BCa: the harness's cluster_bootstrap against scipy.stats.bootstrap (method BCa) on cluster totals.

    .venv/bin/python benchmarks/bench_bca_scipy.py [--questions 1000] [--clusters 288] [--resamples 10000]
    [--quick]

The same synthetic paired differences (seeded), grouped into clusters of unequal size. SciPy resamples the
clusters' (sum, size) pairs and takes the ratio of sums, which is the harness's estimator; both use 10,000
resamples. Printed: the median time per contrast for each over --repeats runs, and how far apart the 95%
BCa intervals are, in units of the interval's width (two Monte Carlo runs with different streams differ by
a few percent; the goal is agreement at that level, and the harness no slower than SciPy).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import add_quick, goal  # noqa: E402
from harness.inference.bootstrap import cluster_bootstrap, cluster_totals  # noqa: E402

GAP_GOAL = (
    0.05  # endpoint gap / SciPy's interval width: Monte Carlo agreement (two streams differ by a few %)
)


def synthetic(n_questions: int, n_clusters: int, seed: int):
    rng = np.random.default_rng(seed)
    clusters = np.sort(rng.integers(0, n_clusters, size=n_questions))
    clusters[:n_clusters] = np.arange(n_clusters)  # every cluster has at least one question
    effect = rng.normal(0.02, 0.05, size=n_clusters)[clusters]
    values = effect + rng.normal(0, 0.3, size=n_questions).clip(-1, 1)
    return values, clusters


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=288)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.questions, args.clusters, args.resamples, args.repeats = 100, 30, 500, 1
    values, clusters = synthetic(args.questions, args.clusters, args.seed)
    data = cluster_totals(values, clusters)

    def ratio(sums, sizes, axis=-1):
        return sums.sum(axis=axis) / sizes.sum(axis=axis)

    def scipy_run():
        return stats.bootstrap((data.sums, data.sizes), ratio, paired=True, vectorized=True, method="BCa",
                               n_resamples=args.resamples, confidence_level=0.95,
                               rng=np.random.default_rng(args.seed))

    ours_s, ours = timed(
        lambda: cluster_bootstrap(values, clusters, resamples=args.resamples, seed=args.seed), args.repeats
    )
    scipy_s, theirs = timed(scipy_run, args.repeats)
    lo, hi = ours.ci95_bca
    slo, shi = theirs.confidence_interval
    width = shi - slo
    print(f"cluster BCa, {args.questions} questions in {len(data.sums)} clusters, {args.resamples} resamples "
          f"(median of {args.repeats})")
    print(f"  {'':22} {'s/contrast':>10} {'95% BCa interval':>26}")
    print(f"  {'scipy.stats.bootstrap':22} {scipy_s:>10.4f} {f'[{slo:.5f}, {shi:.5f}]':>26}")
    print(
        f"  {'harness':22} {ours_s:>10.4f} {f'[{lo:.5f}, {hi:.5f}]':>26}   {scipy_s / ours_s:.2f}x SciPy's "
        "speed"
    )
    print(
        f"  endpoint gaps / SciPy's width: lower {abs(lo - slo) / width:.1%}, upper "
        f"{abs(hi - shi) / width:.1%} "
        f"(estimate {ours.estimate:.5f}; z0 {ours.z0:.4f}, acceleration {ours.acceleration:.5f})"
    )
    gap = max(abs(lo - slo), abs(hi - shi)) / width
    goal(f"95% BCa endpoints within {GAP_GOAL:.0%} of SciPy's interval width", gap <= GAP_GOAL, f"{gap:.1%}",
         quick=args.quick)
    goal(
        "harness no slower than SciPy",
        ours_s <= scipy_s,
        f"{scipy_s / ours_s:.2f}x SciPy's speed",
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
