"""What the score stage does differently for the add-on arms (paper section 4.6), kept out of score.py:

- an expansion arm (E+KX, E+AX, E+SX) has no chunk set: its cell ranks the `of:` arm's chunks with the
  cell's retriever, expands the ranked list (harness.retrieval.expansion), and the token budget then cuts
  the expanded list as any other; its run file holds the expanded ranking with rank-derived scores
  (n, n-1, ..., 1: an inserted chunk has no retriever score of its own);
- an arm stored as several variants (RM: one chunk set per seed, harness.arms.addon_arms; an LLM arm's
  repeat generations, harness.arms.repeats) is ranked and scored once per variant, and each question's
  metric values are averaged over the variants, so every statistic sees one row per question; the values
  per variant are kept beside the cell's part (arm `<arm>@<variant>`, harness.pipeline.parts) for the
  between-run spread; its run file holds each variant's ranking under qid `<qid>@<variant>`.
"""

from __future__ import annotations

import statistics
from typing import Sequence

import numpy as np

from harness.arms.variants import VARIANT
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.retrieval.expansion import ChunkPositions, Expansion, expand_ranking
from harness.retrieval.runfile import RunBlock


def chunk_variants(chunks: Sequence[Chunk]) -> list[tuple[str, list[Chunk]]]:
    """[("", chunks)] for a plain chunk set; else one ("@<variant>", its chunks) per variant, in first-seen
    order, each keeping corpus order. A set mixing tagged and untagged chunks is refused."""
    groups: dict[str | None, list[Chunk]] = {}
    for c in chunks:
        groups.setdefault((c.generated or {}).get(VARIANT), []).append(c)
    if list(groups) == [None]:
        return [("", list(chunks))]
    if None in groups:
        raise HarnessError(
            f"a chunk set mixes chunks with and without `{VARIANT}` ({len(groups[None])} without)"
        )
    return [(f"@{name}", members) for name, members in groups.items()]


def expand(mode: str, ranked_ids: Sequence[str], chunk_set: ChunkPositions) -> Expansion:
    """The ranking expanded by `mode`; AX takes its per-chunk quota from KX on the same ranking."""
    if mode == "AX":
        kx = expand_ranking(ranked_ids, chunk_set, "KX")
        return expand_ranking(ranked_ids, chunk_set, "AX", kx_inserted=kx.inserted)
    return expand_ranking(ranked_ids, chunk_set, mode)


class ExpandedRanking(Sequence):
    """A full ranking's expansion, worked out only as far as it is read (run file, metrics).

    Expansion walks the retrieved chunks in rank order, so expanding the first m of them gives exactly the
    first entries of the whole list's expansion, with every shown chunk's insertions complete; the head is
    grown by doubling m until it covers what is read. The ranking holds every chunk of the set once, so the
    expansion is a permutation of it: its length is known without working it out.
    """

    FIRST = 64  # retrieved chunks expanded at first

    def __init__(self, mode: str, ranking, ids: Sequence[str], chunk_set: ChunkPositions,
                 by_id: dict[str, Chunk]):
        self._mode, self._ranking, self._ids, self._set, self._by_id = mode, ranking, ids, chunk_set, by_id
        self._retrieved = 0
        self.expansion = Expansion((), {})

    def __len__(self) -> int:
        return len(self._ids)

    def head(self, n: int) -> Expansion:
        """The expansion with at least its first min(n, len) entries worked out."""
        n = min(n, len(self))
        while len(self.expansion.chunk_ids) < n and self._retrieved < len(self):
            self._retrieved = min(len(self), max(self.FIRST, 2 * self._retrieved))
            order = self._ranking.top(self._retrieved).tolist()
            self.expansion = expand(self._mode, [self._ids[j] for j in order], self._set)
        return self.expansion

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[r] for r in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._by_id[self.head(i + 1).chunk_ids[i]]


def inserted_in_head(expansion: Expansion, head: int) -> list[int]:
    """Insertion counts of the retrieved chunks placed within the first `head` entries of the expanded
    list (the part a run file keeps): the expansions a reader of the top of the list actually sees."""
    shown = set(expansion.chunk_ids[:head])
    return [n for chunk_id, n in expansion.inserted.items() if chunk_id in shown]


def expanded_run_block(qid: str, expanded: ExpandedRanking, tag: str, *, depth: int | None) -> RunBlock:
    """The expanded list's first `depth` entries as a run block, scored n, n-1, ... (n: the whole list's
    length)."""
    n = len(expanded) if depth is None else min(depth, len(expanded))
    scores = np.arange(len(expanded), len(expanded) - n, -1, dtype=np.float64)
    return RunBlock(qid, expanded.head(n).chunk_ids[:n], scores, tag)


def mean_over_variants(per_variant: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """One (metric, value) list: the only one unchanged, or each metric's mean over the variants."""
    if len(per_variant) == 1:
        return list(per_variant[0])
    names = [name for name, _ in per_variant[0]]
    if any([name for name, _ in values] != names for values in per_variant):
        raise HarnessError("variants of one question were scored on different metrics")
    return [(name, statistics.fmean(values[i][1] for values in per_variant)) for i, name in enumerate(names)]
