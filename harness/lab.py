"""The chunking lab (docs/chunking-lab.md): every lab chunker under flat BM25 and chunk-graph retrieval on one
document.

Pure library code behind `harness lab`: chunk sets, rankings, assembled contexts and per-split recall.
QES chunkers get only the training split's evidence spans. Graph edges for resolved cross-references
are on for every chunker except "provisions-noref": switching resolution off also drops those edges. Recall
uses the harness's evidence rule
(metrics/qasper.py retrieved_flags) on the assembled source text: partial = some evidence string
retrieved, complete = every one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from statistics import fmean
from typing import Callable, Sequence

import numpy as np

from harness.arms.registry import BUILDERS
from harness.chunking.provisions import REF_PATTERN, reference_targets
from harness.chunking.qes import training_spans
from harness.chunking.sentences import LAB_L
from harness.data.model import Chunk, Document
from harness.data.question_evidence import SPLITS, LabQuestion
from harness.config.arm_kinds import lab_kinds
from harness.config.fields import Where, build
from harness.config.lab import NOVELTY
from harness.metrics.assembly import assemble
from harness.metrics.budget import TokenCache
from harness.metrics.ngrams import GramCache
from harness.metrics.qasper import gold_strings, retrieved_flags
from harness.retrieval.base import rank_by_score
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.graph import GraphParams, chunk_graph, graph_ranking
from harness.retrieval.lab_tokens import lab_tokens
from harness.tokens import words

LAB_BUDGET = 120
MODES = ("flat", "graph")


@dataclass(frozen=True)
class LabSettings:
    L: int = LAB_L
    budget: int = LAB_BUDGET
    unit: str = "words"
    overflow: str = "skip"
    novelty: float | None = NOVELTY
    graph: GraphParams = GraphParams()
    ref_pattern: str = REF_PATTERN


@dataclass(frozen=True)
class LabRow:
    chunker: str
    mode: str
    split: str
    chunks: int
    mean_chars: float
    questions: int
    partial: float
    complete: float
    mean_context_words: float


def lab_chunkers(settings: LabSettings) -> dict[str, Callable[[Document, list], list[Chunk]]]:
    """name -> fn(doc, training evidence spans): every lab kind of the arm registry with its config defaults
    (L and the reference pattern from `settings`), plus provisions without reference resolution (-noref).
    Only the QES chunkers read the training spans."""
    out: dict[str, Callable[[Document, list], list[Chunk]]] = {}
    for kind in lab_kinds():
        raw = {"kind": kind.name, "L": settings.L}
        variants = {kind.name: raw}
        if "resolve_refs" in kind.settings.__dataclass_fields__:
            raw["ref_pattern"] = settings.ref_pattern
            variants[f"{kind.name}-noref"] = {**raw, "resolve_refs": False}
        for name, values in variants.items():
            cfg = build(kind.settings, values, Where(None, ("lab", name)))
            out[name] = partial(_chunk, BUILDERS[kind.name].lab_chunker, cfg)
    return out


def _chunk(chunker, cfg, doc: Document, training: list) -> list[Chunk]:
    return chunker(cfg, doc, training)


def indexed(chunks: list[Chunk]) -> list[Chunk]:
    """Chunks without a rendered indexed text index their source text."""
    return [c if c.indexed_text else replace(c, indexed_text=c.text) for c in chunks]


def rankings(
    doc: Document, chunks: list[Chunk], queries: Sequence[str], settings: LabSettings, graph: GraphParams
) -> dict[str, list[np.ndarray]]:
    """mode -> one order (chunk positions, best first) per query."""
    index = BM25Retriever("lab-bm25", k1=1.2, b=0.75, tokenize=lab_tokens, tokens_label="lab").index(
        doc.doc_id, chunks
    )
    spans = [c.spans[0] for c in chunks]
    w = chunk_graph(
        [c.section_path for c in chunks],
        reference_targets(doc.text, spans, settings.ref_pattern),
        [frozenset(lab_tokens(c.text)) for c in chunks],
        graph,
    )
    out: dict[str, list[np.ndarray]] = {m: [] for m in MODES}
    for q in queries:
        base = index.scores(q)
        out["flat"].append(rank_by_score(base).order)
        out["graph"].append(graph_ranking(base, w, graph).order)
    return out


def run_lab(
    doc: Document, questions: Sequence[LabQuestion], settings: LabSettings = LabSettings()
) -> list[LabRow]:
    training = training_spans((q.split, q.spans) for q in questions)
    grams, tokens = GramCache(), TokenCache() if settings.unit == "tokens" else None
    golds = [gold_strings(q.question, grams) for q in questions]
    rows: list[LabRow] = []
    for name, chunker in lab_chunkers(settings).items():
        chunks = indexed(chunker(doc, training))
        mean_chars = fmean(len(c.text) for c in chunks) if chunks else 0.0
        graph = settings.graph.without("xref") if name == "provisions-noref" else settings.graph
        for mode, orders in rankings(
            doc, chunks, [q.question.query for q in questions], settings, graph
        ).items():
            per_split: dict[str, list[tuple[bool, bool, int]]] = {s: [] for s in SPLITS}
            for q, gold, order in zip(questions, golds, orders):
                picked = assemble(
                    (chunks[i] for i in order),
                    settings.budget,
                    unit=settings.unit,
                    overflow=settings.overflow,
                    novelty=settings.novelty,
                    tokens=tokens,
                )
                flags = retrieved_flags(gold, [grams.get(p.text) for p in picked])
                n_words = sum(len(words(p.text)) for p in picked)
                per_split[q.split].append((any(flags), all(flags), n_words))
            for split, results in per_split.items():
                n = len(results)
                rows.append(
                    LabRow(
                        name,
                        mode,
                        split,
                        len(chunks),
                        mean_chars,
                        n,
                        fmean(r[0] for r in results) if n else float("nan"),
                        fmean(r[1] for r in results) if n else float("nan"),
                        fmean(r[2] for r in results) if n else float("nan"),
                    )
                )
    return rows
