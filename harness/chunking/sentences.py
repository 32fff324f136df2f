"""Sentence units and the lab's sentence-window chunker (docs/chunking-lab.md).

A unit is an exact [start, end) character span of the document. Header and code blocks are one unit
each; every other block is split after ".", "!" or "?" followed by whitespace, so "1.2-metre" and
"Section 1.3" stay whole. A period that ends a known abbreviation ("e.g.", "Dr.", "No.") is not a
boundary. Units never include surrounding whitespace; every non-whitespace character is in one unit.

Sentence window: whole sentences are packed while the chunk's slice stays within L characters (a single
longer sentence is a chunk of its own). When a chunk closes, whole sentences from its end whose slice
fits the overlap budget (50 characters) start the next chunk.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from harness.chunking.blocks import parse_blocks
from harness.chunking.locate import chunks_from_slices
from harness.chunking.windows import _positive
from harness.data.model import Chunk, Document
from harness.errors import InputError

from harness.config.lab import LAB_L, OVERLAP_CHARS  # noqa: E402 (defaults written once, in the config)

# lower-cased, with their final period; a boundary after one of these is not a sentence end
ABBREVIATIONS = frozenset(
    "e.g. i.e. dr. mr. mrs. ms. prof. no. nos. vs. cf. approx. fig. figs. st. jr. sr. min. max. dept. "
    "art.".split()
)
_BOUNDARY = re.compile(r"[.!?](?=\s)")
_UNSPLIT_KINDS = ("header", "code", "front_matter", "table")


class SentenceUnit(NamedTuple):
    start: int
    end: int


def _is_abbreviation(text: str, period: int) -> bool:
    word_start = period
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start : period + 1].lstrip("([\"'").lower()
    return word in ABBREVIATIONS


def _split_span(text: str, start: int, end: int) -> list[SentenceUnit]:
    units: list[SentenceUnit] = []
    cursor = start
    for m in _BOUNDARY.finditer(text, start, end):
        if text[m.start()] == "." and _is_abbreviation(text, m.start()):
            continue
        units.append(SentenceUnit(cursor, m.end()))
        cursor = m.end()
    units.append(SentenceUnit(cursor, end))
    return [_strip(text, u) for u in units if text[u.start : u.end].strip()]


def _strip(text: str, unit: SentenceUnit) -> SentenceUnit:
    s, e = unit
    while text[s].isspace():
        s += 1
    while text[e - 1].isspace():
        e -= 1
    return SentenceUnit(s, e)


def sentence_units(text: str) -> list[SentenceUnit]:
    """The document's units in order (module docstring)."""
    units: list[SentenceUnit] = []
    for block in parse_blocks(text):
        if not text[block.start : block.end].strip():
            continue
        if block.kind in _UNSPLIT_KINDS:
            units.append(_strip(text, SentenceUnit(block.start, block.end)))
        else:
            units.extend(_split_span(text, block.start, block.end))
    return units


def pack_units(units: list[SentenceUnit], limit: int) -> list[tuple[int, int]]:
    """Next-fit packing of consecutive units into slices of at most `limit` characters (no overlap)."""
    slices: list[tuple[int, int]] = []
    for u in units:
        if slices and u.end - slices[-1][0] <= limit:
            slices[-1] = (slices[-1][0], u.end)
        else:
            slices.append((u.start, u.end))
    return slices


def sentence_window_ranges(units: list[SentenceUnit], limit: int, overlap: int) -> list[tuple[int, int]]:
    """[first, last) unit ranges of the sentence windows."""
    ranges: list[tuple[int, int]] = []
    first, n = 0, len(units)
    while first < n:
        last = first + 1
        while last < n and units[last].end - units[first].start <= limit:
            last += 1
        ranges.append((first, last))
        if last == n:
            break
        carry = last
        while carry - 1 > first and units[last - 1].end - units[carry - 1].start <= overlap:
            carry -= 1
        # the carried sentences must leave room for the next new sentence, else carry fewer
        while carry < last and units[last].end - units[carry].start > limit:
            carry += 1
        first = carry
    return ranges


def fixed_window_chunks(doc: Document, *, L: int = LAB_L, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """L-character windows every L - overlap characters (the lab's fixed window; cuts mid-word)."""
    _positive("L", L)
    if not isinstance(overlap, int) or isinstance(overlap, bool) or not 0 <= overlap < L:
        raise InputError(f"overlap must be an integer in [0, L), got {overlap!r}")
    n, step = len(doc.text), L - overlap
    slices = []
    for s in range(0, n, step):
        slices.append((s, min(s + L, n)))
        if s + L >= n:
            break
    return chunks_from_slices(doc.doc_id, doc.text, slices)


def sentence_window_chunks(doc: Document, *, L: int = LAB_L, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    _positive("L", L)
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 0:
        raise InputError(f"overlap must be a non-negative integer, got {overlap!r}")
    units = sentence_units(doc.text)
    slices = [(units[a].start, units[b - 1].end) for a, b in sentence_window_ranges(units, L, overlap)]
    return chunks_from_slices(doc.doc_id, doc.text, slices)
