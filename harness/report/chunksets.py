"""Chunk-set diagnostics the manifests do not record: token mean and 95th percentile, share of chunks over
each budget (measured in the study's budget unit, tokens or words), and the share of located gold evidence
that no single chunk holds whole; and chunk health: chunks cut mid-sentence and Markdown tables split across
chunks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import re
from collections.abc import Sequence

from harness.data.model import Chunk, Document, Question
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
    cut_mid_sentence: int = 0  # chunks ending inside a line, not after a sentence end (CUT_RULE)
    tables: int = 0  # Markdown pipe tables in the documents
    tables_split: int = 0  # of them, those a chunk boundary falls inside

    @property
    def share_spanning(self) -> float | None:
        return self.evidence_spanning / self.evidence_located if self.evidence_located else None


def chunk_set_stats(chunks: list[Chunk], questions: tuple[Question, ...], budgets: list[int],
                    unit: str = "tokens", documents: Sequence[Document] = ()) -> ChunkSetStats:
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
        **chunk_health(chunks, documents),
    )


# a chunk is cut mid-sentence when its last span ends inside a line of its document, not right after a
# sentence end (. ! or ?, optionally closed by a quote or bracket) and not at the document's end
SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
TABLE_ROW = re.compile(r"^[ \t]*\|.*$", re.M)


def chunk_health(chunks: Sequence[Chunk], documents: Sequence[Document]) -> dict[str, int]:
    """Chunks cut mid-sentence, and pipe tables (two or more consecutive `|` lines) a chunk boundary falls
    inside, over the documents given (none: zeros)."""
    texts = {d.doc_id: d.text for d in documents}
    cut, boundaries = 0, {}
    for c in chunks:
        text = texts.get(c.doc_id)
        if text is None or not c.spans:
            continue
        end = max(e for _, e in c.spans)
        for s, e in c.spans:
            boundaries.setdefault(c.doc_id, set()).update((s, e))
        inside_line = 0 < end < len(text) and text[end - 1] != "\n" and text[end] != "\n"
        if inside_line and text[end:].strip() and not SENTENCE_END.search(text[:end].rstrip()):
            cut += 1
    tables = split = 0
    for doc_id, text in sorted(texts.items()):
        for start, end in _table_blocks(text):
            tables += 1
            split += any(start < b < end for b in boundaries.get(doc_id, ()))
    return {"cut_mid_sentence": cut, "tables": tables, "tables_split": split}


def _table_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of two or more consecutive pipe-table lines."""
    blocks: list[list[int]] = []
    for m in TABLE_ROW.finditer(text):
        if blocks and text[blocks[-1][1]:m.start()] == "\n":
            blocks[-1][1] = m.end()
            blocks[-1][2] += 1
        else:
            blocks.append([m.start(), m.end(), 1])
    return [(s, e) for s, e, rows in blocks if rows >= 2]


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
