"""Chunking throughput on the Laravel docs (target: all 98 files header-led chunked in under 2 s).

Usage: .venv/bin/python benchmarks/bench_chunking.py [DOCS_DIR] [--repeat N] [--quick]
Prints, per chunker, the best wall time over N runs, throughput and chunk counts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import add_quick, goal  # noqa: E402
from harness.chunking import CHUNKERS  # noqa: E402
from harness.chunking.blocks import parse_blocks  # noqa: E402
from harness.chunking.windows import median_token_length  # noqa: E402
from harness.data.model import Document  # noqa: E402
from harness.tokens import cl100k  # noqa: E402

DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "laravel-docs-724c31cc"
TARGET_SECONDS = 2.0


def best_time(fn, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("docs_dir", nargs="?", default=str(DEFAULT_DIR))
    ap.add_argument("--repeat", type=int, default=5)
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    files = sorted(Path(args.docs_dir).glob("*.md"))
    if not files:
        print(f"no .md files in {args.docs_dir}", file=sys.stderr)
        return 1
    docs = [Document(f"laravel/{p.name}", "laravel", p.read_bytes().decode("utf-8")) for p in files]
    n_chars = sum(len(d.text) for d in docs)
    cl100k()  # load the tokenizer outside the timings
    print(f"{len(docs)} files, {n_chars:,} characters, best of {args.repeat} runs")

    parse_s, blocks = best_time(lambda: [parse_blocks(d.text) for d in docs], args.repeat)
    print(
        f"block parser      {parse_s:7.3f} s  {n_chars / parse_s / 1e6:6.2f} M chars/s  "
        f"{sum(map(len, blocks)):6d} blocks"
    )

    s_seconds, s_chunks = best_time(lambda: [c for d in docs for c in CHUNKERS["header-led"](d)], args.repeat)
    lengths = [len(c.text) for c in s_chunks]
    print(
        f"header-led        {s_seconds:7.3f} s  {n_chars / s_seconds / 1e6:6.2f} M chars/s  "
        f"{len(s_chunks):6d} chunks"
        f"  (median {statistics.median(lengths):.0f} chars, max {max(lengths)})"
    )
    fl_tokens = median_token_length(s_chunks)
    for name, params in (("F512c", {}), ("F256t", {}), ("P", {}), ("FL", {"tokens": fl_tokens})):
        sec, chunks = best_time(lambda: [c for d in docs for c in CHUNKERS[name](d, **params)], args.repeat)
        extra = f"  (window {fl_tokens} tokens = median S length)" if name == "FL" else ""
        print(
            f"{name:<17} {sec:7.3f} s  {n_chars / sec / 1e6:6.2f} M chars/s  {len(chunks):6d} chunks{extra}"
        )
    goal(
        f"all {len(docs)} files header-led chunked in under {TARGET_SECONDS:.0f} s",
        s_seconds < TARGET_SECONDS,
        f"{s_seconds:.3f} s",
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
