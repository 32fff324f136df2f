"""Chunk-set diagnostics the manifests do not record: token mean and 95th percentile, share of chunks over
each budget (measured in the study's budget unit, tokens or words), and the share of located gold evidence
that no single chunk holds whole."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.data.model import Chunk, Question
from harness.metrics.assembly import size_in_unit
from harness.tokens import count_tokens


@dataclass(frozen=True)
class ChunkSetStats:
    chunks: int
    mean_tokens: float
    p95_tokens: float
    unit: str  # the budget unit of share_over: "tokens" (cl100k) or "words"
    share_over: dict[int, float]  # budget -> share of chunks longer than it, in `unit`
    evidence_located: int
    evidence_spanning: int  # located evidence that no single chunk covers whole

    @property
    def share_spanning(self) -> float | None:
        return self.evidence_spanning / self.evidence_located if self.evidence_located else None


def chunk_set_stats(chunks: list[Chunk], questions: tuple[Question, ...], budgets: list[int],
                    unit: str = "tokens") -> ChunkSetStats:
    # count_tokens remembers counts per paragraph: a report's chunk sets share most of their paragraphs
    tokens = np.array([count_tokens(c.text) for c in chunks], dtype=float)
    sizes = (
        tokens if unit == "tokens" else np.array([size_in_unit(c.text, unit) for c in chunks], dtype=float)
    )
    covers = _coverage_by_doc(chunks)
    located = [e for q in questions for e in q.evidence if e.located]
    spanning = sum(not _held_whole(covers.get(e.doc_id, []), e.start, e.end) for e in located)
    return ChunkSetStats(
        chunks=len(chunks),
        mean_tokens=float(tokens.mean()) if len(tokens) else 0.0,
        # 'higher' keeps the percentile an observed chunk length
        p95_tokens=float(np.percentile(tokens, 95, method="higher")) if len(tokens) else 0.0,
        unit=unit,
        share_over={b: float((sizes > b).mean()) if len(sizes) else 0.0 for b in budgets},
        evidence_located=len(located),
        evidence_spanning=spanning,
    )


def _coverage_by_doc(chunks: list[Chunk]) -> dict[str, list[tuple[int, int]]]:
    """Per document, each chunk's spans merged where they touch (a chunk may hold several pieces)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        merged: list[list[int]] = []
        for s, e in sorted(c.spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        out.setdefault(c.doc_id, []).extend((s, e) for s, e in merged)
    return out


def _held_whole(intervals: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in intervals)
