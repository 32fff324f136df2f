"""Line numbers, block kinds and section paths for arbitrary [start, end) slices of a document.

Used by the window and paragraph chunkers, whose boundaries ignore blocks: their chunks still
report which block kinds they overlap and the section path where their content starts.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from harness.chunking.blocks import Block, parse_blocks
from harness.chunking.header_led import unique_kinds
from harness.data.model import Chunk, make_chunk_id


def _line_starts(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i != -1:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


class Locator:
    def __init__(self, text: str, blocks: list[Block] | None = None):
        self.text = text
        self.blocks = parse_blocks(text) if blocks is None else blocks
        self._line_starts = _line_starts(text)
        self._block_starts = [b.start for b in self.blocks]
        self._block_ends = [b.end for b in self.blocks]

    def line_of(self, offset: int) -> int:
        """1-based line of the character at `offset` (a "\\n" belongs to the line it ends)."""
        return bisect_right(self._line_starts, offset)

    def blocks_overlapping(self, start: int, end: int) -> list[Block]:
        lo = bisect_right(self._block_ends, start)
        hi = bisect_left(self._block_starts, end)
        return self.blocks[lo:hi]

    def section_path_at(self, start: int, end: int) -> str:
        """Path of the section where the slice's content starts ("" before any header)."""
        inside = self.blocks_overlapping(start, end)
        return inside[0].section_path if inside else ""

    def chunk(self, doc_id: str, position: int, start: int, end: int) -> Chunk:
        text = self.text[start:end]
        return Chunk(
            doc_id=doc_id,
            chunk_id=make_chunk_id(doc_id, position, text),
            text=text,
            spans=((start, end),),
            section_path=self.section_path_at(start, end),
            start_line=self.line_of(start),
            end_line=self.line_of(max(start, end - 1)),
            block_types=unique_kinds([b.kind for b in self.blocks_overlapping(start, end)]),
        )


def chunks_from_slices(doc_id: str, text: str, slices: list[tuple[int, int]]) -> list[Chunk]:
    """Chunks for the given slices, skipping whitespace-only ones; positions count kept chunks."""
    locator = Locator(text)
    kept = [(s, e) for s, e in slices if text[s:e].strip()]
    return [locator.chunk(doc_id, pos, s, e) for pos, (s, e) in enumerate(kept)]
