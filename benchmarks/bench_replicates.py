"""Known effects (issue 26, item 2): 1,000 replicates of every flagship contrast, decided by the plan's own
rules and Holm families, on a synthetic table of the paper's sizes (Qasper: 951 questions in 300 papers, also
pooled; FreshStack: 235 questions in 3 domains).

A replicate contrast may use fewer bootstrap resamples (and sign-flips) than the plan registers if verdict
shares agree with the registered count within Monte Carlo error: checked here on the primary and H3 families
(8 tests, true effects chosen so the shares are neither 0 nor 1), with the same replicates at both counts.
The default, 1,000 resamples and sign-flips per replicate contrast, is the count this check backs; the wall
time counts whatever else shares the cores, so the CPU time is printed beside it.

Goal (issue 26): 1,000 replicates of every contrast in under 10 minutes on 2 cores. Run:
    .venv/bin/python benchmarks/bench_replicates.py [--cores 2] [--resamples 1000] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402

AGREEMENT_FAMILIES = ("primary", "H3")
# true effects (points) that put the subset's verdict shares between 0 and 1: near the margins for TOST rows,
# near the minimum detectable difference for two-sided ones; the other tests of the families stay at 0
AGREEMENT_EFFECTS = {
    "H2-qasper": 3.0,
    "H2-freshstack": 2.5,
    "H3-F512c-qasper": 2.0,
    "H3-F256t-freshstack": 4.0,
}


def flagship_table(plan, rng):
    """Every arm, retriever and registered metric of the plan at the paper's sizes, no arm effect."""
    from harness.inference.simulate import SyntheticDataset, long_table

    datasets = [SyntheticDataset("qasper", 300, 951 / 300, n_questions=951),
                SyntheticDataset("qasper-pooled", 300, 951 / 300, n_questions=951),
                SyntheticDataset("freshstack", 235, 1.0, ("laravel", "angular", "yolo"), n_questions=235)]
    metrics = {ds.name: sorted({t.metric for f in plan.families for t in f.tests if t.dataset == ds.name})
               for ds in datasets}
    return long_table(rng, datasets, {arm: 0.0 for arm in plan.arms}, list(plan.retrievers), metrics)


def every_contrast(plan, table, *, replicates: int, resamples: int, workers: int):
    from harness.stats.replicates import replicate_verdicts

    start, cpu = time.perf_counter(), _cpu_seconds()
    summary = replicate_verdicts(plan, table, effects={"H1-qasper": 5.0}, replicates=replicates, seed=2026,
                                 resamples=resamples, workers=workers)
    return summary, time.perf_counter() - start, _cpu_seconds() - cpu


def _cpu_seconds() -> float:
    """CPU time of this process and its finished workers: on a shared machine, wall time also counts others'
    work."""
    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def agreement(
    plan, table, *, replicates: int, resamples: int, workers: int
) -> list[tuple[str, str, float, float, float]]:
    """(test, verdict, share at the registered count, share at `resamples`, Monte Carlo SE of their
    difference)
    for every verdict of the subset's tests."""
    from harness.stats.replicates import replicate_verdicts

    subset = dataclasses.replace(plan, families=tuple(plan.family(f) for f in AGREEMENT_FAMILIES))
    runs = [replicate_verdicts(subset, table, effects=AGREEMENT_EFFECTS, replicates=replicates, seed=7,
                               resamples=count, workers=workers) for count in (plan.resamples, resamples)]
    rows = []
    for full, reduced in zip(*(run.tests for run in runs)):
        for label, p in full.shares.items():
            q = reduced.shares.get(label, 0.0)
            pooled = (p + q) / 2
            rows.append((full.test, label, p, q, math.sqrt(2 * pooled * (1 - pooled) / replicates)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cores", type=int, default=2, help="CPU cores to pin the process to (default 2)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples and sign-flips per replicate contrast (default 1000)")
    parser.add_argument(
        "--replicates", type=int, default=1000, help="replicates of every contrast (default 1000)"
    )
    parser.add_argument("--agreement-replicates", type=int, default=400,
                        help="replicates of the subset run at both resample counts (default 400)")
    add_quick(parser)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # the replicates' worker processes are the parallelism
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])

    import numpy as np

    from harness.plan.load import load_plan

    plan = load_plan(ROOT / "plan" / "plan.yaml", ROOT / "amendments")
    replicates, agreement_replicates, resamples = args.replicates, args.agreement_replicates, args.resamples
    if args.quick:
        plan = dataclasses.replace(plan, resamples=300, max_flips=300)
        replicates, agreement_replicates, resamples = 3, 20, 100
    table = flagship_table(plan, np.random.default_rng(2027))
    n_tests = sum(len(f.tests) for f in plan.families)
    print(
        f"cores: {args.cores}; long table: {len(table):,} rows; {n_tests} registered tests in "
        f"{len(plan.families)} families; registered: {plan.resamples:,} resamples, {plan.max_flips:,} "
        "sign-flips"
    )

    summary, elapsed, cpu = every_contrast(plan, table, replicates=replicates, resamples=resamples,
                                           workers=args.cores)
    ran = sum(1 for t in summary.tests if t.shares.get("missing", 0.0) < 1.0)
    print(f"every contrast: {replicates:,} replicates x {ran} tests with rows at {resamples:,} resamples in "
          f"{elapsed:.1f} s wall, {cpu:.1f} CPU-s ({cpu / replicates / ran * 1000:.1f} CPU-ms per contrast; "
          f"{cpu / args.cores:.0f} s on {args.cores} otherwise idle cores)")
    print(summary.to_markdown())
    projected = elapsed / replicates * 1000
    goal(
        f"1,000 replicates of every flagship contrast under 10 minutes on {args.cores} cores",
        projected < 600,
        f"{projected:.0f} s wall, {cpu / replicates * 1000 / args.cores:.0f} s of CPU per core, at "
        f"{resamples:,} "
        "resamples" + ("" if replicates == 1000 else "; projected from fewer replicates"),
        quick=args.quick,
    )

    start = time.perf_counter()
    rows = agreement(plan, table, replicates=agreement_replicates, resamples=resamples, workers=args.cores)
    print(f"\nagreement, {', '.join(AGREEMENT_FAMILIES)} families, {agreement_replicates} replicates at "
          f"{plan.resamples:,} and {resamples:,} resamples ({time.perf_counter() - start:.0f} s):")
    print(f"| test | verdict | share at {plan.resamples:,} | share at {resamples:,} | difference | MC SE |")
    print("|---|---|---:|---:|---:|---:|")
    for test, label, p, q, se in rows:
        print(f"| {test} | {label} | {p:.3f} | {q:.3f} | {q - p:+.3f} | {se:.3f} |")
    worst = max(abs(q - p) / se if se > 0 else (0.0 if p == q else math.inf) for _, _, p, q, se in rows)
    goal(
        f"verdict shares at {resamples:,} resamples agree with the registered {plan.resamples:,} within 2 "
        "Monte "
        "Carlo SE",
        worst <= 2,
        f"largest difference {worst:.2f} SE",
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
