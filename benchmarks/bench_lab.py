"""Time a full `harness lab` run (read, six chunkers, flat and graph retrieval, assembly, recall).

Usage: .venv/bin/python benchmarks/bench_lab.py [DOC.md QE.json] [--repeat N]
Defaults to the handbook study's files (examples/handbook/data). Timing starts after imports (Python start-up excluded);
the first run includes one-off costs such as loading the tokeniser. Goal: under 1 s.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cli.main import build_parser, main as harness_main  # noqa: E402

FIXTURE = ROOT / "examples" / "handbook" / "data"
GOAL_SECONDS = 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("doc", nargs="?", default=str(FIXTURE / "handbook.md"))
    ap.add_argument("qe", nargs="?", default=str(FIXTURE / "questions.json"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    build_parser()  # imports every command module: that is start-up, not the lab run
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
    print(f"harness lab on {args.doc}: first run {first:.3f} s, best {best:.3f} s, median {median:.3f} s over {args.repeat}")
    print(f"goal < {GOAL_SECONDS:.1f} s after start-up: {'met' if first < GOAL_SECONDS else 'NOT met'} (first run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
