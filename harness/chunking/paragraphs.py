"""Paragraph chunker P (docs/design.md, Arms): blank-line separated paragraphs packed to 1,500 chars.

A paragraph is a maximal run of lines between blank lines, except that blank lines inside fenced
or indented code (including fences nested in list items) separate nothing: code is kept whole.
Headers are ordinary paragraphs, not boundaries. Paragraphs are packed next-fit: the next one
joins the current chunk while the chunk's slice stays within `pack_chars`; a single longer
paragraph is a chunk of its own, never split. A chunk is the exact slice from its first
paragraph's start to its last one's end (the blank lines between them included).
"""

from __future__ import annotations

from harness.chunking.blocks import Block, Lines, is_blank
from harness.chunking.locate import Locator
from harness.config.chunking import P_PACK_CHARS  # the default lives in the config schema
from harness.data.model import Chunk, Document
from harness.errors import InputError


def _code_ranges(blocks: list[Block]) -> list[tuple[int, int]]:
    ranges = [(b.start, b.end) for b in blocks if b.kind == "code"]
    ranges += [f for b in blocks for f in b.fences]
    return sorted(ranges)


def paragraph_spans(text: str, blocks: list[Block]) -> list[tuple[int, int]]:
    src = Lines(text)
    code = _code_ranges(blocks)
    spans: list[tuple[int, int]] = []
    start = end = -1
    k = 0
    for i in range(src.n):
        off = src.starts[i]
        while k < len(code) and code[k][1] < off:
            k += 1
        if is_blank(src.lines[i]):
            if start >= 0 and not (k < len(code) and code[k][0] <= off):
                spans.append((start, end))
                start = -1
            continue
        if start < 0:
            start = off
        end = src.content_end(i)
    if start >= 0:
        spans.append((start, end))
    return spans


def pack(spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    packed: list[tuple[int, int]] = []
    for s, e in spans:
        if packed and e - packed[-1][0] <= limit:
            packed[-1] = (packed[-1][0], e)
        else:
            packed.append((s, e))
    return packed


def paragraph_chunks(doc: Document, *, pack_chars: int = P_PACK_CHARS) -> list[Chunk]:
    if not isinstance(pack_chars, int) or isinstance(pack_chars, bool) or pack_chars < 1:
        raise InputError(f"pack_chars must be a positive integer, got {pack_chars!r}")
    locator = Locator(doc.text)
    slices = pack(paragraph_spans(doc.text, locator.blocks), pack_chars)
    return [locator.chunk(doc.doc_id, pos, s, e) for pos, (s, e) in enumerate(slices)]
