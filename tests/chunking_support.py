"""Helpers for the chunking tests: documents, and the invariants every chunk set must satisfy."""

from __future__ import annotations

from pathlib import Path

from harness.chunking.blocks import Block, parse_blocks
from harness.data.model import Chunk, Document, make_chunk_id

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LARAVEL = SHARED_DATA / "laravel-docs-724c31cc"


def doc(text: str, doc_id: str = "t/doc.md") -> Document:
    return Document(doc_id=doc_id, domain="test", text=text)


def laravel_docs() -> list[Document]:
    return [
        doc(p.read_bytes().decode("utf-8"), f"laravel/{p.name}")
        for p in sorted(LARAVEL.glob("*.md"))
    ]


def kinds(blocks: list[Block]) -> list[str]:
    return [b.kind for b in blocks]


def check_chunk_records(
    d: Document, chunks: list[Chunk], overlapping: bool = False, exact: bool = True
) -> None:
    """Spans in order, non-overlapping (unless allowed), ids from make_chunk_id, lines matching.

    `exact`: the text is the span's source slice (windows, P). Header-led chunks hold the reference's
    text instead, equal to the slice up to whitespace between blocks and line endings.
    """
    prev_start = prev_end = 0
    for pos, c in enumerate(chunks):
        assert c.doc_id == d.doc_id
        source = "".join(d.text[s:e] for s, e in c.spans)
        if exact:
            assert source == c.text
        else:
            assert source.split() == c.text.split() and "\r" not in c.text
        assert len(c.spans) == 1
        (s, e), = c.spans
        assert (prev_start if overlapping else prev_end) <= s < e, (prev_end, s, e)
        assert c.text.strip(), "a chunk never holds only whitespace"
        prev_start, prev_end = s + 1, e
        assert c.chunk_id == make_chunk_id(d.doc_id, pos, c.text)
        assert c.start_line == d.text.count("\n", 0, s) + 1
        if exact:
            assert c.end_line == d.text.count("\n", 0, e - 1) + 1
        assert len(set(c.block_types)) == len(c.block_types)


def check_covers_content(d: Document, chunks: list[Chunk]) -> None:
    """Everything outside the chunks is whitespace (no content is dropped)."""
    pos = 0
    for c in chunks:
        (s, e), = c.spans
        assert not d.text[pos:s].strip()
        pos = e
    assert not d.text[pos:].strip()


def check_blocks_whole(d: Document, chunks: list[Chunk]) -> None:
    """Every block lies inside exactly one chunk."""
    spans = [c.spans[0] for c in chunks]
    for b in parse_blocks(d.text):
        inside = [sp for sp in spans if sp[0] <= b.start and b.end <= sp[1]]
        assert len(inside) == 1, (b, spans)


def check_blocks_tile(text: str, blocks: list[Block]) -> None:
    """Blocks are ordered, disjoint, start on a non-blank line, and cover all non-whitespace.

    A block's `text` is its source slice with line endings normalised; only an unclosed fence ends
    on blank lines (it runs to the end of the document).
    """
    pos = 0
    for b in blocks:
        assert pos <= b.start <= b.end
        assert not text[pos : b.start].strip()
        body = text[b.start : b.end]
        assert body.strip() and not body.splitlines()[0].isspace()
        assert b.text == body.replace("\r\n", "\n").replace("\r", "\n")
        assert b.start == 0 or text[b.start - 1] in "\r\n"
        pos = b.end
    assert not text[pos:].strip()
