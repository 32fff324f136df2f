"""The whole registered study on its synthetic twin (`harness rehearse`), at the paper's sizes, with stand-in
models and encoders: wall time and peak memory per stage, whether every family produces verdicts, whether the
Ray executor writes the same bytes as the local one, and how long the known-effects replicates take.

    .venv/bin/python benchmarks/bench_rehearse.py [--study .] [--scale paper] [--score-workers 2]
        [--replicates 1000] [--resamples N] [--no-ray] [--out DIR] [--quick]

Goals (issue 26): the paper-scale rehearsal of the flagship under 20 minutes and 4 GiB peak on 2 cores (score
in --score-workers processes; the peak sums a stage's processes), every family with verdicts; `--executor
ray` byte-identical to the local run; 1,000 replicates of every contrast under 10 minutes. --quick rehearses
the handbook study (examples/handbook: Markdown docs, no model calls, half the demo's work) at small scale up
to `score`, a second time locally in one process (the comparison code path, and workers against none), with
a handful of replicates.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import add_quick, goal  # noqa: E402

from harness.files import read_json, sha256_file  # noqa: E402
from harness.plan.load import load_study_plan  # noqa: E402
from harness.stats.io import load_per_question  # noqa: E402
from harness.stats.replicates import REPLICATE_RESAMPLES, replicate_verdicts  # noqa: E402
from harness.study import Study  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COMPARED = ("chunks", "runs", "per_question", "stats")  # the results an auditor re-derives
WHEN_RECORDS = ("FIRST_OUTCOME.json", ".done.json")  # completion times: the only bytes allowed to differ
WALL_GOAL_S = 20 * 60
MEMORY_GOAL_MIB = 4 * 1024
REPLICATES_GOAL_S = 10 * 60


def rehearse(study: Path, out: Path, *args: str) -> dict:
    command = [
        sys.executable,
        "-m",
        "harness",
        "rehearse",
        "--study",
        str(study),
        "--out",
        str(out),
        "--no-progress",
        *args,
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not (out / "rehearsal" / "rehearsal.json").is_file():
        raise SystemExit(
            f"rehearse failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    print(done.stdout)
    return read_json(out / "rehearsal" / "rehearsal.json")


def differing_files(a: Path, b: Path) -> tuple[int, list[str]]:
    """(files compared, relative paths whose bytes differ or exist on one side only) under COMPARED."""
    names = set()
    for root in (a, b):
        for folder in COMPARED:
            names |= {p.relative_to(root) for p in (root / "results" / folder).rglob("*")
                      if p.is_file() and not p.name.endswith(WHEN_RECORDS)}
    differ = [str(n) for n in sorted(names)
              if not ((a / n).is_file() and (b / n).is_file() and sha256_file(a / n) == sha256_file(b / n))]
    return len(names), differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--study", default=str(ROOT), help="the study rehearsed (default: the flagship, the repository root)"
    )
    parser.add_argument("--scale", default="paper", choices=("paper", "small"))
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument(
        "--resamples",
        type=int,
        default=REPLICATE_RESAMPLES,
        help=f"bootstrap resamples per replicate contrast (default {REPLICATE_RESAMPLES}, as rehearse)",
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes for the replicates"
    )
    parser.add_argument("--score-workers", type=int, default=os.cpu_count() or 1,
                        help="processes scoring arms side by side in the local run (harness score --workers)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    parser.add_argument("--out", help="keep the twins here (default: a temporary folder, removed)")
    add_quick(parser)
    args = parser.parse_args()
    study, scale, until, replicates = Path(args.study), args.scale, [], args.replicates
    if args.quick:
        study, scale, until, replicates = ROOT / "examples" / "handbook", "small", ["--until", "score"], 3
    with tempfile.TemporaryDirectory(prefix="bench-rehearse-") as scratch:
        base = Path(args.out) if args.out else Path(scratch)
        workers = ["--score-workers", str(args.score_workers)]
        local = rehearse(study, base / "local", "--scale", scale, "--executor", "local", *workers, *until)
        stages = local["stages"]
        wall = sum(s["wall_s"] for s in stages)
        peak = max(s["peak_mib"] for s in stages)
        print(f"{scale} rehearsal of {study}: {wall:.0f} s in all, peak {peak:.0f} MiB")
        goal("whole rehearsal under 20 minutes", wall < WALL_GOAL_S, f"{wall / 60:.1f} min", quick=args.quick)
        goal("peak memory under 4 GiB", peak < MEMORY_GOAL_MIB, f"{peak:.0f} MiB", quick=args.quick)
        if "tests" in local:
            blocked = [t["test"] for t in local["tests"] if not t["verdict"]]
            goal(
                "every registered test gets a verdict",
                not blocked,
                f"{len(local['tests']) - len(blocked)} of {len(local['tests'])}"
                + (f"; blocked: {blocked}" if blocked else ""),
            )
        # the other run: Ray with as many workers, or (quick, --no-ray) the local executor in one process
        other_executor, other_args = (
            ("local", ["--score-workers", "1"]) if args.quick or args.no_ray else ("ray", workers)
        )
        other_name = " ".join(["--executor", other_executor, *other_args])
        other = rehearse(
            study,
            base / other_executor / "twin",
            "--scale",
            scale,
            "--executor",
            other_executor,
            *other_args,
            *until,
        )
        compared, differ = differing_files(base / "local", base / other_executor / "twin")
        goal(
            f"{other_name} writes the same bytes as the local run ({' '.join(workers)})",
            not differ and compared > 0,
            f"{compared} files compared, {len(differ)} differ" + (f": {differ[:5]}" if differ else ""),
            quick=args.quick,
        )
        del other
        twin = Study.at(base / "local")
        plan, table = load_study_plan(twin), load_per_question(twin)
        start = time.perf_counter()
        summary = replicate_verdicts(
            plan,
            table,
            effects={},
            replicates=replicates,
            seed=0,
            resamples=args.resamples,
            workers=args.workers,
        )
        took = time.perf_counter() - start
        n_tests = sum(len(f.tests) for f in plan.families)
        print(f"{replicates} replicates of {n_tests} registered tests: {took:.1f} s "
              f"(resamples per contrast: {summary.to_json().get('resamples')})")
        goal(f"{replicates} replicates of every contrast under 10 minutes", took < REPLICATES_GOAL_S,
             f"{took / 60:.1f} min", quick=args.quick)


if __name__ == "__main__":
    main()
