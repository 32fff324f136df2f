"""Builders of the add-on chunk sets that start from another arm's built chunks (`of:`), per paper section
4.6 and Appendix N.3: M (and E-K+M), its count-matched controls RM and SM, and M-TP.

Each reads the `of:` arm's chunk set (BuildInputs.read_arm), never re-derives it, and records in the
manifest's `addon` section what the report needs: merges per document, key reuse of the source, merged
chunks over 512 tokens, and for the controls the shortfall per document (reported, never silent).

RM is one chunk set per seed, stored together: every RM chunk carries its seed in `generated["variant"]`
(`s0`, `s1`, ...) and in its chunk id (`...@s0`), so score ranks each seed's set on its own and averages
each question's metric values over the seeds before any statistic sees them (harness.pipeline.score).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Sequence

from harness.arms.addon_descriptives import (
    key_reuse_rate, long_merged_share, mapping_outcomes, merges_per_document, shortfall_summary,
)
from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs
from harness.arms.consolidate import (
    OUTCOMES, consolidate_and_merge, key_list_text, keys_in_first_use_order, parse_mapping_answer,
)
from harness.arms.llm_session import open_session
from harness.arms.merge import TAU_MERGE, TAU_ORPHAN, by_document, merge_by_keys
from harness.arms.merge_controls import random_merges_over_seeds, rm_seeds, similarity_merges
from harness.arms.variants import tag_variant
from harness.config.arm_kinds import ArmKindSpec
from harness.config.retrievers import retriever_spec
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.study import Study


def variant_name(seed: int) -> str:
    return f"s{seed}"


def build_derived(merging, kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs) -> ArmChunks:
    """Run one of the mergings below (the registry names which) on the `of:` arm's chunks."""
    of = inputs.source
    if inputs.read_arm is None:
        raise HarnessError(f"arm `{inputs.arm}`: the build gave no way to read the chunk set of `of: {of}`")
    source = inputs.read_arm(of)
    chunks, addon = merging(kind, inputs, source)
    llm = addon.pop("llm", None)  # top level, where status reads an LLM arm's calls
    manifest = {"addon": {"of": of, "tau_merge": TAU_MERGE, "tau_orphan": TAU_ORPHAN, **addon}}
    return ArmChunks(chunks, manifest if llm is None else {**manifest, "llm": llm})


def merge_descriptives(
    source: Sequence[Chunk], merged: Sequence[Chunk], merges: dict[str, int]
) -> dict[str, Any]:
    return {
        "merges_per_document": asdict(merges_per_document(merges)),
        "merges_by_document": dict(merges),
        "source_key_reuse_rate": key_reuse_rate(source),
        "long_merged": asdict(long_merged_share(merged)),
    }


def key_merge(kind: ArmKindSpec, inputs: BuildInputs, source: list[Chunk]) -> tuple[list[Chunk], dict]:
    result = merge_by_keys(source)
    return result.chunks, merge_descriptives(source, result.chunks, result.merges)


def _control_record(
    target: dict[str, int], merges: dict[str, int], shortfall: dict[str, int]
) -> dict[str, Any]:
    return {
        "target_merges": sum(target.values()),
        "merges_per_document": asdict(merges_per_document(merges)),
        "merges_by_document": dict(merges),
        "shortfall": asdict(shortfall_summary(shortfall)),
    }


def random_merge(kind: ArmKindSpec, inputs: BuildInputs, source: list[Chunk]) -> tuple[list[Chunk], dict]:
    target = merge_by_keys(source).merges
    seeds = rm_seeds(0, inputs.arm_config.seeds)
    results = random_merges_over_seeds(source, target, seeds)
    per_seed = {s: by_document(results[s].chunks) for s in seeds}
    chunks = []
    for doc_id in by_document(source):  # document-major, so each document's chunks stay contiguous
        for s in seeds:
            chunks += [tag_variant(c, variant_name(s)) for c in per_seed[s].get(doc_id, [])]
    record = {
        "seeds": list(seeds),
        "chunks_per_seed": {variant_name(s): len(results[s].chunks) for s in seeds},
        "per_seed": {
            variant_name(s): _control_record(target, results[s].merges, results[s].shortfall) for s in seeds
        },
        "long_merged": asdict(long_merged_share(results[seeds[0]].chunks)),
    }
    return chunks, record


def similarity_merge(kind: ArmKindSpec, inputs: BuildInputs, source: list[Chunk]) -> tuple[list[Chunk], dict]:
    retriever_name = dense_retriever_for(inputs.study, inputs.arm, inputs.arm_config.embedder)
    if inputs.embed_chunks is None:
        raise HarnessError(
            f"arm `{inputs.arm}`: the build gave no way to embed chunks with `{retriever_name}` "
            "(harness.retrieval.chunk_vectors.chunk_embedder)"
        )
    embeddings = inputs.embed_chunks(retriever_name, source)
    target = merge_by_keys(source).merges
    result = similarity_merges(source, target, embeddings)
    record = {"embedder": retriever_name, **_control_record(target, result.merges, result.shortfall),
              "long_merged": asdict(long_merged_share(result.chunks))}
    return result.chunks, record


def dense_retriever_for(study: Study, arm: str, embedder: str) -> str:
    """The dense retriever `embedder:` names: a retriever name, or the model of exactly one dense
    retriever."""
    dense = {name: cfg for name, cfg in study.retrievers.items() if retriever_spec(cfg).embeds}
    if embedder in dense:
        return embedder
    by_model = [name for name, cfg in dense.items() if getattr(cfg, "model", None) == embedder]
    if len(by_model) == 1:
        return by_model[0]
    raise HarnessError(
        f"{study.config_path}: arms.{arm}.embedder: {embedder!r} names no single dense retriever "
        f"(dense retrievers: {', '.join(dense) or 'none'})"
    )


# --- M-TP ---

MAPPING_SCHEMA = {
    "type": "object",
    "properties": {"mapping": {"type": "array", "items": {
        "type": "object",
        "properties": {"key": {"type": "string"}, "canonical": {"type": "string"}},
        "required": ["key", "canonical"],
    }}},
    "required": ["mapping"],
}


def _mapping_or_none(parsed: Any) -> dict[str, Any] | None:
    return parsed if parse_mapping_answer(parsed) is not None else None


def consolidate_documents(session: Any, template: Any, source: Sequence[Chunk], seeds: Sequence[int]):
    """M-TP over a chunk set: one call per document with a key, in corpus order. Returns the chunks and
    the per-document records (merges, outcomes, attempts)."""
    chunks: list[Chunk] = []
    merges: dict[str, int] = {}
    outcomes = {}
    calls = 0
    for doc_id, doc_chunks in by_document(source).items():
        keys = keys_in_first_use_order(doc_chunks)
        answer = None
        if keys:  # a document with no key has nothing to consolidate: no call
            prompt = template.render({"key_list": key_list_text(keys)})
            answer = session.call_json(
                prompt, schema=MAPPING_SCHEMA, seeds=seeds, validate=_mapping_or_none
            ).value
            calls += 1
        merged, consolidation = consolidate_and_merge(doc_chunks, answer)
        chunks += merged
        merges[doc_id] = len(doc_chunks) - len(merged)
        outcomes[doc_id] = consolidation.outcomes
    return chunks, merges, outcomes, calls


def consolidated_merge(
    kind: ArmKindSpec, inputs: BuildInputs, source: list[Chunk]
) -> tuple[list[Chunk], dict]:
    study, arm_cfg = inputs.study, inputs.arm_config
    with open_session(study, inputs.arm, arm_cfg, kind, dataset=inputs.dataset,
                      fresh=inputs.fresh, replay=inputs.replay) as opened:
        chunks, merges, outcomes, calls = consolidate_documents(
            opened.session, opened.templates["consolidate"], source, opened.seeds)
        llm = opened.manifest(documents_called=calls)
    total = mapping_outcomes(outcomes.values())
    record = {
        **merge_descriptives(source, chunks, merges),
        "mapping_outcomes": {name: getattr(total, name) for name in OUTCOMES},
        "mapping_outcomes_by_document": {
            d: {n: getattr(o, n) for n in OUTCOMES} for d, o in outcomes.items()
        },
        "llm": llm,
    }
    return chunks, record
