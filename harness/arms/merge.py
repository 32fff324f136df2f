"""Key-based merging, arm M (and E-K+M, M-TP), per paper Appendix N.3 and docs/design.md, Arms.

One document's E chunks, in document order, go in; the merged chunk set comes out:
- chunks are grouped by exact key (groups in order of their first chunk, members in document order),
  whatever their distance or section;
- each group is packed next-fit: a chunk joins the open bin when bin size + its length + 2 (the blank-line
  separator) <= tau_merge, else it opens a new bin; earlier bins are never revisited, so a chunk longer
  than tau_merge always ends up alone, unchanged;
- a bin of two or more becomes one chunk (`merge_fragments`);
- keyless chunks are never merged; one shorter than tau_orphan gets [Section: ...], [Previous: ...] and
  [Next: ...] lines before its text in the indexed text (its source text is unchanged);
- the output is sorted by start line, and everything is indexed with the E rendering.

Chunks that stay alone keep their E chunk id, so runs of M and E name the same unit the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

from harness.arms.render import _one_line, render_enriched
from harness.data.model import Chunk, make_chunk_id
from harness.errors import InputError

TAU_MERGE = 3000
TAU_ORPHAN = 200
SEPARATOR = "\n\n"
MERGED_FROM = "merged_from"  # generated field: the fragment chunk ids of a merged chunk, in document order
UNIONED_FIELDS = ("keywords", "questions", "related_keys")


@dataclass(frozen=True)
class MergeResult:
    """A merged chunk set and, per document, how many merges made it (input chunks minus output chunks)."""

    chunks: list[Chunk]
    merges: dict[str, int]  # doc_id -> merges, for every document in the input


def chunk_key(chunk: Chunk) -> str:
    if chunk.generated is None:
        raise InputError(f"chunk {chunk.chunk_id} has no generated fields, so it has no key to merge on")
    key = chunk.generated.get("key") or ""
    return key if isinstance(key, str) else ""


def next_fit_bins(lengths: Sequence[int], tau_merge: int = TAU_MERGE) -> list[list[int]]:
    """Next-fit packing of items with these lengths, in order: lists of item positions, one per bin."""
    bins: list[list[int]] = []
    size = 0
    for i, length in enumerate(lengths):
        if bins and size + length + len(SEPARATOR) <= tau_merge:
            bins[-1].append(i)
            size += length + len(SEPARATOR)
        else:
            bins.append([i])
            size = length
    return bins


def _sorted_union(values: Iterable[Any]) -> list[str]:
    items: set[str] = set()
    for value in values:
        if isinstance(value, str):
            value = [value]
        items.update(v for v in (value or ()) if isinstance(v, str) and v)
    return sorted(items)


def _unique_in_order(items: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _start(chunk: Chunk) -> tuple[int, tuple[int, int]]:
    return chunk.start_line, (chunk.spans[0] if chunk.spans else (0, 0))


def merge_fragments(fragments: Sequence[Chunk], position: int) -> Chunk:
    """One chunk from two or more fragments of one document (any order in, document order used).

    Text: fragment texts joined by a blank line. Section path, title, summary and key: the first fragment's.
    Keywords, questions, related keys: sorted, de-duplicated unions (so reruns agree). Spans: every
    fragment's spans, unchanged, so each still slices its own source text.
    """
    if len(fragments) < 2:
        raise InputError(f"a merged chunk needs at least two fragments, got {len(fragments)}")
    if len({f.doc_id for f in fragments}) != 1:
        raise InputError(f"fragments come from several documents: {sorted({f.doc_id for f in fragments})}")
    ordered = sorted(fragments, key=_start)
    first = ordered[0]
    generated = dict(first.generated or {})
    for name in UNIONED_FIELDS:
        generated[name] = _sorted_union((f.generated or {}).get(name) for f in ordered)
    generated["entities"] = _unique_in_order(
        e for f in ordered for e in (f.generated or {}).get("entities") or ()
    )
    generated[MERGED_FROM] = [f.chunk_id for f in ordered]
    text = SEPARATOR.join(f.text for f in ordered)
    merged = Chunk(
        doc_id=first.doc_id,
        chunk_id=make_chunk_id(first.doc_id, position, text),
        text=text,
        spans=tuple(span for f in ordered for span in f.spans),
        section_path=first.section_path,
        start_line=first.start_line,
        end_line=max(f.end_line for f in ordered),
        block_types=tuple(_unique_in_order(t for f in ordered for t in f.block_types)),
        generated=generated,
    )
    return render_enriched(merged)


def orphan_lines(chunks: Sequence[Chunk], i: int) -> list[str]:
    """Orphan lines of keyless chunks[i]: its section path, its neighbours' summaries (empty ones left
    out)."""
    lines = []
    if _one_line(chunks[i].section_path):
        lines.append(f"[Section: {_one_line(chunks[i].section_path)}]")
    for label, j in (("Previous", i - 1), ("Next", i + 1)):
        if 0 <= j < len(chunks):
            summary = _one_line((chunks[j].generated or {}).get("summary") or "")
            if summary:
                lines.append(f"[{label}: {summary}]")
    return lines


def with_orphan_context(chunks: Sequence[Chunk], i: int) -> Chunk:
    """chunks[i] in the E rendering, with its orphan lines and a blank line just before the source text."""
    chunk = render_enriched(chunks[i])
    lines = orphan_lines(chunks, i)
    if not lines:
        return chunk
    prefix = chunk.indexed_text[: len(chunk.indexed_text) - len(chunk.text)]
    return replace(chunk, indexed_text=prefix + "\n".join(lines) + SEPARATOR + chunk.text)


def _renumber(units: Sequence[Chunk | list[Chunk]]) -> list[Chunk]:
    """Units (a chunk, or a bin's fragments in document order) sorted by first start line; merged chunks
    are built here so their id holds their output position."""
    ordered = sorted(units, key=lambda u: _start(u[0] if isinstance(u, list) else u))
    return [merge_fragments(u, pos) if isinstance(u, list) else u for pos, u in enumerate(ordered)]


def merge_document(
    chunks: Sequence[Chunk], *, tau_merge: int = TAU_MERGE, tau_orphan: int = TAU_ORPHAN
) -> list[Chunk]:
    """M on one document's chunks, given in document order."""
    _check_one_document(chunks)
    check_tau("tau_merge", tau_merge)
    check_tau("tau_orphan", tau_orphan)
    groups: dict[str, list[int]] = {}  # insertion order = order of first chunk
    units: list[Chunk | list[Chunk]] = []
    for i, chunk in enumerate(chunks):
        key = chunk_key(chunk)
        if key:
            groups.setdefault(key, []).append(i)
        elif len(chunk.text) < tau_orphan:
            units.append(with_orphan_context(chunks, i))
        else:
            units.append(render_enriched(chunk))
    for members in groups.values():
        for bin_ in next_fit_bins([len(chunks[i].text) for i in members], tau_merge):
            fragments = [chunks[members[j]] for j in bin_]
            units.append(fragments if len(fragments) > 1 else render_enriched(fragments[0]))
    return _renumber(units)


def merge_by_keys(
    chunks: Sequence[Chunk], *, tau_merge: int = TAU_MERGE, tau_orphan: int = TAU_ORPHAN
) -> MergeResult:
    """M over a chunk set in corpus order (each document's chunks contiguous, in document order)."""
    out: list[Chunk] = []
    merges: dict[str, int] = {}
    for doc_id, doc_chunks in by_document(chunks).items():
        merged = merge_document(doc_chunks, tau_merge=tau_merge, tau_orphan=tau_orphan)
        merges[doc_id] = len(doc_chunks) - len(merged)
        out.extend(merged)
    return MergeResult(out, merges)


def by_document(chunks: Iterable[Chunk]) -> dict[str, list[Chunk]]:
    """Chunks grouped by document, documents in order of first appearance; refuses interleaved documents."""
    docs: dict[str, list[Chunk]] = {}
    last = None
    for chunk in chunks:
        if chunk.doc_id != last and chunk.doc_id in docs:
            raise InputError(
                f"chunks of document {chunk.doc_id!r} are not contiguous; give each document's chunks "
                "together"
            )
        docs.setdefault(chunk.doc_id, []).append(chunk)
        last = chunk.doc_id
    return docs


def check_tau(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name} must be a non-negative integer number of characters, got {value!r}")


def _check_one_document(chunks: Sequence[Chunk]) -> None:
    ids = {c.doc_id for c in chunks}
    if len(ids) > 1:
        raise InputError(
            f"merge_document takes one document's chunks, got {len(ids)} documents: {sorted(ids)}"
        )


def merged_fragment_ids(chunk: Chunk) -> list[str]:
    """The E chunk ids a chunk was merged from, or [] for a chunk that stayed alone."""
    return list((chunk.generated or {}).get(MERGED_FROM) or [])
