"""Adapter throughput on the real samples: Qasper conversion (both layouts) and Laravel Markdown reading.

Run: .venv/bin/python benchmarks/bench_data.py [--quick]   (needs ../shared/data)
Goal: the adapters are never the slow stage: each sample read and converted in under 1 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's harness, not an installed one

from goals import add_quick, goal  # noqa: E402
from harness.data import freshstack, qasper  # noqa: E402
from harness.data.common import read_markdown  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GOAL_SECONDS = 1.0


def timed(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser)
    args = parser.parse_args()
    repeats = 1 if args.quick else 5
    slowest = 0.0
    for name in ("qasper-train10.original-schema.json", "qasper-original-sample.hf.json"):
        path = DATA / "qasper-train10" / name
        papers = qasper.read_qasper_file(path)
        read_s = timed(lambda: qasper.read_qasper_file(path), repeats)
        convert_s = timed(lambda: [qasper.convert_paper(p, r) for p, r in papers.items()], repeats)
        slowest = max(slowest, read_s + convert_s)
        print(
            f"qasper {name}: {len(papers)} papers, read {read_s * 1000:.1f} ms, convert "
            f"{convert_s * 1000:.1f} ms"
        )
    checkout = DATA / "laravel-docs-724c31cc"
    files = freshstack.markdown_files(checkout)
    read_s = timed(lambda: [read_markdown(checkout / f) for f in files], repeats)
    slowest = max(slowest, read_s)
    size = sum((checkout / f).stat().st_size for f in files)
    print(f"laravel: {len(files)} Markdown files, {size / 1e6:.2f} MB, read+normalise {read_s * 1000:.1f} ms")
    goal(f"each sample read and converted in under {GOAL_SECONDS:.0f} s", slowest < GOAL_SECONDS,
         f"slowest {slowest * 1000:.0f} ms", quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
