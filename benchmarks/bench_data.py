"""Adapter throughput on the real samples: Qasper conversion (both layouts) and Laravel Markdown reading.

Run: .venv/bin/python benchmarks/bench_data.py   (needs ../shared/data)
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.data import freshstack, qasper
from harness.data.common import read_markdown

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def timed(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    for name in ("qasper-train10.original-schema.json", "qasper-original-sample.hf.json"):
        path = DATA / "qasper-train10" / name
        papers = qasper.read_qasper_file(path)
        read_s = timed(lambda: qasper.read_qasper_file(path))
        convert_s = timed(lambda: [qasper.convert_paper(p, r) for p, r in papers.items()])
        print(f"qasper {name}: {len(papers)} papers, read {read_s * 1000:.1f} ms, convert {convert_s * 1000:.1f} ms")
    checkout = DATA / "laravel-docs-724c31cc"
    files = freshstack.markdown_files(checkout)
    read_s = timed(lambda: [read_markdown(checkout / f) for f in files])
    size = sum((checkout / f).stat().st_size for f in files)
    print(f"laravel: {len(files)} Markdown files, {size / 1e6:.2f} MB, read+normalise {read_s * 1000:.1f} ms")


if __name__ == "__main__":
    main()
