"""Reciprocal rank fusion over full rankings: score(c) = sum over retrievers of 1 / (k + rank(c)), ranks from
1."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from harness.config.retrievers import RRF_K
from harness.data.model import Chunk
from harness.retrieval.base import Ranking, Retriever, ScopeIndex, rank_by_score, search_batch

DEFAULT_RRF_K = RRF_K  # written once, in the config schema


def reciprocal_rank_fusion(rankings: Sequence[Ranking], *, k: float = DEFAULT_RRF_K) -> Ranking:
    if len(rankings) < 2:
        raise ValueError(f"reciprocal rank fusion needs at least two rankings, got {len(rankings)}")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    n = len(rankings[0])
    if any(len(r) != n for r in rankings):
        raise ValueError(
            f"rankings to fuse must cover the same chunks, got lengths {[len(r) for r in rankings]}"
        )
    reciprocal = 1.0 / (k + np.arange(1, n + 1, dtype=np.float64))
    contributions = np.empty((len(rankings), n), dtype=np.float64)
    ranks = np.empty((len(rankings), n), dtype=np.int64)
    for row, ranked, ranking in zip(contributions, ranks, rankings):
        row[ranking.order] = reciprocal
        ranked[ranking.order] = np.arange(1, n + 1)
    # Add each chunk's terms in sorted order: the same multiset of ranks then gives the same float,
    # whatever the retriever order, so genuine ties are ties and fall back to position.
    contributions.sort(axis=0)
    total = np.zeros(n, dtype=np.float64)
    for row in contributions:
        total += row
    return rank_by_score(_exact_near_ties(total, ranks, k))


NEAR_TIE = 1e-12  # relative gap below which two fused float scores are settled by exact arithmetic


def _exact_near_ties(total: np.ndarray, ranks: np.ndarray, k: float) -> np.ndarray:
    """The fused scores with every near tie settled exactly: two different sets of ranks can give the same
    rational sum (1/78 + 3/63 = 1/70 + 3/65) but float sums a bit apart, which would order by rounding
    instead of by position. Chunks whose float scores lie within NEAR_TIE of a neighbour's get the correctly
    rounded float of their exact sum, so equal sums are equal floats and fall back to position."""
    if len(total) < 2:
        return total
    order = np.argsort(-total, kind="stable")
    ordered = total[order]
    close = np.abs(np.diff(ordered)) <= NEAR_TIE * max(float(np.abs(ordered).max()), 1e-300)
    if not close.any():
        return total
    near = np.zeros(len(total), dtype=bool)
    near[:-1] |= close
    near[1:] |= close
    settled = total.copy()
    base = Fraction(k)
    for chunk in order[near]:
        settled[chunk] = float(sum(Fraction(1) / (base + int(r)) for r in ranks[:, chunk]))
    return settled


class RRFIndex(ScopeIndex):
    def __init__(self, scope_key: str, members: Sequence[ScopeIndex], k: float):
        super().__init__(scope_key, members[0].n_chunks)
        self.members, self.k = list(members), k

    def search(self, query: str) -> Ranking:
        return reciprocal_rank_fusion([m.search(query) for m in self.members], k=self.k)

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        per_member = [search_batch(m, queries) for m in self.members]
        return [reciprocal_rank_fusion(list(rs), k=self.k) for rs in zip(*per_member)]

    def over_window(self) -> dict[str, np.ndarray]:
        return {name: flags for m in self.members for name, flags in m.over_window().items()}


class RRFRetriever(Retriever):
    def __init__(self, name: str, members: Sequence[Retriever], *, k: float = DEFAULT_RRF_K):
        super().__init__(name)
        if len(members) < 2:
            raise ValueError(
                f"retriever {name!r}: rrf needs at least two retrievers in `of`, got {len(members)}"
            )
        if k <= 0:
            raise ValueError(f"retriever {name!r}: rrf k must be positive, got {k}")
        self.members, self.k = list(members), k

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> RRFIndex:
        return RRFIndex(scope_key, [m.index(scope_key, chunks) for m in self.members], self.k)

    def describe(self) -> dict[str, Any]:
        return {"type": "rrf", "k": self.k, "of": [m.name for m in self.members]}
