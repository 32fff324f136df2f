"""Indexed-text renderings (DESIGN section 4): plain functions Chunk -> Chunk with indexed_text set.

Source `text` is never changed. Prefix fields are made single-line (whitespace runs collapsed to one
space) so "one field per line" holds; empty fields are omitted, and with no prefix at all the
indexed text is the chunk text alone (no leading blank line).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

from harness.data.model import Chunk
from harness.errors import InputError

_SPACE = re.compile(r"\s+")


def _one_line(value: Any) -> str:
    return _SPACE.sub(" ", str(value)).strip()


def _items(value: Any) -> list[str]:
    """A list field's non-empty items (a bare string counts as one item)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [s for s in (_one_line(v) for v in value) if s]


def _with_prefix(chunk: Chunk, lines: list[str]) -> Chunk:
    lines = [ln for ln in lines if ln]
    prefix = "\n".join(lines)
    return replace(chunk, indexed_text=f"{prefix}\n\n{chunk.text}" if prefix else chunk.text)


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


def render_enriched(chunk: Chunk) -> Chunk:
    """E, E-K, PF, M: title / summary / keywords (", ") / questions (" "), one per line, blank line, text."""
    g = _generated(chunk)
    return _with_prefix(
        chunk,
        [
            _one_line(g.get("title") or ""),
            _one_line(g.get("summary") or ""),
            ", ".join(_items(g.get("keywords"))),
            " ".join(_items(g.get("questions"))),
        ],
    )


def render_context(chunk: Chunk) -> Chunk:
    """CR: situating context, blank line, text."""
    return _with_prefix(chunk, [_one_line(_generated(chunk).get("context") or "")])


RENDERINGS: dict[str, Callable[[Chunk], Chunk]] = {
    "S": render_text,
    "S+T": render_section_path,
    "E": render_enriched,
    "E-K": render_enriched,
    "PF": render_enriched,
    "CR": render_context,
    # merged and expanded arms index their (merged) chunks as E does
    "M": render_enriched,
    "RM": render_enriched,
    "SM": render_enriched,
    "M-TP": render_enriched,
    "E+KX": render_enriched,
    "E+AX": render_enriched,
    "E+SX": render_enriched,
    "F512c": render_text,
    "F256t": render_text,
    "P": render_text,
    "FL": render_text,
}

# arms built without any LLM call: arm -> (chunker name in harness.chunking.CHUNKERS, rendering)
LLM_FREE_ARMS: dict[str, tuple[str, Callable[[Chunk], Chunk]]] = {
    "S": ("header-led", render_text),
    "S+T": ("header-led", render_section_path),
    "F512c": ("F512c", render_text),
    "F256t": ("F256t", render_text),
    "P": ("P", render_text),
    "FL": ("FL", render_text),
}


def render(arm: str, chunk: Chunk) -> Chunk:
    try:
        fn = RENDERINGS[arm]
    except KeyError:
        raise InputError(f"no rendering for arm {arm!r}; known: {', '.join(RENDERINGS)}") from None
    return fn(chunk)
