"""M-TP core: consolidate a document's E-K keys with one after-the-fact mapping, then merge as M.

The LLM call (prompt `consolidate_keys.txt`, cached and ledgered) is made elsewhere; this module builds
the prompt's key list, reads the answer and applies it. Each key's outcome is one of:
kept (mapped to itself), remapped (to another listed key), invalid (to a key not on the list),
missing (the answer does not name it), unparseable (the whole answer was unusable).
Only kept and remapped change anything; every other case leaves the key as it was.
A mapping is applied in one step (a -> b, b -> c relabels a as b, not c): the call is asked for
canonical keys, and chasing chains would change keys the model never mapped there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from harness.arms.keydict import normalise_key
from harness.arms.merge import TAU_MERGE, TAU_ORPHAN, chunk_key, merge_document
from harness.data.model import Chunk

OUTCOMES = ("kept", "remapped", "invalid", "missing", "unparseable")


@dataclass(frozen=True)
class MappingOutcomes:
    kept: int = 0
    remapped: int = 0
    invalid: int = 0
    missing: int = 0
    unparseable: int = 0

    def __add__(self, other: "MappingOutcomes") -> "MappingOutcomes":
        return MappingOutcomes(*(getattr(self, n) + getattr(other, n) for n in OUTCOMES))


@dataclass(frozen=True)
class Consolidation:
    mapping: dict[str, str]  # every listed key -> the key it becomes (itself unless kept or remapped)
    outcomes: MappingOutcomes


def keys_in_first_use_order(chunks: Sequence[Chunk]) -> list[tuple[str, int]]:
    """A document's non-empty keys in order of first use, each with its number of chunks."""
    counts: dict[str, int] = {}
    for chunk in chunks:
        key = chunk_key(chunk)
        if key:
            counts[key] = counts.get(key, 0) + 1
    return list(counts.items())


def key_list_text(keys: Sequence[tuple[str, int]]) -> str:
    """The prompt's {key_list}: one line per key, "- key (n chunks)"."""
    return "\n".join(f"- {key} ({n} chunk{'s' if n != 1 else ''})" for key, n in keys)


def parse_mapping_answer(answer: Any) -> dict[str, str] | None:
    """The answer's key -> canonical pairs, or None when the answer is unusable as a whole.

    Expected: {"mapping": [{"key": ..., "canonical": ...}, ...]} (the prompt's format). Entries that are
    not such objects are skipped, so their keys count as missing. Both sides are normalised like keys.
    """
    if not isinstance(answer, Mapping) or not isinstance(answer.get("mapping"), list):
        return None
    pairs: dict[str, str] = {}
    for entry in answer["mapping"]:
        if (
            isinstance(entry, Mapping)
            and isinstance(entry.get("key"), str)
            and isinstance(entry.get("canonical"), str)
        ):
            # the first answer for a key wins, so a repeated entry cannot overwrite it
            pairs.setdefault(normalise_key(entry["key"]), normalise_key(entry["canonical"]))
    return pairs


def apply_mapping(keys: Sequence[str], answer: Mapping[str, str] | None) -> Consolidation:
    """Resolve each listed key against a parsed answer (None: unparseable)."""
    listed = set(keys)
    mapping: dict[str, str] = {}
    counts = dict.fromkeys(OUTCOMES, 0)
    for key in keys:
        target = None if answer is None else answer.get(key)
        if answer is None:
            outcome = "unparseable"
        elif target is None:
            outcome = "missing"
        elif target not in listed:
            outcome = "invalid"
        else:
            outcome = "kept" if target == key else "remapped"
        mapping[key] = target if outcome in ("kept", "remapped") else key
        counts[outcome] += 1
    return Consolidation(mapping, MappingOutcomes(**counts))


def relabel(chunks: Sequence[Chunk], mapping: Mapping[str, str]) -> list[Chunk]:
    """Chunks with their key replaced by its consolidated key (keyless chunks untouched)."""
    out = []
    for chunk in chunks:
        key = chunk_key(chunk)
        if key and mapping.get(key, key) != key:
            chunk = replace(chunk, generated={**(chunk.generated or {}), "key": mapping[key]})
        out.append(chunk)
    return out


def consolidate_and_merge(
    chunks: Sequence[Chunk], answer: Any, *, tau_merge: int = TAU_MERGE, tau_orphan: int = TAU_ORPHAN
) -> tuple[list[Chunk], Consolidation]:
    """M-TP for one document: its E-K chunks (document order) and the raw JSON answer of its call
    (None when the call gave nothing)."""
    keys = [key for key, _ in keys_in_first_use_order(chunks)]
    consolidation = apply_mapping(keys, parse_mapping_answer(answer))
    merged = merge_document(
        relabel(chunks, consolidation.mapping), tau_merge=tau_merge, tau_orphan=tau_orphan
    )
    return merged, consolidation
