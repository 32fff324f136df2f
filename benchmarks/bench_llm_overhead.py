"""Harness overhead per LLM call, and the cache-warm rebuild time of the demo's LLM arms.

    .venv/bin/python benchmarks/bench_llm_overhead.py [--calls 2000] [--study examples/demo (default)]
    [--real-e 3] [--quick]

1. A no-op backend (answers instantly) isolates what the harness adds per call: cache key, cache
   lookup, JSON line append (flushed to disk by a background thread), ledger; then the same calls again as
   cache hits; then a whole
   E enrichment per chunk (template, JSON parse, validation, key dictionary). Target: < 5 ms per call.
2. With --study: rebuild the study's LLM arms (E, E-K, CR, M-TP, ...) in memory with a warm generation
   cache (no model call; skipped when the cache is missing). Target: < 30 s. --quick: replay, first dataset.
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

from goals import add_quick, goal  # noqa: E402
from harness.arms.enrich import enrich_document  # noqa: E402
from harness.data.model import Chunk, make_chunk_id  # noqa: E402
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


def bench_overhead(n: int, quick: bool) -> None:
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
            Chunk(
                "bench/doc",
                make_chunk_id("bench/doc", i, f"{i}{body}"),
                f"{i}{body}",
                ((0, 1),),
                "A > B",
                1,
                1,
                ("paragraph",),
            )
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
    goal("harness overhead per call < 5 ms (cache miss, the costliest path)", max(miss, e_miss) < 5,
         f"{max(miss, e_miss):.3f} ms", quick=quick)


def bench_warm_rebuild(study_root: Path, replay: bool, quick: bool) -> None:
    """Every LLM arm of the study (E, E-K, CR, M-TP, ...) rebuilt from the generation cache by the arms'
    own builders, as build-arms runs them (header-led chunks computed, `of:` arms from this run), in memory:
    nothing is written to the study. With `quick`, the first dataset only."""
    from harness.arms.build import header_led_chunks, sources_first
    from harness.grid.paths import generations_path
    from harness.arms.builder import BuildInputs
    from harness.arms.registry import build_chunks
    from harness.data.load import load_dataset, read_selection
    from harness.grid.arms import applies_to, arm_kind, source_arm
    from harness.study import Study

    study = Study.at(study_root)
    llm_arms = [
        a
        for a, cfg in study.arms.items()
        if arm_kind(study, a).needs_model and arm_kind(study, a).implemented
    ]
    missing = sorted({str(generations_path(study, study.arms[a].model)) for a in llm_arms
                      if not generations_path(study, study.arms[a].model).exists()})
    if missing:
        print(f"warm rebuild: skipped, no generation cache at {', '.join(missing)}")
        return
    total_start = time.perf_counter()
    for dataset_name in list(study.config.datasets)[: 1 if quick else None]:
        dataset = load_dataset(study, dataset_name, selection=read_selection(study))
        todo = [a for a in llm_arms if applies_to(study.arms[a], dataset_name)]
        header: dict[str, dict] = {}
        built: dict[str, list[Chunk]] = {}
        for arm in sources_first(study, dataset_name, todo):
            kind = arm_kind(study, arm)
            start = time.perf_counter()
            result = build_chunks(
                kind,
                BuildInputs(
                    dataset.documents,
                    study.chunking,
                    lambda: header.setdefault("h", header_led_chunks(study, dataset.documents)),
                    study=study,
                    arm=arm,
                    arm_config=study.arms[arm],
                    progress=False,
                    dataset=dataset_name,
                    replay=replay,
                    questions=dataset.questions,
                    read_arm=built.__getitem__,
                    source=source_arm(study, arm, dataset_name) if kind.derived else None,
                ),
            )
            built[arm] = result.chunks
            run = result.manifest.get("llm", {}).get("run", {})
            print(
                f"  {dataset_name}/{arm}: {len(result.chunks)} chunks in {time.perf_counter() - start:.2f} s "
                f"(cache hits {run.get('cache_hits', 0)}, fresh calls {run.get('fresh_calls', 0)})"
            )
    elapsed = time.perf_counter() - total_start
    goal(
        f"warm rebuild of the LLM arms ({'replay' if replay else 'with model identity'}) under 30 s",
        elapsed < 30,
        f"{elapsed:.2f} s",
        quick=quick,
    )


def bench_real_e(study_root: Path, n: int) -> None:
    from harness.arms.build import header_led_chunks
    from harness.arms.keydict import KeyDictionary
    from harness.data.load import load_dataset, read_selection
    from harness.arms.enrich import ENRICH_SCHEMA, enrich_prompt_values, previous_summary_text
    from harness.llm.registry import make_backend
    from harness.study import Study

    study = Study.at(study_root)
    model_cfg = study.models[study.arms["E"].model]
    backend = make_backend(model_cfg)
    template = PromptTemplate.load(study.prompts_dir, "enrich.txt")
    dataset = next(iter(study.config.datasets))
    documents = load_dataset(study, dataset, selection=read_selection(study)).documents
    chunks = next(iter(header_led_chunks(study, documents[:1]).values()))[:n]
    start = time.perf_counter()
    backend.llama()
    print(f"real E calls with {backend.model} ({dataset}, first document):")
    print(f"  model load: {time.perf_counter() - start:.2f} s")
    walls, outs, ins = [], [], []
    for i, chunk in enumerate(chunks):
        values = enrich_prompt_values(
            chunk, i, len(chunks), previous_summary_text(i, None), KeyDictionary().render()
        )
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
    parser.add_argument(
        "--study",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "examples" / "demo",
        help="study whose LLM arms to rebuild from a warm cache (default: the demo; skipped "
        "until its S chunks are built, e.g. by `make demo`)",
    )
    parser.add_argument(
        "--replay", action="store_true", help="rebuild with the replay backend (no model file)"
    )
    parser.add_argument("--real-e", type=int, default=0, help="time this many real E calls")
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.calls, args.replay, args.real_e = 50, True, 0  # never a model call in a quick run
    bench_overhead(args.calls, args.quick)
    if args.study:
        bench_warm_rebuild(args.study, args.replay, args.quick)
        if args.real_e:
            bench_real_e(args.study, args.real_e)


if __name__ == "__main__":
    main()
