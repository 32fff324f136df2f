"""The count-matched merge controls of M: RM (random adjacent pairs) and SM (most similar adjacent pair).

Per document they make exactly as many merges as M made there. Unlike M they only ever join adjacent
units (a unit is a run of consecutive E chunks), and a join must keep the unit within the same
tau_merge cap, counting the blank-line separator. When no adjacent pair fits before the target is
reached, the document's shortfall is recorded, never silently dropped. Merged units are built exactly
as M builds them (`merge_fragments`) and indexed with the E rendering.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from harness.arms.merge import SEPARATOR, TAU_MERGE, by_document, check_tau, merge_fragments
from harness.arms.render import render_enriched
from harness.data.model import Chunk
from harness.errors import InputError

RM_SEED_COUNT = 5


@dataclass(frozen=True)
class ControlMerges:
    """A control's chunk set with, per document, the merges made and the merges short of the target."""

    chunks: list[Chunk]
    merges: dict[str, int]
    shortfall: dict[str, int]  # doc_id -> target minus merges made (0 when the target was reached)
    seed: int | None = None  # RM only


# A pair chooser gets the current units and the fitting pairs (i joins units i and i+1) and returns one i.
PairChooser = Callable[[list[list[int]], np.ndarray], int]


def fitting_pairs(units: list[list[int]], lengths: Sequence[int], tau_merge: int) -> np.ndarray:
    """Indexes i where units i and i+1 joined stay within tau_merge characters, separators counted."""
    sizes = [sum(lengths[m] for m in u) + len(SEPARATOR) * (len(u) - 1) for u in units]
    return np.array(
        [i for i in range(len(units) - 1) if sizes[i] + sizes[i + 1] + len(SEPARATOR) <= tau_merge],
        dtype=np.int64,
    )


def merge_adjacent(
    chunks: Sequence[Chunk], target: int, choose: PairChooser, *, tau_merge: int = TAU_MERGE
) -> tuple[list[Chunk], int]:
    """Up to `target` joins of adjacent units of one document, each pair picked by `choose`.

    Returns the chunk set (document order) and the number of merges made.
    """
    check_tau("tau_merge", tau_merge)
    if isinstance(target, bool) or not isinstance(target, int) or target < 0:
        raise InputError(f"merge target must be an integer >= 0, got {target!r}")
    lengths = [len(c.text) for c in chunks]
    units: list[list[int]] = [[i] for i in range(len(chunks))]
    made = 0
    while made < target:
        candidates = fitting_pairs(units, lengths, tau_merge)
        if candidates.size == 0:
            break
        i = choose(units, candidates)
        units[i : i + 2] = [units[i] + units[i + 1]]
        made += 1
    out = []
    for position, unit in enumerate(units):
        members = [chunks[m] for m in unit]
        out.append(merge_fragments(members, position) if len(members) > 1 else render_enriched(members[0]))
    return out, made


def document_rng(seed: int, doc_id: str) -> np.random.Generator:
    """One generator per (seed, document), so a document's merges do not depend on which others are built."""
    doc_entropy = int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng([seed, doc_entropy])


def random_chooser(rng: np.random.Generator) -> PairChooser:
    return lambda units, candidates: int(candidates[rng.integers(candidates.size)])


def similarity_chooser(embeddings: np.ndarray) -> PairChooser:
    """Pick the fitting pair whose unit embeddings (mean over members) have the highest cosine; ties to the
    earlier pair (argmax returns the first maximum)."""

    def choose(units: list[list[int]], candidates: np.ndarray) -> int:
        # the cosine of two means equals the cosine of the sums, so sums suffice
        sums = np.stack([embeddings[u].sum(axis=0) for u in units])
        norms = np.linalg.norm(sums, axis=1)
        left, right = candidates, candidates + 1
        dots = np.einsum("ij,ij->i", sums[left], sums[right])
        denom = norms[left] * norms[right]
        cos = np.divide(
            dots, denom, out=np.zeros_like(dots), where=denom > 0
        )  # a zero vector resembles nothing
        return int(candidates[int(np.argmax(cos))])

    return choose


def _check_targets(docs: Mapping[str, list[Chunk]], targets: Mapping[str, int]) -> None:
    missing = sorted(set(docs) - set(targets))
    extra = sorted(set(targets) - set(docs))
    if missing or extra:
        raise InputError(
            f"merge targets must name exactly the chunk set's documents; missing {missing[:5]}, unknown "
            f"{extra[:5]}"
        )


def random_merges(
    chunks: Sequence[Chunk], targets: Mapping[str, int], *, seed: int, tau_merge: int = TAU_MERGE
) -> ControlMerges:
    """RM with one seed: per document, `targets[doc_id]` joins of uniformly chosen fitting adjacent pairs."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed must be an integer, got {seed!r}")
    docs = by_document(chunks)
    _check_targets(docs, targets)
    return _run(docs, targets, lambda doc_id: random_chooser(document_rng(seed, doc_id)), tau_merge, seed)


def rm_seeds(base_seed: int, count: int = RM_SEED_COUNT) -> tuple[int, ...]:
    """The recorded RM seeds: base_seed, base_seed + 1, ... (five by default)."""
    return tuple(range(base_seed, base_seed + count))


def random_merges_over_seeds(
    chunks: Sequence[Chunk], targets: Mapping[str, int], seeds: Sequence[int], *, tau_merge: int = TAU_MERGE
) -> dict[int, ControlMerges]:
    if len(set(seeds)) != len(seeds):
        raise InputError(f"RM seeds must be distinct, got {list(seeds)}")
    return {s: random_merges(chunks, targets, seed=s, tau_merge=tau_merge) for s in seeds}


def similarity_merges(
    chunks: Sequence[Chunk], targets: Mapping[str, int], embeddings: np.ndarray, *, tau_merge: int = TAU_MERGE
) -> ControlMerges:
    """SM: per document, `targets[doc_id]` greedy joins of the most similar fitting adjacent pair.

    `embeddings` has one row per chunk of `chunks`, in the same order (the study's dense model).
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(chunks):
        raise InputError(
            f"embeddings must be a 2-d array with one row per chunk ({len(chunks)}), got shape "
            f"{embeddings.shape}"
        )
    docs = by_document(chunks)
    _check_targets(docs, targets)
    rows: dict[str, np.ndarray] = {}
    start = 0
    for doc_id, doc_chunks in docs.items():
        rows[doc_id] = embeddings[start : start + len(doc_chunks)]
        start += len(doc_chunks)
    return _run(docs, targets, lambda doc_id: similarity_chooser(rows[doc_id]), tau_merge, None)


def _run(
    docs: Mapping[str, list[Chunk]],
    targets: Mapping[str, int],
    chooser_for: Callable[[str], PairChooser],
    tau_merge: int,
    seed: int | None,
) -> ControlMerges:
    out: list[Chunk] = []
    merges: dict[str, int] = {}
    shortfall: dict[str, int] = {}
    for doc_id, doc_chunks in docs.items():
        choose = chooser_for(doc_id)
        merged, made = merge_adjacent(doc_chunks, targets[doc_id], choose, tau_merge=tau_merge)
        out.extend(merged)
        merges[doc_id] = made
        shortfall[doc_id] = targets[doc_id] - made
    return ControlMerges(out, merges, shortfall, seed)
