"""Calibration of the statistics by simulation (issue 4), on clustered data with a known difference.

1. Coverage: share of simulated studies whose 95% BCa interval contains the true difference
   (target 93.5%-96.5%), for skewed clustered data, plain and stratified.
2. TOST size: with the true difference exactly on the margin, share of studies declaring equivalence
   (p_tost < 0.05; target at most 5%).
3. Holm family-wise error: a family of 4 two-sided tests under the global null, diff. needing the 95% CI
   to exclude 0 and the Holm-adjusted sign-flip p < 0.05 (target at most 5%); also the sign-flip alone.

Every figure is printed with its Monte Carlo standard error. Rates whose true value is exactly 5% by
construction (TOST on the margin, Holm on independent nulls) are judged strictly (<= 0.05) and within Monte
Carlo error (<= 0.05 + 1.645 s.e.); coverage also prints a normal-theory cluster-robust interval on the same
simulated studies, which separates a method's bias from the luck of the simulated draw.

Run:  .venv/bin/python benchmarks/bench_stats_calibration.py [--studies 2000] [--resamples 10000] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import add_quick, goal  # noqa: E402
from harness.inference.bootstrap import cluster_bootstrap  # noqa: E402
from harness.inference.holm import holm  # noqa: E402
from harness.inference.signflip import cluster_sign_flip  # noqa: E402
from harness.inference.simulate import clustered_sample  # noqa: E402
from harness.inference.tost import tost  # noqa: E402
from harness.stats.verdicts import two_sided_verdict  # noqa: E402

# Flagship-sized studies: Qasper-like 300 papers of ~3.3 questions; FreshStack-like 235 singleton questions
# in 3 domain strata. The Holm check uses smaller families (80 clusters) to keep the run short.
QASPER = dict(n_clusters=300, mean_cluster_size=1000 / 300, cluster_sd=4.0, noise_sd=8.0)
FRESHSTACK = dict(n_clusters=235, mean_cluster_size=1.0, cluster_sd=0.0, noise_sd=10.0)
SMALL = dict(n_clusters=80, mean_cluster_size=3.0, cluster_sd=4.0, noise_sd=8.0)


def _mc_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def coverage(rng, studies, resamples, stratified):
    """(BCa coverage, normal-theory cluster-robust coverage) of the true difference 1.5."""
    hits = normal_hits = 0
    for i in range(studies):
        x, c = clustered_sample(rng, shift=1.5, skew=True, **(FRESHSTACK if stratified else QASPER))
        strata = (c % 3) if stratified else None
        lo, hi = cluster_bootstrap(x, c, strata, resamples=resamples, seed=i).ci95_bca
        hits += lo <= 1.5 <= hi
        sums, sizes = np.bincount(c, weights=x), np.bincount(c).astype(float)
        est = sums.sum() / sizes.sum()
        k = len(sums)
        se = math.sqrt(k / (k - 1) * np.sum((sums - est * sizes) ** 2)) / sizes.sum()
        normal_hits += abs(est - 1.5) <= 1.96 * se
    return hits / studies, normal_hits / studies


def _judge(what: str, rate: float, n: int, quick: bool) -> None:
    goal(f"{what} <= 0.05", rate <= 0.05, f"{rate:.3f}", quick=quick)
    bound = 0.05 + 1.645 * _mc_se(0.05, n)
    goal(
        f"{what} <= 0.05 within Monte Carlo error (<= {bound:.3f})", rate <= bound, f"{rate:.3f}", quick=quick
    )


def tost_size(rng, studies, resamples, margin):
    rejections = 0
    for i in range(studies):
        x, c = clustered_sample(rng, shift=margin * (1 if i % 2 else -1), skew=False, **QASPER)
        rejections += tost(cluster_bootstrap(x, c, resamples=resamples, seed=i), margin=margin).p_tost < 0.05
    return rejections / studies


def holm_fwer(rng, studies, resamples, tests=4):
    any_diff = any_flip = 0
    for i in range(studies):
        p, cis = [], []
        for t in range(tests):
            x, c = clustered_sample(rng, shift=0.0, skew=False, **SMALL)
            seed = i * tests + t
            p.append(cluster_sign_flip(x, c, seed=seed).p_value)
            cis.append(cluster_bootstrap(x, c, resamples=resamples, seed=seed).ci95_bca)
        adjusted = holm(p)
        any_flip += bool((adjusted < 0.05).any())
        any_diff += any(
            two_sided_verdict(ci95=ci, alpha=0.05, p_signflip=q, signflip_required=True).label == "diff."
            for ci, q in zip(cis, adjusted)
        )
    return any_diff / studies, any_flip / studies


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--studies", type=int, default=2000, help="simulated studies per check (default 2000)"
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=20270, help="simulation seed (default 20270)")
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.studies, args.resamples = 20, 200
    n = args.studies
    print(
        f"{n} simulated studies per check, {args.resamples:,} resamples. Coverage: skewed noise, Qasper-like "
        f"(300 clusters, ~3.3 questions each) and FreshStack-like (235 questions, 3 strata); TOST and Holm: "
        f"Qasper-like / 80 clusters of ~3 questions, normal noise"
    )
    for stratified in (False, True):
        start = time.perf_counter()
        cov, normal = coverage(np.random.default_rng(args.seed + stratified), n, args.resamples, stratified)
        print(
            f"95% BCa coverage{', FreshStack-like, stratified' if stratified else ', Qasper-like'}: "
            f"{cov:.3f} "
            f"(MC s.e. {_mc_se(0.95, n):.3f}; normal-theory reference {normal:.3f}); "
            f"[{time.perf_counter() - start:.0f} s]"
        )
        goal(f"95% BCa coverage in 0.935-0.965{' (stratified)' if stratified else ''}", 0.935 <= cov <= 0.965,
             f"{cov:.3f}", quick=args.quick)
    start = time.perf_counter()
    size = tost_size(np.random.default_rng(args.seed + 2), n, args.resamples, margin=4.0)
    print(f"TOST rejection with the true difference on the margin (±4, Qasper-like): {size:.3f} "
          f"(MC s.e. {_mc_se(0.05, n):.3f}) [{time.perf_counter() - start:.0f} s]")
    _judge("TOST rejection on the margin", size, n, args.quick)
    start = time.perf_counter()
    fwer, fwer_flip = holm_fwer(np.random.default_rng(args.seed + 3), n, args.resamples)
    print(
        f"Holm family-wise error, 4 independent null tests (80 clusters): diff. verdicts {fwer:.3f}, "
        "sign-flip "
        f"alone {fwer_flip:.3f} (MC s.e. {_mc_se(0.05, n):.3f}; Holm's exact level here is "
        f"{1 - (1 - 0.05 / 4) ** 4:.4f}) [{time.perf_counter() - start:.0f} s]"
    )
    _judge("Holm family-wise error (diff. verdicts)", fwer, n, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
