"""Harness overhead per LLM call, and the cache-warm rebuild time of the demo's LLM arms.

    .venv/bin/python benchmarks/bench_llm_overhead.py [--calls 2000] [--study examples/demo (default)] [--real-e 3]

1. A no-op backend (answers instantly) isolates what the harness adds per call: cache key, cache
   lookup, JSON line append (flushed to disk by a background thread), ledger; then the same calls again as cache hits; then a whole
   E enrichment per chunk (template, JSON parse, validation, key dictionary). Target: < 5 ms per call.
2. With --study: rebuild the study's E, E-K and CR arms from its header-led (S) chunks with a warm
   generation cache (no model call; skipped when the cache is missing). Target: < 30 s.
3. With --real-e N: time N real E calls with the study's embedded model (not cached).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.arms.enrich import enrich_document  # noqa: E402
from harness.data.model import Chunk, Document, make_chunk_id  # noqa: E402
from harness.llm.base import Backend, Completion  # noqa: E402
from harness.llm.cache import GenerationCache  # noqa: E402
from harness.llm.ledger import SpendLedger  # noqa: E402
from harness.llm.prompts import PromptTemplate  # noqa: E402
from harness.llm.session import LlmSession  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ANSWER = json.dumps(
    {
        "title": "t",
        "summary": "s.",
        "keywords": ["a", "b", "c", "d", "e"],
        "entities": [{"name": "n", "type": "concept"}],
        "questions": ["q1?", "q2?"],
        "key": "topic",
        "related_keys": ["topic"],
    }
)


class NoOpBackend(Backend):
    name = "no-op"

    def __init__(self):
        super().__init__("no-op", {"temperature": 0})

    @property
    def digest(self) -> str:
        return "no-op"

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        return Completion(ANSWER, 1, 1, 0.0, 0.0, "no-op")


def per_call_ms(fn, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - start) * 1000 / n


def bench_overhead(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = GenerationCache(Path(tmp) / "g.jsonl")
        session = LlmSession(NoOpBackend(), cache, SpendLedger("bench", None))
        prompt = "x" * 2000  # about one chunk's prompt
        miss = per_call_ms(lambda i: session.call(f"{i} {prompt}", schema={"type": "object"}, seed=0), n)
        hit = per_call_ms(lambda i: session.call(f"{i} {prompt}", schema={"type": "object"}, seed=0), n)
        cache.close()
        reopen_start = time.perf_counter()
        GenerationCache(Path(tmp) / "g.jsonl").close()
        reopen_ms = (time.perf_counter() - reopen_start) * 1000

        template = PromptTemplate.load(ROOT / "prompts", "enrich.txt")
        body = "Some chunk text about a method and its results. " * 12
        chunks = [
            Chunk("bench/doc", make_chunk_id("bench/doc", i, f"{i}{body}"), f"{i}{body}", ((0, 1),), "A > B", 1, 1, ("paragraph",))
            for i in range(n)
        ]
        cache = GenerationCache(Path(tmp) / "e.jsonl")
        session = LlmSession(NoOpBackend(), cache, SpendLedger("bench", None))
        start = time.perf_counter()
        enrich_document(session, template, chunks, seeds=[0, 1, 2, 3], use_keys=True)
        e_miss = (time.perf_counter() - start) * 1000 / n
        start = time.perf_counter()
        enrich_document(session, template, chunks, seeds=[0, 1, 2, 3], use_keys=True)
        e_hit = (time.perf_counter() - start) * 1000 / n
        cache.close()
    print(f"harness overhead per call over a no-op backend ({n} calls, target < 5 ms):")
    print(f"  session.call, cache miss (key + append + ledger; fsync in the background): {miss:.3f} ms")
    print(f"  session.call, cache hit:                                  {hit:.3f} ms")
    print(f"  E enrichment per chunk, cache miss (prompt, parse, keys): {e_miss:.3f} ms")
    print(f"  E enrichment per chunk, cache hit:                        {e_hit:.3f} ms")
    print(f"  reopening a cache of {n} lines:                            {reopen_ms:.1f} ms")


def load_inputs(study_root: Path, dataset: str) -> tuple[list[Document], dict[str, list[Chunk]]]:
    """The dataset's selected documents (through its adapter, as build-arms reads them) and its S chunks."""
    from harness.data.load import load_dataset, read_selection
    from harness.study import Study

    study = Study.at(study_root)
    docs = list(load_dataset(study, dataset, selection=read_selection(study)).documents)
    by_doc: dict[str, list[Chunk]] = {d.doc_id: [] for d in docs}
    with open(study.chunks_path(dataset, "S"), encoding="utf-8") as f:
        for line in f:
            chunk = Chunk.from_json(json.loads(line))
            by_doc[chunk.doc_id].append(chunk)
    return docs, by_doc


def bench_warm_rebuild(study_root: Path, replay: bool) -> None:
    from harness.arms.llm_arms import build_llm_arm, generations_path
    from harness.arms.registry import get_kind
    from harness.pipeline.grid import applies_to
    from harness.study import Study

    study = Study.at(study_root)
    kinds = {a: get_kind(cfg.kind) for a, cfg in study.arms.items()}
    llm_arms = {a: cfg for a, cfg in study.arms.items() if kinds[a].needs_model and kinds[a].implemented}
    missing = {generations_path(study, cfg.model) for cfg in llm_arms.values()}
    missing = [p for p in missing if not p.exists()]
    if missing:
        print(f"warm rebuild: skipped, no generation cache at {', '.join(map(str, missing))}")
        return
    total_start = time.perf_counter()
    for dataset in study.datasets:
        if not study.chunks_path(dataset, "S").exists():
            print(f"warm rebuild: skipped {dataset}, no S chunks at {study.chunks_path(dataset, 'S')}")
            continue
        docs, by_doc = load_inputs(study_root, dataset)
        for arm, cfg in llm_arms.items():
            if not applies_to(cfg, dataset):
                continue
            start = time.perf_counter()
            result = build_llm_arm(study, arm, cfg, docs, by_doc, progress=False, fresh=False, replay=replay)
            run = result.manifest["run"]
            print(
                f"  {dataset}/{arm}: {len(result.chunks)} chunks in {time.perf_counter() - start:.2f} s "
                f"(cache hits {run['cache_hits']}, fresh calls {run['fresh_calls']})"
            )
    print(f"warm rebuild of the LLM arms ({'replay' if replay else 'with model identity'}, target < 30 s): "
          f"{time.perf_counter() - total_start:.2f} s")


def bench_real_e(study_root: Path, n: int) -> None:
    from harness.arms.keydict import KeyDictionary
    from harness.arms.enrich import ENRICH_SCHEMA, enrich_prompt_values, previous_summary_text
    from harness.llm.registry import make_backend
    from harness.study import Study

    study = Study.at(study_root)
    model_cfg = study.models[study.arms["E"].model]
    backend = make_backend(model_cfg)
    template = PromptTemplate.load(study.prompts_dir, "enrich.txt")
    dataset = next(iter(study.datasets))
    _, by_doc = load_inputs(study_root, dataset)
    chunks = next(iter(by_doc.values()))[:n]
    start = time.perf_counter()
    backend.llama()
    print(f"real E calls with {backend.model} ({dataset}, first document):")
    print(f"  model load: {time.perf_counter() - start:.2f} s")
    walls, outs, ins = [], [], []
    for i, chunk in enumerate(chunks):
        values = enrich_prompt_values(chunk, i, len(chunks), previous_summary_text(i, None), KeyDictionary().render())
        done = backend.complete(template.render(values), schema=ENRICH_SCHEMA, seed=0)
        walls.append(done.wall_s)
        ins.append(done.prompt_tokens)
        outs.append(done.completion_tokens)
    print(f"  {len(walls)} calls: median {statistics.median(walls):.2f} s, max {max(walls):.2f} s, "
          f"tokens in/out median {statistics.median(ins):.0f}/{statistics.median(outs):.0f}, "
          f"{sum(outs) / sum(walls):.1f} output tokens/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--study", type=Path, default=Path(__file__).resolve().parents[1] / "examples" / "demo",
                        help="study whose LLM arms to rebuild from a warm cache (default: the demo; skipped "
                             "until its S chunks are built, e.g. by `make demo`)")
    parser.add_argument("--replay", action="store_true", help="rebuild with the replay backend (no model file)")
    parser.add_argument("--real-e", type=int, default=0, help="time this many real E calls")
    args = parser.parse_args()
    bench_overhead(args.calls)
    if args.study:
        bench_warm_rebuild(args.study, args.replay)
        if args.real_e:
            bench_real_e(args.study, args.real_e)


if __name__ == "__main__":
    main()
