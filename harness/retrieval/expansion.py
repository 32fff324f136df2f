"""Retrieval-time expansion of a ranked E list: arms E+KX, E+AX (its control) and E+SX (paper section 4.6,
N.4).

It works on any retriever's output: after each retrieved chunk, chunks of the same document that are not
yet in the list are inserted; the token budget then cuts the expanded list as it cuts any other, so the
arms compare with E at equal tokens.
- KX: chunks sharing the retrieved chunk's key, or linked to it through related keys in either direction
  (it lists theirs, or they list its), in document order.
- AX: as many chunks as KX inserted for that retrieved chunk, from its neighbours in the order next,
  previous, next+1, previous-1, ...; it may fall short when the neighbours are used up.
- SX: chunks with the same non-empty section path, in document order.
A chunk already in the list (retrieved or inserted) is never inserted again; a retrieved chunk that an
earlier expansion already pulled up is skipped where it was ranked and gets no expansion of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from harness.data.model import Chunk
from harness.errors import InputError

MODES = ("KX", "AX", "SX")


@dataclass(frozen=True)
class Expansion:
    chunk_ids: tuple[str, ...]  # the expanded ranking, best first
    inserted: dict[str, int]  # retrieved chunk id -> chunks inserted after it, in rank order


class ChunkPositions:
    """A chunk set's documents in document order, with each chunk's position, for expansion look-ups."""

    def __init__(self, chunks: Sequence[Chunk]):
        self.documents: dict[str, list[Chunk]] = {}
        self.where: dict[str, tuple[str, int]] = {}
        self._key_links: dict[str, list[tuple[int, ...]]] = {}
        for chunk in chunks:
            if chunk.chunk_id in self.where:
                raise InputError(f"chunk id {chunk.chunk_id!r} occurs twice in the chunk set")
            doc = self.documents.setdefault(chunk.doc_id, [])
            self.where[chunk.chunk_id] = (chunk.doc_id, len(doc))
            doc.append(chunk)

    def locate(self, chunk_id: str) -> tuple[list[Chunk], int]:
        doc_id, position = self.position(chunk_id)
        return self.documents[doc_id], position

    def position(self, chunk_id: str) -> tuple[str, int]:
        try:
            return self.where[chunk_id]
        except KeyError:
            raise InputError(f"ranked chunk id {chunk_id!r} is not in the chunk set") from None

    def key_links(self, doc_id: str) -> list[tuple[int, ...]]:
        """Per position of the document, its key_linked positions: worked out once per document, since a
        cell expands every question's ranking over the same chunk set."""
        if doc_id not in self._key_links:
            doc = self.documents[doc_id]
            self._key_links[doc_id] = [tuple(key_linked(doc, i)) for i in range(len(doc))]
        return self._key_links[doc_id]


def _generated(chunk: Chunk) -> Mapping:
    return chunk.generated or {}


def key_linked(doc: Sequence[Chunk], i: int) -> Iterator[int]:
    """Positions linked to doc[i] by key or related keys (either direction), in document order."""
    own = _generated(doc[i])
    key = own.get("key") or ""
    related = set(own.get("related_keys") or ())
    for j, other in enumerate(doc):
        if j == i:
            continue
        g = _generated(other)
        other_key = g.get("key") or ""
        if (key and (other_key == key or key in (g.get("related_keys") or ()))) or (
            other_key and other_key in related
        ):
            yield j


def neighbours(doc: Sequence[Chunk], i: int) -> Iterator[int]:
    """Positions around i: next, previous, next+1, previous-1, ..."""
    for distance in range(1, len(doc)):
        for j in (i + distance, i - distance):
            if 0 <= j < len(doc):
                yield j


def same_section(doc: Sequence[Chunk], i: int) -> Iterator[int]:
    """Positions sharing doc[i]'s section path, in document order (a chunk with no section path has none)."""
    section = doc[i].section_path
    if section:
        yield from (j for j, other in enumerate(doc) if j != i and other.section_path == section)


def _expand(
    ranked_ids: Sequence[str],
    chunk_set: ChunkPositions,
    candidates: Callable[[ChunkPositions, str, int], Iterable[int]],
    quota: Callable[[str], int | None],
) -> Expansion:
    out: list[str] = []
    included: set[str] = set()
    inserted: dict[str, int] = {}
    for chunk_id in ranked_ids:
        doc_id, i = chunk_set.position(chunk_id)
        doc = chunk_set.documents[doc_id]
        if chunk_id in included:
            continue
        out.append(chunk_id)
        included.add(chunk_id)
        limit = quota(chunk_id)
        added = 0
        for j in candidates(chunk_set, doc_id, i):
            if limit is not None and added >= limit:
                break
            if doc[j].chunk_id not in included:
                out.append(doc[j].chunk_id)
                included.add(doc[j].chunk_id)
                added += 1
        inserted[chunk_id] = added
    return Expansion(tuple(out), inserted)


def expand_ranking(
    ranked_ids: Sequence[str], chunk_set: ChunkPositions, mode: str, *,
    kx_inserted: Mapping[str, int] | None = None,
) -> Expansion:
    """The ranking expanded by `mode` (KX, AX or SX). AX needs `kx_inserted`, KX's `inserted` on the same
    ranking: a retrieved chunk KX gave no insertions (or skipped) gets none under AX."""
    if len(set(ranked_ids)) != len(ranked_ids):
        raise InputError("the ranking to expand names a chunk twice")
    if mode == "KX":
        return _expand(ranked_ids, chunk_set, lambda cs, doc_id, i: cs.key_links(doc_id)[i], lambda _: None)
    if mode == "SX":
        return _expand(ranked_ids, chunk_set, lambda cs, doc_id, i: same_section(cs.documents[doc_id], i),
                       lambda _: None)
    if mode == "AX":
        if kx_inserted is None:
            raise InputError("AX expansion needs kx_inserted, the per-chunk counts of KX on the same ranking")
        return _expand(ranked_ids, chunk_set, lambda cs, doc_id, i: neighbours(cs.documents[doc_id], i),
                       lambda cid: kx_inserted.get(cid, 0))
    raise InputError(f"expansion mode must be one of {', '.join(MODES)}, got {mode!r}")
