"""BM25 throughput: harness's vectorised BM25 against rank_bm25.BM25Okapi in the same run.

Synthetic, seeded corpus (Zipf-distributed vocabulary): 10,000 chunks and 1,000 questions by default.
Prints build times, queries per second for scoring (like for like with rank_bm25.get_scores) and for
full rankings, the speed-up, the maximum absolute score difference and whether every ranking agrees.

    .venv/bin/python benchmarks/bench_bm25.py [--chunks 10000] [--questions 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rank_bm25 import BM25Okapi  # noqa: E402

from harness.data.model import Chunk  # noqa: E402
from harness.retrieval.bm25 import BM25Retriever  # noqa: E402
from harness.tokens import words  # noqa: E402


def synthetic(n_chunks: int, n_questions: int, seed: int, vocabulary: int = 30_000):
    rng = np.random.default_rng(seed)
    lexicon = np.array([f"w{i}" for i in range(vocabulary)])
    weights = 1.0 / np.arange(1, vocabulary + 1) ** 1.1  # Zipf-like term frequencies, as in real text
    weights /= weights.sum()
    lengths = rng.integers(40, 320, size=n_chunks)
    texts = [" ".join(lexicon[rng.choice(vocabulary, size=n, p=weights)]) for n in lengths]
    chunks = [Chunk("bench", f"bench#{i:05d}", t, ((0, len(t)),), "", 1, 1, ("paragraph",), indexed_text=t) for i, t in enumerate(texts)]
    queries = []
    for _ in range(n_questions):
        source = texts[rng.integers(n_chunks)].split()
        picked = rng.choice(len(source), size=min(len(source), int(rng.integers(4, 13))), replace=False)
        queries.append(" ".join(source[i] for i in sorted(picked)))
    return chunks, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    chunks, queries = synthetic(args.chunks, args.questions, args.seed)
    tokens = [words(c.indexed_text) for c in chunks]
    query_tokens = [words(q) for q in queries]
    print(f"corpus: {len(chunks)} chunks, {sum(map(len, tokens))} tokens; {len(queries)} questions, "
          f"{np.mean([len(q) for q in query_tokens]):.1f} tokens each (seed {args.seed})")

    t = time.perf_counter()
    reference = BM25Okapi(tokens)
    ref_build = time.perf_counter() - t
    t = time.perf_counter()
    index = BM25Retriever("bm25").index("bench", chunks)
    our_build = time.perf_counter() - t
    print(f"index build: rank_bm25 {ref_build:.2f} s, harness {our_build:.2f} s")

    t = time.perf_counter()
    ref_scores = [reference.get_scores(q) for q in query_tokens]
    ref_time = time.perf_counter() - t

    t = time.perf_counter()
    our_scores = [index.scores(q) for q in queries]
    score_time = time.perf_counter() - t

    t = time.perf_counter()
    rankings = index.search_many(queries)
    rank_time = time.perf_counter() - t

    max_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ref_scores, our_scores))
    max_rel = max(float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300))) for a, b in zip(ref_scores, our_scores))
    same_order = all(
        r.order.tolist() == np.lexsort((np.arange(len(s)), -s)).tolist() for r, s in zip(rankings, ref_scores)
    )
    n = len(queries)
    print(f"rank_bm25 get_scores:       {n / ref_time:10.1f} queries/s ({ref_time:.2f} s)")
    print(f"harness scores:             {n / score_time:10.1f} queries/s ({score_time:.2f} s)  speed-up {ref_time / score_time:.1f}x")
    print(f"harness full rankings:      {n / rank_time:10.1f} queries/s ({rank_time:.2f} s)  speed-up {ref_time / rank_time:.1f}x")
    print(f"max abs score difference:   {max_diff:.3g} (max relative {max_rel:.3g})")
    print(f"rankings identical to rank_bm25's scores sorted by (-score, position): {same_order}")


if __name__ == "__main__":
    main()
