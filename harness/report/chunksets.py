"""Chunk-set diagnostics the manifests do not record: token mean and 95th percentile, share of chunks over
each budget (measured in the study's budget unit, tokens or words), and the share of located gold evidence
that no single chunk holds whole; and chunk health: chunks cut mid-sentence and Markdown tables split across
chunks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import re
from collections.abc import Mapping, Sequence

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
                    unit: str = "tokens", documents: Sequence[Document] = (),
                    tables: Mapping[str, list[tuple[int, int]]] | None = None) -> ChunkSetStats:
    """`tables`: document_tables(documents), when the caller measures several chunk sets of them."""
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
        **chunk_health(chunks, documents, tables),
    )


# a chunk is cut mid-sentence when its last span ends inside a line of its document, not right after a
# sentence end (one of SENTENCE_MARKS, optionally closed by CLOSING_MARKS, then only whitespace) and not
# at the document's end
SENTENCE_MARKS, CLOSING_MARKS = ".!?", "\"')]"
TABLE_ROW = re.compile(r"^[ \t]*\|.*$", re.M)


def chunk_health(chunks: Sequence[Chunk], documents: Sequence[Document],
                 tables: Mapping[str, list[tuple[int, int]]] | None = None) -> dict[str, int]:
    """Chunks cut mid-sentence, and pipe tables (two or more consecutive `|` lines) a chunk boundary falls
    inside, over the documents given (none: zeros). `tables`: document_tables(documents), if measured."""
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
        if inside_line and not _only_space_after(text, end) and not ends_sentence(text, end):
            cut += 1
    tables = document_tables(documents) if tables is None else tables
    found = split = 0
    for doc_id in sorted(texts):
        for start, end in tables.get(doc_id, ()):
            found += 1
            split += any(start < b < end for b in boundaries.get(doc_id, ()))
    return {"cut_mid_sentence": cut, "tables": found, "tables_split": split}


def ends_sentence(text: str, end: int) -> bool:
    """Whether text[:end] ends a sentence, trailing whitespace aside. Read back from `end` over the
    whitespace and closing marks only: a chunk set asks once per chunk, and its document may be long."""
    i = end
    while i > 0 and text[i - 1].isspace():  # what str.rstrip() drops
        i -= 1
    while i > 0 and text[i - 1] in CLOSING_MARKS:
        i -= 1
    return i > 0 and text[i - 1] in SENTENCE_MARKS


_NON_SPACE = re.compile(r"\S")  # re's whitespace is str.isspace()'s


def _only_space_after(text: str, end: int) -> bool:
    return _NON_SPACE.search(text, end) is None


def document_tables(documents: Sequence[Document]) -> dict[str, list[tuple[int, int]]]:
    """Each document's pipe tables, found once for every chunk set measured against the documents."""
    return {d.doc_id: _table_blocks(d.text) for d in documents}


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
