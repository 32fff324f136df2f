"""Indexed-text renderings (docs/design.md, Arms): plain functions Chunk -> Chunk with indexed_text set.
Which kind renders how is the arm registry's (harness.arms.registry).

Source `text` is never changed. Prefix fields are made single-line (whitespace runs collapsed to one
space) so "one field per line" holds; empty fields are omitted, and with no prefix at all the
indexed text is the chunk text alone (no leading blank line).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from harness.config.arm_kinds import ENRICHED_FIELDS
from harness.data.model import Chunk
from harness.errors import InputError


def _one_line(value: Any) -> str:
    # str.split() cuts at exactly the characters a regex's \s matches (str.isspace), several times faster
    return " ".join(str(value).split())


def _items(value: Any) -> list[str]:
    """A list field's non-empty items (a bare string counts as one item)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [s for s in (_one_line(v) for v in value) if s]


def _with_prefix(chunk: Chunk, lines: list[str], body: str | None = None) -> Chunk:
    """Prefix lines, blank line, then `body` (default: the chunk's source text)."""
    body = chunk.text if body is None else body
    prefix = "\n".join(ln for ln in lines if ln)
    return replace(chunk, indexed_text=f"{prefix}\n\n{body}" if prefix else body)


def _generated(chunk: Chunk) -> dict[str, Any]:
    if chunk.generated is None:
        raise InputError(f"chunk {chunk.chunk_id} has no generated fields to render")
    return chunk.generated


def render_text(chunk: Chunk) -> Chunk:
    """S, F512c, F256t, P, FL: the chunk text."""
    return replace(chunk, indexed_text=chunk.text)


def render_section_path(chunk: Chunk) -> Chunk:
    """S+T: section path, blank line, text."""
    return _with_prefix(chunk, [_one_line(chunk.section_path)])


def render_heading_paths(chunk: Chunk, paths: Sequence[str]) -> Chunk:
    """Contextual headers (an option of any arm): one heading path per line, blank line, then what the arm
    indexes already (its own rendering, or the source text when it has none). S+T is the one-path case
    without an arm rendering: a header-led S chunk with its own section path renders exactly as S+T."""
    return _with_prefix(chunk, [_one_line(p) for p in paths], chunk.indexed_text or chunk.text)


# how each generated field is written on its prefix line: lists joined, strings made single-line
_FIELD_LINE = {
    "title": lambda v: _one_line(v or ""),
    "summary": lambda v: _one_line(v or ""),
    "keywords": lambda v: ", ".join(_items(v)),
    "questions": lambda v: " ".join(_items(v)),
    "key": lambda v: _one_line(v or ""),
    "entities": lambda v: ", ".join(_items(v)),
}


def render_fields(chunk: Chunk, fields: Sequence[str]) -> Chunk:
    """The named generated fields, one per line in the order given, blank line, text."""
    g = _generated(chunk)
    unknown = [f for f in fields if f not in _FIELD_LINE]
    if unknown:
        raise InputError(f"no rendering for generated field(s) {', '.join(unknown)}")
    return _with_prefix(chunk, [_FIELD_LINE[f](g.get(f)) for f in fields])


def render_enriched(chunk: Chunk) -> Chunk:
    """E, E-K, PF, M: title / summary / keywords (", ") / questions (" "), one per line, blank line, text."""
    return render_fields(chunk, ENRICHED_FIELDS)


def render_context(chunk: Chunk) -> Chunk:
    """CR: situating context, blank line, text."""
    return _with_prefix(chunk, [_one_line(_generated(chunk).get("context") or "")])
