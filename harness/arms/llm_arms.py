"""Entry point for the paid arms (E, E-K, CR, PF and their re-pointed twins such as Es, CRs).

Documents run concurrently (llm.workers; one at a time for an in-process backend, Backend.serial), each
document's chunks in order. The first stopping error
(model missing, auth, server gone, spend cap, replay miss) stops every worker before its next fresh
call; everything already answered is in the generation cache, so a rerun resumes there.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.arms.contextual import contextualise_document
from harness.arms.enrich import PF_FIELDS, DocumentOutcome, enrich_document, pf_document
from harness.arms.render import render
from harness.config.arms import ALL_DOCUMENTS, LLM_KINDS, LlmArm
from harness.data.model import Chunk, Document
from harness.errors import HarnessError
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger
from harness.llm.prompts import PromptTemplate
from harness.llm.registry import make_backend
from harness.llm.session import Cancelled, LlmSession
from harness.study import Study

TEMPLATES = {
    "E": {"enrich": "enrich.txt"},
    "E-K": {"enrich": "enrich.txt"},
    "CR": {"contextual": "contextual.txt"},
    "PF": {name: f"pf_{name}.txt" for name in PF_FIELDS},
}


@dataclass(frozen=True)
class LlmArmResult:
    chunks: list[Chunk]  # corpus order, `generated` filled, `indexed_text` rendered
    manifest: dict[str, Any]


def generations_path(study: Study, model_name: str) -> Path:
    return study.results / "generations" / f"{model_name}.jsonl"


def select_documents(arm_name: str, arm_cfg: LlmArm, documents: Sequence[Document]) -> list[Document]:
    """PF may run on a seeded subset (`documents: N`, `seed: S`, checked by the schema); order stays the
    corpus order."""
    n = arm_cfg.documents
    if n == ALL_DOCUMENTS:
        return list(documents)
    ids = sorted(d.doc_id for d in documents)
    chosen = set(random.Random(arm_cfg.seed).sample(ids, min(n, len(ids))))
    return [d for d in documents if d.doc_id in chosen]


def key_diagnostics(per_doc: Sequence[Sequence[Mapping[str, Any]]], evictions: int) -> dict[str, Any]:
    """Keys are per document: reuse = 1 - distinct / keyed, averaged over documents with a key."""
    keyed = distinct = sharing = adjacent_pairs = adjacent_same = related = chunks = 0
    reuse: list[float] = []
    for generated in per_doc:
        keys = [g["key"] for g in generated]
        chunks += len(keys)
        related += sum(len(g["related_keys"]) for g in generated)
        counts: dict[str, int] = {}
        for k in keys:
            if k:
                counts[k] = counts.get(k, 0) + 1
        doc_keyed = sum(counts.values())
        keyed += doc_keyed
        distinct += len(counts)
        sharing += sum(c for c in counts.values() if c > 1)
        if doc_keyed:
            reuse.append(1 - len(counts) / doc_keyed)
        for a, b in zip(keys, keys[1:]):
            if a and b:
                adjacent_pairs += 1
                adjacent_same += int(a == b)
    return {
        "keyed_chunks": keyed,
        "distinct_keys": distinct,
        "reuse_rate": round(sum(reuse) / len(reuse), 6) if reuse else 0.0,
        "chunks_sharing_key": sharing,
        "adjacent_pairs": adjacent_pairs,
        "adjacent_same_key_share": round(adjacent_same / adjacent_pairs, 6) if adjacent_pairs else 0.0,
        "related_keys_per_chunk": round(related / chunks, 6) if chunks else 0.0,
        "evictions": evictions,
    }


def build_llm_arm(
    study: Study,
    arm_name: str,
    arm_cfg: LlmArm,
    documents: Sequence[Document],
    header_chunks: Mapping[str, list[Chunk]],
    *,
    progress: bool = True,
    fresh: bool | None = None,
    replay: bool | None = None,
) -> LlmArmResult:
    """Build one LLM arm. `fresh` (default: env FRESH=1) ignores cached answers; `replay` (default:
    env REPLAY=1) answers only from the cache, for audits without the model."""
    kind = arm_cfg.kind
    if kind not in LLM_KINDS:
        raise HarnessError(f"arm {arm_name}: kind {kind!r} is not an LLM arm ({', '.join(LLM_KINDS)})")
    model_name = arm_cfg.model
    if model_name not in study.models:
        raise HarnessError(
            f"arm {arm_name}: model {model_name!r} is not defined under `models:` in {study.config_path}"
        )
    model_cfg = study.models[model_name]
    llm = study.config.llm
    workers = llm.workers
    seeds = [model_cfg.seed, *llm.retry_seeds]
    cap = llm.spend_cap_usd
    fresh = os.environ.get("FRESH") == "1" if fresh is None else fresh
    replay = os.environ.get("REPLAY") == "1" if replay is None else replay
    if fresh and replay:
        raise HarnessError(f"arm {arm_name}: FRESH=1 (regenerate) and REPLAY=1 (cache only) contradict each other")
    templates = {role: PromptTemplate.load(study.prompts_dir, f) for role, f in TEMPLATES[kind].items()}
    missing = [d.doc_id for d in documents if d.doc_id not in header_chunks]
    if missing:
        raise HarnessError(f"arm {arm_name}: no header-led chunks for {len(missing)} document(s), e.g. {missing[0]}")
    selected = select_documents(arm_name, arm_cfg, documents)

    with GenerationCache(generations_path(study, model_name), fresh=fresh) as cache:
        backend = make_backend(model_cfg, replay_from=cache if replay else None)
        ledger = SpendLedger(arm_name, None if cap is None else float(cap))
        retry = None if model_cfg.retry_temperature is None else {"temperature": float(model_cfg.retry_temperature)}
        session = LlmSession(backend, cache, ledger, retry_options=retry)
        if backend.serial:
            workers = 1
        outcomes = _run_documents(session, kind, templates, selected, header_chunks, seeds, workers, progress)
        identity = session.identity

    chunks: list[Chunk] = []
    for doc in selected:
        for chunk, generated in zip(header_chunks[doc.doc_id], outcomes[doc.doc_id].generated):
            chunks.append(render(kind, replace(chunk, generated=generated)))
    manifest = _manifest(arm_name, kind, model_name, identity, templates, selected, documents, outcomes, ledger, cache,
                         workers=workers)
    return LlmArmResult(chunks, manifest)


def _run_documents(
    session: LlmSession,
    kind: str,
    templates: Mapping[str, PromptTemplate],
    documents: Sequence[Document],
    header_chunks: Mapping[str, list[Chunk]],
    seeds: Sequence[int],
    workers: int,
    progress: bool,
) -> dict[str, DocumentOutcome]:
    def one(doc: Document) -> DocumentOutcome:
        chunks = header_chunks[doc.doc_id]
        if kind == "CR":
            return contextualise_document(session, templates["contextual"], doc, chunks, seeds=seeds)
        if kind == "PF":
            return pf_document(session, templates, chunks, seeds=seeds)
        return enrich_document(session, templates["enrich"], chunks, seeds=seeds, use_keys=kind == "E")

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(documents), desc=f"{kind} documents", unit="doc", leave=False)
    outcomes: dict[str, DocumentOutcome] = {}
    first_error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm-doc") as pool:
        futures = {pool.submit(one, doc): doc.doc_id for doc in documents}
        for future in as_completed(futures):
            try:
                outcomes[futures[future]] = future.result()
            except BaseException as e:  # noqa: BLE001 - re-raised below after the other workers stop
                session.stop.set()
                if first_error is None or isinstance(first_error, Cancelled):
                    first_error = e
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    if first_error is not None:
        raise first_error
    return outcomes


def _manifest(
    arm_name: str,
    kind: str,
    model_name: str,
    identity: Mapping[str, Any],
    templates: Mapping[str, PromptTemplate],
    selected: Sequence[Document],
    documents: Sequence[Document],
    outcomes: Mapping[str, DocumentOutcome],
    ledger: SpendLedger,
    cache: GenerationCache,
    *,
    workers: int,
) -> dict[str, Any]:
    ordered = [outcomes[d.doc_id] for d in selected]
    totals = ledger.totals().as_dict()
    # what generating the arm cost (same on a cache-warm rebuild) vs what this run did
    run = {k: totals.pop(k) for k in ("fresh_calls", "cache_hits")}
    cost = totals | {
        "failures": sum(o.failures for o in ordered),
        "failed_calls": sum(o.failed_calls for o in ordered),
        "retries": sum(o.retries for o in ordered),
        "truncated_prompts": sum(o.truncated for o in ordered),
    }
    manifest: dict[str, Any] = {
        "arm": arm_name,
        "kind": kind,
        "model": model_name,
        "backend": dict(identity),
        "prompts": {t.path.name: t.sha256 for t in templates.values()},
        "documents": len(selected),
        "documents_in_corpus": len(documents),
        "chunks": sum(len(o.generated) for o in ordered),
        "cost": cost,
        # workers actually used: a serial backend runs one document at a time whatever llm.workers says
        "run": run | {"cache_file": cache.path.name, "torn_bytes_dropped": cache.torn_bytes_dropped, "workers": workers},
    }
    if len(selected) < len(documents):
        manifest["document_ids"] = [d.doc_id for d in selected]
    if kind in ("E", "E-K"):
        manifest["keys"] = key_diagnostics([o.generated for o in ordered], sum(o.evictions for o in ordered))
    return manifest
