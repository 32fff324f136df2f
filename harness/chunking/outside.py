"""Chunks cut by a chunker from outside the harness (docs/plugins.md), located in the source text.

A chunker gives one document's pieces in order, each a chunk text or a (start, end) character span. Every
piece becomes a chunk over source characters, as the built-in chunkers' are, so budgets and evidence metrics
read the same text: a span is taken as given; a text is found verbatim, else after collapsing whitespace
(harness.data.common.TextLocator), searching after the previous piece's start first (pieces in order, overlap
allowed), then anywhere. A piece found nowhere is counted and left out; a document none of whose pieces is
found is refused with its id, since its chunks would stand for nothing in the text.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from harness.chunking.locate import Locator
from harness.data.common import TextLocator
from harness.data.model import Chunk, Document
from harness.errors import HarnessError

# how each piece was placed: the counts an arm's manifest records
SPAN, VERBATIM, NORMALISED, UNLOCATED, BLANK = "spans", "verbatim", "normalised", "unlocated", "blank"
HOW = (SPAN, VERBATIM, NORMALISED, UNLOCATED, BLANK)


def _span(piece: Any) -> tuple[int, int] | None:
    """A (start, end) piece as a pair of ints, else None."""
    if isinstance(piece, (tuple, list)) and len(piece) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in piece):
        return int(piece[0]), int(piece[1])
    return None


def locate_pieces(
    document: Document, pieces: Sequence[Any], *, what: str
) -> tuple[list[tuple[int, int]], Counter]:
    """The [start, end) slice of each piece that is found, in the chunker's order, and how each was placed."""
    text, counts = document.text, Counter()
    finder = TextLocator(text)
    slices, previous = [], -1
    for i, piece in enumerate(pieces):
        span = _span(piece)
        if span is not None:
            start, end = span
            if not 0 <= start < end <= len(text):
                raise HarnessError(
                    f"{what}: document {document.doc_id}: piece {i} is the span ({start}, {end}), "
                    f"outside the text's {len(text)} characters or empty"
                )
            how = SPAN if text[start:end].strip() else BLANK
        elif isinstance(piece, str):
            if not piece.strip():
                counts[BLANK] += 1
                continue
            start, end, how = finder.locate(piece, after=previous + 1)
            if start is None:
                start, end, how = finder.locate(piece)
            how = how or UNLOCATED
        else:
            raise HarnessError(
                f"{what}: document {document.doc_id}: piece {i} is a {type(piece).__name__}; a "
                "chunker gives chunk texts (str) or (start, end) spans"
            )
        counts[how] += 1
        if how in (SPAN, VERBATIM, NORMALISED):
            slices.append((start, end))
            previous = start
    if pieces and not slices and counts[UNLOCATED]:
        raise HarnessError(
            f"{what}: document {document.doc_id}: none of its {len(pieces)} chunks is found in its "
            "text (verbatim or with whitespace collapsed); a chunker must return text of the "
            "document, or (start, end) spans"
        )
    return slices, counts


def outside_chunks(document: Document, pieces: Sequence[Any], *, what: str) -> tuple[list[Chunk], Counter]:
    """One document's chunks from its pieces (positions count kept chunks), and how each piece was placed."""
    slices, counts = locate_pieces(document, pieces, what=what)
    locator = Locator(document.text)
    return [locator.chunk(document.doc_id, pos, s, e) for pos, (s, e) in enumerate(slices)], counts
