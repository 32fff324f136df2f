"""Time a full `harness lab` run (read, six chunkers, flat and graph retrieval, assembly, recall).

Usage: .venv/bin/python benchmarks/bench_lab.py [DOC.md QE.json] [--repeat N] [--quick]
Defaults to the handbook study's files (examples/handbook/data). Two figures: the in-process run, timed after
imports (the first run includes one-off costs such as loading the tokeniser), and the whole command as a user
runs it (`python -m harness lab ...` in a fresh process, minus a bare interpreter's start-up, so the harness's
own imports count). Goal: under 1 s after Python has started.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402
from harness.cli.main import build_parser, main as harness_main  # noqa: E402

FIXTURE = ROOT / "examples" / "handbook" / "data"
GOAL_SECONDS = 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("doc", nargs="?", default=str(FIXTURE / "handbook.md"))
    ap.add_argument("qe", nargs="?", default=str(FIXTURE / "questions.json"))
    ap.add_argument("--repeat", type=int, default=5)
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    build_parser("lab")  # imports the command's module: that is start-up, not the lab run
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        with redirect_stdout(io.StringIO()):
            code = harness_main(["lab", args.doc, args.qe])
        times.append(time.perf_counter() - t0)
        if code != 0:
            print(f"harness lab exited with {code}", file=sys.stderr)
            return code
    first, best, median = times[0], min(times), statistics.median(times)
    bare = _median_wall([sys.executable, "-c", "pass"], args.repeat)
    whole = _median_wall([sys.executable, "-m", "harness", "lab", args.doc, args.qe], args.repeat)
    print(
        f"harness lab on {args.doc}: first run {first:.3f} s, best {best:.3f} s, median {median:.3f} s over "
        f"{args.repeat}"
    )
    goal(
        f"first in-process run under {GOAL_SECONDS:.1f} s",
        first < GOAL_SECONDS,
        f"{first:.3f} s",
        quick=args.quick,
    )
    after_start = whole - bare
    print(f"whole command: {whole:.3f} s median wall, bare interpreter {bare:.3f} s")
    goal(f"whole command under {GOAL_SECONDS:.1f} s after Python has started (imports included)",
         after_start < GOAL_SECONDS, f"{after_start:.3f} s", quick=args.quick)
    return 0


def _median_wall(cmd: list[str], repeat: int) -> float:
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


if __name__ == "__main__":
    raise SystemExit(main())
