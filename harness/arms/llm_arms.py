"""Entry point for the paid arms (E, E-K, CR, PF and their re-pointed twins such as Es, CRs).

An arm with `allow_shortfall: true` (the scaling arm on a seeded sample, run on a limited quota) that
reaches the spend cap keeps the documents that completed and records the shortfall in its manifest;
the plan's subset with `allow_shortfall` then restricts its contrasts to the completed clusters.

Documents run concurrently (llm.workers; one at a time for an in-process backend, Backend.serial; at
least one per slot for a pool of servers, harness.llm.pool), each document's chunks in order. The first
stopping error
(model missing, auth, server gone, spend cap, replay miss) stops every worker before its next fresh
call; everything already answered is in the generation cache, so a rerun resumes there.

The run mode is an argument, never read from the environment here: `fresh` ignores cached answers (new
ones are appended), `replay` answers only from the cache and leaves it untouched. The CLI
(harness/cli/build_arms.py) reads --fresh / --replay and FRESH=1 / REPLAY=1 and passes them down.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs, Render
from harness.arms.contextual import contextualise_document
from harness.arms.enrich import DocumentOutcome, enrich_document, pf_document
from harness.grid.arms import arm_prompt_files
from harness.arms.model_limits import effective_model_config
from harness.arms.repeats import repeat_count, repeat_seeds, repeat_variant
from harness.arms.variants import tag_variant
from harness.config.arm_kinds import CONTEXTUAL, ENRICH, ENRICH_WITHOUT_KEYS, PER_FIELD, ArmKindSpec, get_kind
from harness.config.arms import ALL_DOCUMENTS, LlmArm, documents_of
from harness.data.model import Chunk, Document
from harness.errors import HarnessError
from harness.llm.cache import GenerationCache
from harness.llm.base import SpendCapReached
from harness.llm.ledger import SpendLedger, study_spend_usd
from harness.llm.prompts import PromptTemplate
from harness.llm.registry import make_backend
from harness.llm.session import Cancelled, LlmSession
from harness.seeded_draw import seeded_sample
from harness.study import Study
from harness.grid.paths import generations_path

@dataclass(frozen=True)
class LlmArmResult:
    chunks: list[Chunk]  # corpus order, `generated` filled, `indexed_text` rendered
    manifest: dict[str, Any]



def select_documents(arm_name: str, arm_cfg: LlmArm, documents: Sequence[Document]) -> list[Document]:
    """PF may run on a seeded subset (`documents: N`, `seed: S`, checked by the schema); order stays the
    corpus order."""
    n = documents_of(arm_cfg)  # derived arms (M-TP) run on every document of their source
    if n == ALL_DOCUMENTS:
        return list(documents)
    chosen = set(seeded_sample((d.doc_id for d in documents), min(n, len(documents)), arm_cfg.seed))
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
    render: Render,
    progress: bool = True,
    fresh: bool = False,
    replay: bool = False,
    dataset: str | None = None,
) -> LlmArmResult:
    """Build one LLM arm, its chunks rendered by `render` (the kind's, harness.arms.registry). `fresh` ignores
    cached answers (and appends new ones); `replay` answers only from the cache, for audits without the
    model, and never writes to it."""
    spec = get_kind(arm_cfg.kind)
    if not spec.implemented or not spec.needs_model:
        raise HarnessError(f"arm {arm_name}: kind {arm_cfg.kind!r} is not a buildable LLM arm")
    model_name = arm_cfg.model
    if model_name not in study.models:
        raise HarnessError(
            f"arm {arm_name}: model {model_name!r} is not defined under `models:` in {study.config_path}"
        )
    # the arm's own limits for this dataset (model_options) on top of the model's options
    model_cfg = effective_model_config(
        arm_name, arm_cfg, study.models[model_name], dataset, study.config.datasets
    )
    llm = study.config.llm
    workers = llm.workers
    seeds = [model_cfg.seed, *llm.retry_seeds]
    cap = llm.spend_cap_usd
    if fresh and replay:
        raise HarnessError(
            f"arm {arm_name}: fresh (regenerate) and replay (cache only) contradict each other"
        )
    templates = arm_templates(study, arm_name)
    missing = [d.doc_id for d in documents if d.doc_id not in header_chunks]
    if missing:
        raise HarnessError(
            f"arm {arm_name}: no header-led chunks for {len(missing)} document(s), e.g. {missing[0]}"
        )
    selected = select_documents(arm_name, arm_cfg, documents)

    with GenerationCache(generations_path(study, model_name), fresh=fresh, read_only=replay) as cache:
        backend = make_backend(model_cfg, replay_from=cache if replay else None)
        # the cap is study-wide: what every arm has paid so far counts against it
        spent_before = study_spend_usd(generations_path(study, model_name).parent)
        ledger = SpendLedger(arm_name, None if cap is None else float(cap), spent_before_usd=spent_before)
        retry = (
            None
            if model_cfg.retry_temperature is None
            else {"temperature": float(model_cfg.retry_temperature)}
        )
        session = LlmSession(backend, cache, ledger, retry_options=retry)
        if backend.serial:
            workers = 1
        servers = getattr(backend, "capacity", None)  # a pool (harness.llm.pool): one worker per slot
        if servers is not None:
            workers = max(workers, servers)
        runs = []  # one per generation run (repeats), each with its seeds and its own call counts
        for repeat in range(repeat_count(arm_cfg)):
            before = ledger.totals()
            run_seeds = repeat_seeds(seeds, repeat)
            outcomes, stopped_by = _run_documents(
                session.for_repeat(repeat),
                spec,
                templates,
                selected,
                header_chunks,
                run_seeds,
                workers,
                progress,
                allow_shortfall=arm_cfg.allow_shortfall,
            )
            runs.append(_Run(repeat, run_seeds, outcomes, _totals_since(ledger, before)))
        identity = session.identity
        pool_servers = backend.describe_servers() if hasattr(backend, "describe_servers") else None
    shortfall = None
    if stopped_by is not None:  # only with allow_shortfall (never with repeats): keep the completed documents
        planned = selected
        selected = [d for d in planned if d.doc_id in outcomes]
        shortfall = {"planned_documents": len(planned), "completed_documents": len(selected),
                     "missing_document_ids": [d.doc_id for d in planned if d.doc_id not in outcomes],
                     "stopped_by": stopped_by}

    chunks: list[Chunk] = []
    for doc in selected:  # document-major; a repeated arm holds each repeat's chunks as one variant
        for run in runs:
            for chunk, generated in zip(header_chunks[doc.doc_id], run.outcomes[doc.doc_id].generated):
                rendered = render(replace(chunk, generated=generated))
                chunks.append(
                    tag_variant(rendered, repeat_variant(run.repeat)) if len(runs) > 1 else rendered
                )
    manifest = _manifest(
        arm_name,
        spec,
        model_name,
        identity,
        templates,
        selected,
        documents,
        runs,
        ledger,
        cache,
        workers=workers,
    )
    if pool_servers is not None:  # which servers answered: run facts, not inputs (no cache key holds them)
        manifest["run"]["servers"] = pool_servers
    if shortfall is not None:
        manifest["shortfall"] = shortfall
    return LlmArmResult(chunks, manifest)


def build_llm_kind(kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs) -> ArmChunks:
    """The builder of the LLM kinds (harness.arms.registry)."""
    result = build_llm_arm(
        inputs.study,
        inputs.arm,
        inputs.arm_config,
        inputs.documents,
        inputs.header_chunks(),
        render=builder.render,
        progress=inputs.progress,
        dataset=inputs.dataset,
        fresh=inputs.fresh,
        replay=inputs.replay,
    )
    return ArmChunks(result.chunks, {"llm": result.manifest})


@dataclass(frozen=True)
class _Run:
    """One generation run of an arm (repeat 0 is the arm as configured; harness.arms.repeats)."""

    repeat: int
    seeds: list[int]
    outcomes: dict[str, DocumentOutcome]
    calls: dict[str, Any]  # this run's ledger counts (calls, fresh_calls, cache_hits, tokens, cost)


def _totals_since(ledger: SpendLedger, before: Any) -> dict[str, Any]:
    after = ledger.totals()
    return {"calls": after.calls - before.calls, "fresh_calls": after.fresh_calls - before.fresh_calls,
            "cache_hits": after.cache_hits - before.cache_hits,
            "prompt_tokens": after.prompt_tokens - before.prompt_tokens,
            "completion_tokens": after.completion_tokens - before.completion_tokens,
            "cost_usd": round(after.cost_usd - before.cost_usd, 6)}


def arm_templates(study: Study, arm: str) -> dict[str, PromptTemplate]:
    """The arm's prompt templates by role: its kind's, with the arm's `prompts:` overrides (checked)."""
    return {
        role: PromptTemplate.load(study.prompts_dir, f) for role, f in arm_prompt_files(study, arm).items()
    }


def annotate_document(session: Any, kind: ArmKindSpec, templates: Mapping[str, PromptTemplate], doc: Document,
                      chunks: Sequence[Chunk], seeds: Sequence[int]) -> DocumentOutcome:
    """One document's calls for an LLM kind, in chunk order (`harness estimate` drives it with a counter)."""
    if kind.annotation == CONTEXTUAL:
        return contextualise_document(session, templates["contextual"], doc, chunks, seeds=seeds)
    if kind.annotation == PER_FIELD:
        return pf_document(session, templates, chunks, seeds=seeds)
    return enrich_document(
        session, templates["enrich"], chunks, seeds=seeds, use_keys=kind.annotation == ENRICH
    )


def _run_documents(
    session: LlmSession,
    kind: ArmKindSpec,
    templates: Mapping[str, PromptTemplate],
    documents: Sequence[Document],
    header_chunks: Mapping[str, list[Chunk]],
    seeds: Sequence[int],
    workers: int,
    progress: bool,
    *,
    allow_shortfall: bool = False,
) -> tuple[dict[str, DocumentOutcome], str | None]:
    """Outcomes per document, and (only when `allow_shortfall`) the spend-cap message that stopped the run
    early; the completed documents are then kept. Any other error, or a cap without allow_shortfall,
    raises."""
    def one(doc: Document) -> DocumentOutcome:
        return annotate_document(session, kind, templates, doc, header_chunks[doc.doc_id], seeds)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(documents), desc=f"{kind.name} documents", unit="doc", leave=False)
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
        if allow_shortfall and isinstance(first_error, SpendCapReached):
            return outcomes, str(first_error)
        raise first_error
    return outcomes, None


def _manifest(
    arm_name: str,
    kind: ArmKindSpec,
    model_name: str,
    identity: Mapping[str, Any],
    templates: Mapping[str, PromptTemplate],
    selected: Sequence[Document],
    documents: Sequence[Document],
    runs: Sequence[_Run],
    ledger: SpendLedger,
    cache: GenerationCache,
    *,
    workers: int,
) -> dict[str, Any]:
    ordered = [run.outcomes[d.doc_id] for run in runs for d in selected]  # every run's calls count
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
        "kind": kind.name,
        "model": model_name,
        "backend": dict(identity),
        "prompts": {t.path.name: t.sha256 for t in templates.values()},
        "prompt_roles": {role: t.path.name for role, t in templates.items()},
        "documents": len(selected),
        "documents_in_corpus": len(documents),
        "chunks": sum(len(o.generated) for o in ordered),
        "seeds": runs[0].seeds,
        "cost": cost,
        # workers actually used: a serial backend runs one document at a time whatever llm.workers says
        "run": run
        | {"cache_file": cache.path.name, "torn_bytes_dropped": cache.torn_bytes_dropped, "workers": workers},
    }
    if len(selected) < len(documents):
        manifest["document_ids"] = [d.doc_id for d in selected]
    if kind.annotation in (ENRICH, ENRICH_WITHOUT_KEYS):
        first = [runs[0].outcomes[d.doc_id] for d in selected]  # repeat 0, the arm as configured
        manifest["keys"] = key_diagnostics([o.generated for o in first], sum(o.evictions for o in first))
    if len(runs) > 1:  # repeats: each run's seeds, calls and failures; the totals above sum over runs
        manifest["repeats"] = len(runs)
        manifest["per_repeat"] = {
            repeat_variant(run.repeat): _run_record(kind, run, selected) for run in runs
        }
    return manifest


def _run_record(kind: ArmKindSpec, run: _Run, selected: Sequence[Document]) -> dict[str, Any]:
    ordered = [run.outcomes[d.doc_id] for d in selected]
    record = {
        "repeat": run.repeat,
        "seeds": run.seeds,
        "calls": run.calls,
        "chunks": sum(len(o.generated) for o in ordered),
        "failures": sum(o.failures for o in ordered),
        "failed_calls": sum(o.failed_calls for o in ordered),
        "retries": sum(o.retries for o in ordered),
    }
    if kind.annotation in (ENRICH, ENRICH_WITHOUT_KEYS):
        record["keys"] = key_diagnostics([o.generated for o in ordered], sum(o.evictions for o in ordered))
    return record
