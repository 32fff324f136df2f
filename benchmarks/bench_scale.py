"""Scale: scoring one cell of a large synthetic corpus under BM25 with the Qasper metrics.

    .venv/bin/python benchmarks/bench_scale.py [--chunks 100000 --chunks 200000] [--queries-per-1000 10]
    .venv/bin/python benchmarks/bench_scale.py --chunks 1000000 --queries-per-1000 10   # the issue's size
    .venv/bin/python benchmarks/bench_scale.py --quick   # 2,000 and 4,000 chunks: checks that it runs

Each size runs in its own process (so peak memory is that size's alone) through the scoring stage's own
code: `scopes` groups the chunks by question scope (a document of 100 chunks, as in Qasper) and
`score_cell` indexes each scope, ranks its questions, scores every metric and writes the TREC run file.
Printed per size: wall time, peak resident memory, memory per chunk above the interpreter's baseline, and
the marginal memory per chunk added since the previous size; memory must grow linearly (the marginal
figure stays flat), with no per-cell copy of the corpus. Goal: the marginal memory per chunk of the last size
at most the first size's memory per chunk (which also carries the fixed costs).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import add_quick, goal  # noqa: E402

CHUNKS_PER_DOC = 100
WORDS = [f"w{i}" for i in range(5000)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def corpus(n_chunks: int, queries_per_1000: int, seed: int):
    import numpy as np

    from harness.data.common import LoadedDataset
    from harness.data.model import Chunk, Document, Evidence, Question

    rng = np.random.default_rng(seed)
    n_docs = max(1, n_chunks // CHUNKS_PER_DOC)
    chunks, documents, questions = [], [], []
    per_doc_questions = max(1, queries_per_1000 * CHUNKS_PER_DOC // 1000)
    for d in range(n_docs):
        doc_id = f"doc{d:07d}"
        pieces = [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 60)) for _ in range(CHUNKS_PER_DOC)]
        text = "\n\n".join(pieces)
        documents.append(Document(doc_id=doc_id, domain="bench", text=text))
        pos = 0
        for c, piece in enumerate(pieces):
            span = ((pos, pos + len(piece)),)
            chunks.append(Chunk(doc_id, f"{doc_id}#{c:03d}", piece, span, "", c + 1, c + 1, ("paragraph",),
                                indexed_text=piece))
            pos += len(piece) + 2
        for q in range(per_doc_questions):
            target = chunks[-CHUNKS_PER_DOC + int(rng.integers(CHUNKS_PER_DOC))]
            words = target.text.split()
            start = target.spans[0][0] + len(" ".join(words[:10])) + 1
            gold = " ".join(words[10:20])
            questions.append(
                Question(
                    qid=f"{doc_id}-q{q}",
                    dataset="bench",
                    query=" ".join(words[10:16]),
                    cluster=doc_id,
                    stratum="",
                    scope=(doc_id,),
                    evidence=(Evidence(doc_id, gold, start, start + len(gold)),),
                    answers=(gold,),
                )
            )
    dataset = LoadedDataset("bench", "qasper", tuple(documents), tuple(questions), {}, ())
    return dataset, chunks


def _study_and_cell(folder: Path):
    """What score_cell reads: the study's context assembly (the default) and where its results go, and the
    cell: arm S (header-led chunks: no expansion, every document) under BM25."""
    from types import SimpleNamespace

    from harness.config.arm_kinds import get_kind
    from harness.grid.cells import ArmSpec, Cell, DatasetSpec, RetrieverSpec

    config = SimpleNamespace(assembly=None, ir_measures=None)
    study = SimpleNamespace(root=folder, results_root=folder, config=config)
    cell = Cell(DatasetSpec("bench", None), ArmSpec("S", SimpleNamespace(kind="S"), get_kind("S"), "S"),
                RetrieverSpec("bm25", None))
    return study, cell


def one_size(n_chunks: int, queries_per_1000: int, seed: int) -> dict:
    from harness.metrics.registry import ScoringCache, get_metric_set
    from harness.pipeline.score import score_cell, scopes
    from harness.retrieval.registry import RetrieverContext

    baseline = peak_rss_mb()
    start = time.perf_counter()
    dataset, chunks = corpus(n_chunks, queries_per_1000, seed)
    built = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        context = RetrieverContext(Path(tmp) / "embeddings", {"bm25": {"type": "bm25"}})
        start = time.perf_counter()
        scoped = scopes(dataset, chunks)
        study, cell = _study_and_cell(Path(tmp))
        rows, _variant_rows, counts = score_cell(study, dataset, cell, scoped, context, ScoringCache(),
                                                 get_metric_set("qasper").default_budgets, run_depth=100)
        scored = time.perf_counter() - start
    return {"chunks": len(chunks), "questions": counts["questions"], "rows": len(rows), "build_s": built,
            "score_s": scored, "peak_mb": peak_rss_mb(), "baseline_mb": baseline}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--chunks", type=int, action="append", help="corpus size (repeatable; default 100k, 200k)"
    )
    parser.add_argument("--queries-per-1000", type=int, default=10, help="questions per 1,000 chunks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: one size, JSON out
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.chunks = args.chunks or [2_000, 4_000]
    if args.one:
        print(json.dumps(one_size(args.one, args.queries_per_1000, args.seed)))
        return 0
    print(f"scale: one cell, BM25 + Qasper metrics, {CHUNKS_PER_DOC} chunks per scope, "
          f"{args.queries_per_1000} questions per 1,000 chunks")
    print(
        f"{'chunks':>9} {'questions':>9} {'corpus s':>8} {'score s':>8} {'q/s':>7} {'peak MB':>8} "
        f"{'KB/chunk':>9} "
        f"{'marginal KB/chunk':>17}"
    )
    previous, first_per_chunk, marginal_kb = None, None, None
    for n in args.chunks or [100_000, 200_000]:
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--queries-per-1000",
                              str(args.queries_per_1000), "--seed", str(args.seed)],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        per_chunk = (r["peak_mb"] - r["baseline_mb"]) * 1024 / r["chunks"]
        first_per_chunk = per_chunk if first_per_chunk is None else first_per_chunk
        if previous is not None:
            marginal_kb = (r['peak_mb'] - previous['peak_mb']) * 1024 / (r['chunks'] - previous['chunks'])
        marginal = "" if previous is None else f"{marginal_kb:.2f}"
        print(f"{r['chunks']:>9} {r['questions']:>9} {r['build_s']:>8.1f} {r['score_s']:>8.1f} "
              f"{r['questions'] / r['score_s']:>7.1f} {r['peak_mb']:>8.0f} {per_chunk:>9.2f} {marginal:>17}")
        previous = r
    print(
        "linear memory: the marginal KB per added chunk stays flat as the corpus grows (the corpus itself,\n"
        "held once, is most of it: chunk objects and their text)"
    )
    if marginal_kb is None:
        print("goal: linear memory: not measured (give two sizes or more)")
    else:
        goal("linear memory: marginal KB per added chunk at most the first size's KB per chunk",
             marginal_kb <= first_per_chunk, f"{marginal_kb:.2f} vs {first_per_chunk:.2f}", quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
