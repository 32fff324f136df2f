"""`build-arms`: every chunk set of the grid (dataset x arm, harness.grid.cells) into results/chunks/,
each with the builder attached to its kind (harness.arms.registry).

Each arm is written atomically as <arm>.jsonl plus <arm>.manifest.json. The manifest carries an
`inputs_hash` over everything the chunk set depends on (arm config, chunking parameters, model config,
the documents' text hashes); `score` recomputes it and refuses a chunk set built from other inputs.
An arm whose chunk file exists with a matching inputs_hash is skipped, so an interrupted build resumes;
under `fresh` or `replay` (passed down from the CLI) LLM arms are rebuilt even when up to date.
"""

from __future__ import annotations

import bisect
import functools
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from harness.arms.builder import BuildInputs
from harness.arms.lab_arms import training_record
from harness.grid.arms import arm_kind, buildable_arm_kind, source_arm
from harness.arms.model_limits import effective_model_config
from harness.arms.plugin_arms import unlocated_warning
from harness.arms.registry import build_chunks
from harness.chunking import chunk_document, params_from_config
from harness.chunking.blocks import parse_blocks
from harness.config import to_plain
from harness.config.arm_kinds import is_planned
from harness.data.load import LoadedDataset, load_dataset, loss_summary, lost_counts, read_selection
from harness.data.model import Chunk, Document
from harness.errors import HarnessError
from harness.files import (
    atomic_write_json,
    atomic_write_jsonl,
    canonical_json,
    iter_jsonl,
    read_json,
    sha256_text,
)
from harness.grid.cells import ArmSpec, arm_spec, chunk_sets
from harness.study import Study
from harness.tokens import count_tokens
from harness.grid.paths import chunk_manifest_path, chunks_path


def inputs_hash(study: Study, dataset: LoadedDataset, arm: ArmSpec) -> str:
    """What a chunk set depends on; identical inputs give an identical hash."""
    cfg, kind = arm.config, arm.kind
    record = {
        "arm": arm.name,
        "arm_config": to_plain(cfg),
        "chunking": to_plain(study.chunking),
        "tokenizer": study.config.tokenizer,
        "model": _model_record(study, dataset.name, arm.name, cfg),
        "documents": [[d.doc_id, sha256_text(d.text)] for d in dataset.documents],
    }
    if kind.trains_on_questions:  # only the training split's evidence, never held-out questions
        record["training"] = training_record(arm.name, dataset.questions)
    if kind.derived:  # built from another arm's chunks: those inputs move it too
        # recorded under `of` when the config names the source, under `source` when the kind defaults it
        record["of" if kind.of_kind is None else "source"] = inputs_hash(
            study, dataset, arm_spec(study, source_arm(study, arm.name, dataset.name)))
        embedder = getattr(cfg, "embedder", None)
        if embedder is not None:
            record["embedders"] = to_plain(
                study.retrievers
            )  # SM's embedding model (resolved by name or model)
    return sha256_text(canonical_json(record))


def _model_record(study: Study, dataset: str, arm: str, cfg: Any) -> dict | None:
    """The model an arm is built with on this dataset (its model_options applied)."""
    model = getattr(cfg, "model", None)
    if model is None or model not in study.models:
        return None
    record = to_plain(effective_model_config(arm, cfg, study.models[model], dataset, study.config.datasets))
    # which servers serve the model cannot change an answer (harness.llm.pool): not an input
    return {k: v for k, v in record.items() if k not in ("hosts", "failover")}


def _token_lengths(chunks: Sequence[Chunk]) -> list[int]:
    # counted per paragraph and remembered: most chunk sets of a dataset share most of their paragraphs
    return [count_tokens(c.text) for c in chunks]


def _spans_sections(doc_headers: Mapping[str, list[int]], chunk: Chunk) -> bool:
    """A chunk spans two sections when a header starts inside it after its first character."""
    start, end = chunk.spans[0][0], chunk.spans[-1][1]
    starts = doc_headers.get(chunk.doc_id, ())  # in document order (header_starts)
    after = bisect.bisect_right(starts, start)  # the first header starting after the chunk's first character
    return after < len(starts) and starts[after] < end


def length_stats(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"median": 0, "mean": 0.0, "p90": 0, "max": 0}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * (len(ordered) - 1) + 0.5))]
    return {
        "median": statistics.median(ordered),
        "mean": round(statistics.fmean(ordered), 3),
        "p90": p90,
        "max": ordered[-1],
    }


def header_starts(documents: Sequence[Document]) -> dict[str, list[int]]:
    """Where each document's headers start, by doc_id (chunk_set_manifest's sections)."""
    return {d.doc_id: [b.start for b in parse_blocks(d.text) if b.kind == "header"] for d in documents}


def chunk_set_manifest(dataset: LoadedDataset, chunks: Sequence[Chunk],
                       headers: Mapping[str, list[int]]) -> dict[str, Any]:
    """`headers`: header_starts of the dataset's documents, parsed once for all its chunk sets."""
    tokens = _token_lengths(chunks)
    docs_with_chunks = {c.doc_id for c in chunks}
    return {
        "chunks": len(chunks),
        "length_chars": length_stats([len(c.text) for c in chunks]),
        "length_tokens": length_stats(tokens),
        "chunks_over_512_tokens": sum(t > 512 for t in tokens),
        "chunks_spanning_sections": sum(_spans_sections(headers, c) for c in chunks),
        "documents": len(dataset.documents),
        "documents_without_chunks": sorted(
            d.doc_id for d in dataset.documents if d.doc_id not in docs_with_chunks
        ),
        "questions": len(dataset.questions),
        "dataset_counts": dict(sorted(dataset.counts.items())),
    }


@dataclass(frozen=True)
class ArmBuild:
    dataset: str
    arm: str
    chunks: int
    skipped: bool  # already built from the same inputs


def header_led_chunks(study: Study, documents: Sequence[Document]) -> dict[str, list[Chunk]]:
    params = params_from_config("header-led", study.chunking)
    return {d.doc_id: chunk_document("header-led", d, **params) for d in documents}


def build_dataset_arms(
    study: Study,
    dataset: LoadedDataset,
    arms: Sequence[str],
    *,
    frozen_hash: str | None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    fresh: bool = False,
    replay: bool = False,
    warn: Callable[[str], None] | None = None,
    embed_chunks: Callable[[str, Sequence[Chunk]], Any] | None = None,
) -> list[ArmBuild]:
    """`fresh` / `replay`: the LLM arms' cache mode (see harness.arms.llm_arms.build_llm_arm); `warn`
    (default:
    `log`) gets a line for each LLM arm whose calls failed; `embed_chunks`: BuildInputs.embed_chunks."""
    cache: dict[str, dict[str, list[Chunk]]] = {}

    def header() -> dict[str, list[Chunk]]:
        if "h" not in cache:
            cache["h"] = header_led_chunks(study, dataset.documents)
        return cache["h"]

    @functools.cache  # every chunk set of the dataset counts its chunks spanning sections on the same headers
    def sections() -> dict[str, list[int]]:
        return header_starts(dataset.documents)

    # BuildInputs hands builders arm names (harness.arms.builder); resolved here, at the stage's edge
    def read_arm(of: str) -> list[Chunk]:
        return read_source_chunk_set(study, dataset, arm_spec(study, of), frozen_hash=frozen_hash)

    def arm_inputs_hash(arm: str) -> str:
        return inputs_hash(study, dataset, arm_spec(study, arm))

    built = []
    for arm in sources_first(study, dataset.name, arms):
        kind, spec = buildable_arm_kind(study, arm), arm_spec(study, arm)
        path, mpath = chunks_path(study, dataset.name, arm), chunk_manifest_path(study, dataset.name, arm)
        h = inputs_hash(study, dataset, spec)
        # an explicit fresh or replay run re-derives the LLM arms: regenerate, or check the cache answers all
        if path.is_file() and mpath.is_file() and not (kind.needs_model and (fresh or replay)):
            old = read_json(mpath)
            if old.get("inputs_hash") == h and old.get("frozen_config_hash") == frozen_hash:
                built.append(ArmBuild(dataset.name, arm, int(old["chunk_set"]["chunks"]), True))
                log(f"{dataset.name}/{arm}: up to date ({old['chunk_set']['chunks']} chunks)")
                continue
        built_set = build_chunks(kind, BuildInputs(
            dataset.documents, study.chunking, header, study=study, arm=arm, arm_config=spec.config,
            progress=progress, dataset=dataset.name, fresh=fresh, replay=replay, questions=dataset.questions,
            source=source_arm(study, arm, dataset.name) if kind.derived else None, read_arm=read_arm,
            arm_inputs_hash=arm_inputs_hash, embed_chunks=embed_chunks,
        ))
        chunks, extra = built_set.chunks, built_set.manifest
        ids = [c.chunk_id for c in chunks]
        if len(set(ids)) != len(ids):
            raise HarnessError(f"{dataset.name}/{arm}: duplicate chunk_id in the built chunk set")
        manifest = {
            "dataset": dataset.name,
            "arm": arm,
            "kind": kind.name,
            "arm_config": to_plain(spec.config),
            "inputs_hash": h,
            "frozen_config_hash": frozen_hash,
            "chunk_set": chunk_set_manifest(dataset, chunks, sections()),
            **extra,
        }
        atomic_write_jsonl(path, (c.to_json() for c in chunks))
        atomic_write_json(mpath, manifest)
        built.append(ArmBuild(dataset.name, arm, len(chunks), False))
        log(f"{dataset.name}/{arm}: {len(chunks)} chunks -> {path.relative_to(study.root)}")
        label = f"{dataset.name}/{arm}"
        for warning in (llm_failures(label, extra), unlocated_warning(label, extra)):
            if warning:
                (warn or log)(warning)
    return built


def llm_failures(label: str, manifest: Mapping[str, Any]) -> str | None:
    """A warning line when an LLM arm's calls failed (its chunks keep empty generated fields), else None;
    read from the arm's manifest record (harness.arms.llm_arms), the same numbers the report shows."""
    llm = manifest.get("llm")
    cost = llm.get("cost", {}) if isinstance(llm, Mapping) else {}
    if not cost.get("failures"):
        return None
    return (
        f"warning: {label}: {cost['failures']} of {llm.get('chunks', '?')} chunks have no generated fields: "
        f"{cost.get('failed_calls', 0)} LLM call(s) never gave valid JSON after {cost.get('retries', 0)} "
        "retries (llm_failed in the chunk set; see its manifest's llm.cost)"
    )


def sources_first(study: Study, dataset: str, arms: Sequence[str]) -> list[str]:
    """The arms in config order, except that an arm built from another (`of:`) comes after it."""
    out: list[str] = []

    def visit(arm: str, path: tuple[str, ...]) -> None:
        if arm in out:
            return
        if arm in path:
            raise HarnessError(
                f"{study.config_path}: arms built from each other in a cycle: {' -> '.join(path + (arm,))}"
            )
        if arm_kind(study, arm).derived:
            of = source_arm(study, arm, dataset)
            if of in arms:
                visit(of, path + (arm,))
        out.append(arm)

    for arm in arms:
        visit(arm, ())
    return out


def read_source_chunk_set(study: Study, dataset: LoadedDataset, arm: ArmSpec, *,
                          frozen_hash: str | None) -> list[Chunk]:
    """The built chunk set another arm starts from; a missing one is an error naming the target to run."""
    path = chunks_path(study, dataset.name, arm.name)
    if not path.is_file():
        raise HarnessError(
            f"{dataset.name}/{arm}: chunk set not built ({path}), and arms built from it "
            f"need it first: run `make build-arms STUDY={study.root}` (or `harness build-arms --arm {arm}`)"
        )
    return read_chunk_set(study, dataset, arm, frozen_hash=frozen_hash)


def build_arms(
    study: Study, *, datasets: Sequence[str] | None = None, arms: Sequence[str] | None = None,
    frozen_hash: str | None, progress: bool = True, log: Callable[[str], None] = print,
    fresh: bool = False, replay: bool = False, warn: Callable[[str], None] | None = None,
    embed_chunks: Callable[[str, Sequence[Chunk]], Any] | None = None,
) -> list[ArmBuild]:
    """`warn` (default: `log`) gets the lines naming data lost on loading and LLM calls that failed;
    `embed_chunks`: what an SM arm needs from ranking (BuildInputs.embed_chunks)."""
    names = list(datasets or study.config.datasets)
    if arms:
        arm_names = list(arms)
    else:  # every buildable arm; declared-only arms wait for their builders
        arm_names = [a for a, cfg in study.arms.items() if not is_planned(cfg)]
        skipped = [a for a in study.arms if a not in arm_names]
        if skipped:
            log(f"not built (declared for the plan, no builder yet): {', '.join(skipped)}")
    for a in arm_names:
        buildable_arm_kind(study, a)  # fail on an unknown or unbuildable arm before any work
    selection = read_selection(study)
    todo = [cs for cs in chunk_sets(study) if cs.arm.name in arm_names]
    out, losses = [], []
    for name in names:
        dataset = load_dataset(study, name, selection=selection)
        losses.append((loss_summary(name, dataset.counts), bool(lost_counts(dataset.counts))))
        applicable = [cs.arm.name for cs in todo if cs.dataset.name == name]
        out += build_dataset_arms(
            study, dataset, applicable, frozen_hash=frozen_hash, progress=progress, log=log, fresh=fresh,
            replay=replay, warn=warn, embed_chunks=embed_chunks,
        )
    for line, lost in losses:
        ((warn or log) if lost else log)(line)
    return out


def read_chunk_set(study: Study, dataset: LoadedDataset, arm: ArmSpec, *,
                   frozen_hash: str | None) -> list[Chunk]:
    """A built chunk set (the resolved arm's on the loaded dataset), refused when its manifest does not match
    the current inputs."""
    names = dataset.name, arm.name
    path, mpath = chunks_path(study, *names), chunk_manifest_path(study, *names)
    if not path.is_file() or not mpath.is_file():
        raise HarnessError(
            f"{dataset.name}/{arm}: chunk set not built ({path}); run `harness build-arms` first"
        )
    manifest = read_json(mpath)
    if manifest.get("inputs_hash") != inputs_hash(study, dataset, arm):
        raise HarnessError(
            f"{mpath}: this chunk set was built from other inputs than the current config and documents; "
            "rebuild it with `harness build-arms`"
        )
    if manifest.get("frozen_config_hash") != frozen_hash:
        raise HarnessError(
            f"{mpath}: built under frozen config {manifest.get('frozen_config_hash')}, current is "
            f"{frozen_hash}; "
            "rebuild it with `harness build-arms`"
        )
    return [Chunk.from_json(r) for r in iter_jsonl(path)]
