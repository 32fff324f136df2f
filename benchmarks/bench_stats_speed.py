"""Speed of `harness stats` on the flagship plan: every family, 10,000 resamples, synthetic results shaped
like the flagship (Qasper: 1,000 questions in 300 papers; FreshStack: 235 questions in 3 domains).

Target (issue 4): the ~30 Holm-family contrasts in under 30 s on 2 cores. Run:
    .venv/bin/python benchmarks/bench_stats_speed.py [--cores 2] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cores", type=int, default=2, help="CPU cores to pin the process to (default 2)")
    add_quick(parser)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.cores)
    if hasattr(os, "sched_setaffinity"):
        available = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, available[: args.cores])

    import numpy as np

    from harness.stats.families import run_plan
    from harness.plan.load import load_plan
    from harness.inference.simulate import SyntheticDataset, long_table

    plan = load_plan(ROOT / "plan" / "plan.yaml", ROOT / "amendments")
    if args.quick:
        plan = dataclasses.replace(plan, resamples=200)
    arms = {arm: 0.0 for arm in plan.arms}
    rng = np.random.default_rng(2027)
    qasper = SyntheticDataset("qasper", 300, 1000 / 300)
    fresh = SyntheticDataset("freshstack", 235, 1.0, ("laravel", "angular", "yolo"))
    metrics = {name: sorted({t.metric for f in plan.families for t in f.tests if t.dataset == name})
               for name in ("qasper", "freshstack")}
    table = long_table(rng, [qasper, fresh], arms, list(plan.retrievers), metrics)
    n_q = table[table.dataset == "qasper"].qid.nunique()
    print(
        f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else 'all'}; "
        f"long table: {len(table):,} rows; qasper {n_q} questions in 300 clusters; freshstack 235 questions"
    )

    holm_families = [f.id for f in plan.families if f.multiplicity == "holm"]
    timings = {}
    for label, only in (("Holm families", holm_families), ("all families", None)):
        start = time.perf_counter()
        results = run_plan(plan, table, only=only, threads=args.cores)
        elapsed = time.perf_counter() - start
        n = sum(len(r.rows) for r in results)
        timings[label] = elapsed
        print(f"{label}: {n} contrasts x {plan.resamples:,} resamples in {elapsed:.1f} s "
              f"({elapsed / n * 1000:.0f} ms per contrast)")
    goal(f"Holm families under 30 s on {args.cores} cores", timings["Holm families"] < 30,
         f"{timings['Holm families']:.1f} s", quick=args.quick)
    goal(f"every family's contrasts under 5 s on {args.cores} cores (issue 17)", timings["all families"] < 5,
         f"{timings['all families']:.1f} s", quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
