"""Structure-aware chunks: one per provision, with cross-references resolved into the indexed text
(docs/chunking-lab.md).

A provision starts at a header of level 3 or deeper, or at any header whose title begins with a numbered
x.y label ("1.3 Red-light zone"), and runs to the next header. Text outside provisions (a title, an
introduction under "## 2 Access") is chunked the same way, as segments without an id. A segment longer
than L is split on sentence boundaries; no chunk crosses a segment boundary.

Indexed text: "[heading path] " + source text, then, with cross-references on, one line per provision the
chunk refers to ("↳ Section 1.1 Dark window: " + at most 320 characters of its body). A reference is a
match of `ref_pattern` whose first group is a provision id; unknown ids, the chunk's own provision and
repeats are skipped. `text` and `spans` stay the exact source slice, so metrics never see the appendix.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Sequence

from harness.chunking.blocks import parse_blocks
from harness.chunking.locate import Locator
from harness.chunking.sentences import LAB_L, pack_units, sentence_units
from harness.chunking.windows import _positive
from harness.data.model import Chunk, Document
from harness.errors import InputError

from harness.config.lab import REF_CHARS, REF_PATTERN  # noqa: E402 (defaults written once, in the config)
_NUMBERED = re.compile(r"(\d+(?:\.\d+)+)\.?\s+(.*)")
PATH_SEPARATOR = " > "  # the section-path joiner of blocks.py


@dataclass(frozen=True)
class Segment:
    """A provision (pid set) or a stretch of text outside provisions (pid None)."""

    start: int
    end: int
    body_start: int  # after the heading line (== start for a segment without heading)
    path: str  # heading path, titles joined by " > "
    pid: str | None  # the x.y label, when the heading has one
    title: str  # heading title without its label
    is_provision: bool


def is_provision_heading(level: int, title: str) -> bool:
    return level >= 3 or _NUMBERED.fullmatch(title) is not None


def segments(text: str) -> list[Segment]:
    """Provisions and the text between them, in document order (module docstring)."""
    cuts: list[tuple[int, int, str, str | None, str, bool]] = []
    for b in parse_blocks(text):
        if b.kind != "header":
            continue
        m = _NUMBERED.fullmatch(b.title)
        pid, title = (m.group(1), m.group(2)) if m else (None, b.title)
        cuts.append((b.start, b.end, b.section_path, pid, title, is_provision_heading(b.level, b.title)))
    out: list[Segment] = []
    if not cuts or text[: cuts[0][0]].strip():
        out.append(Segment(0, cuts[0][0] if cuts else len(text), 0, "", None, "", False))
    for k, (start, head_end, path, pid, title, prov) in enumerate(cuts):
        end = cuts[k + 1][0] if k + 1 < len(cuts) else len(text)
        out.append(Segment(start, end, head_end, path, pid, title, prov))
    return out


def touched_paths(segs: list[Segment], spans: Sequence[tuple[int, int]]) -> list[str]:
    """The heading paths of the segments a chunk's spans overlap, each distinct path once, in document order.

    A segment without a heading (text before the first header, a document without headers) has no path and
    adds nothing. `segs` is `segments(text)` of the chunk's document: contiguous, in document order."""
    starts = [s.start for s in segs]
    touched: set[int] = set()
    for start, end in spans:
        if end <= start:
            continue
        first = max(0, bisect_right(starts, start) - 1)  # the segment holding the span's first character
        for i in range(first, len(segs)):
            if segs[i].start >= end:
                break
            if start < segs[i].end:
                touched.add(i)
    return list(dict.fromkeys(segs[i].path for i in sorted(touched) if segs[i].path))


def provision_index(segs: list[Segment]) -> dict[str, int]:
    """Provision id -> segment index; the first provision with an id wins when a label repeats."""
    index: dict[str, int] = {}
    for i, s in enumerate(segs):
        if s.is_provision and s.pid is not None:
            index.setdefault(s.pid, i)
    return index


def body_excerpt(text: str, seg: Segment, limit: int = REF_CHARS) -> str:
    """At most `limit` characters of a provision's body, whitespace runs collapsed."""
    return " ".join(text[seg.body_start : seg.end].split())[:limit]


def referenced(chunk_text: str, own: int | None, index: dict[str, int], pattern: re.Pattern) -> list[int]:
    """Segment indices a chunk refers to, in order of first mention; unknown, own and repeated ones
    skipped."""
    found: list[int] = []
    for m in pattern.finditer(chunk_text):
        target = index.get(m.group(1))
        if target is None or target == own or target in found:
            continue
        found.append(target)
    return found


def compile_ref_pattern(ref_pattern: str) -> re.Pattern:
    try:
        pattern = re.compile(ref_pattern)
    except re.error as e:
        raise InputError(f"ref_pattern {ref_pattern!r} is not a regular expression: {e}") from None
    if pattern.groups < 1:
        raise InputError(f"ref_pattern {ref_pattern!r} needs a group capturing the provision id")
    return pattern


def provision_chunks(
    doc: Document,
    *,
    L: int = LAB_L,
    resolve_refs: bool = True,
    ref_pattern: str = REF_PATTERN,
    ref_chars: int = REF_CHARS,
) -> list[Chunk]:
    _positive("L", L)
    pattern = compile_ref_pattern(ref_pattern)
    text = doc.text
    segs = segments(text)
    index = provision_index(segs)
    units = sentence_units(text)
    locator = Locator(text)
    chunks: list[Chunk] = []
    for si, seg in enumerate(segs):
        inside = [u for u in units if seg.start <= u.start and u.end <= seg.end]
        for start, end in pack_units(inside, L):
            chunk = locator.chunk(doc.doc_id, len(chunks), start, end)
            indexed = f"[{seg.path}] {chunk.text}" if seg.path else chunk.text
            if resolve_refs:
                for ti in referenced(chunk.text, si if seg.is_provision else None, index, pattern):
                    t = segs[ti]
                    indexed += f"\n↳ Section {t.pid} {t.title}: {body_excerpt(text, t, ref_chars)}"
            chunks.append(replace(chunk, section_path=seg.path, indexed_text=indexed))
    return chunks


def reference_targets(
    doc_text: str, chunk_spans: list[tuple[int, int]], ref_pattern: str = REF_PATTERN
) -> list[tuple[int, int]]:
    """(i, j) pairs where chunk i refers to a provision that chunk j overlaps (i != j): the graph's xref
    edges.

    Works for any chunk set, so window chunkers get the same edges as provision chunks.
    """
    pattern = compile_ref_pattern(ref_pattern)
    segs = segments(doc_text)
    index = provision_index(segs)
    pairs: set[tuple[int, int]] = set()
    for i, (s, e) in enumerate(chunk_spans):
        for ti in referenced(doc_text[s:e], None, index, pattern):
            t = segs[ti]
            for j, (s2, e2) in enumerate(chunk_spans):
                if j != i and s2 < t.end and t.start < e2:
                    pairs.add((i, j))
    return sorted(pairs)
