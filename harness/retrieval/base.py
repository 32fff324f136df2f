"""The retriever interface: index one scope's chunks, answer each query with a FULL ranking.

Every chunk of the scope appears exactly once in a ranking; ties break by chunk position (lower first),
never by dict or hash order, so two runs over the same inputs write the same run file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from harness.data.model import Chunk


@dataclass(frozen=True, eq=False)
class Ranking:
    """`order`: positions into the scope's chunks, best first; `scores`: aligned with `order`."""

    order: np.ndarray  # int64, a permutation of range(n)
    scores: np.ndarray  # float64, non-increasing

    def __post_init__(self):
        if self.order.shape != self.scores.shape or self.order.ndim != 1:
            raise ValueError(f"order {self.order.shape} and scores {self.scores.shape} must be aligned 1-d arrays")
        self.order.setflags(write=False)
        self.scores.setflags(write=False)

    def __len__(self) -> int:
        return len(self.order)

    def top(self, k: int) -> np.ndarray:
        return self.order[:k]


def rank_by_score(scores: np.ndarray) -> Ranking:
    """Full ranking by (-score, position): a stable sort keeps lower positions first among equal scores."""
    scores = np.asarray(scores, dtype=np.float64)
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN; a ranking needs comparable scores")
    # Same result as a stable argsort of -scores, but faster: zeros (most lexical scores) skip the sort
    # and keep position order between positives and negatives; the rest are sorted on distinct integer
    # keys (rank of the score value, position), so the fast unstable quicksort gives the unique answer.
    nonzero = np.flatnonzero(scores)
    keys = -scores[nonzero]
    by_key = np.argsort(keys)
    sorted_keys = keys[by_key]
    value_rank = np.zeros(len(keys), dtype=np.int64)
    np.cumsum(sorted_keys[1:] != sorted_keys[:-1], out=value_rank[1:])
    distinct = np.empty(len(keys), dtype=np.int64)
    distinct[by_key] = value_rank * len(scores) + nonzero[by_key]
    nonzero = nonzero[np.argsort(distinct)]
    positive = scores[nonzero] > 0
    order = np.concatenate([nonzero[positive], np.flatnonzero(scores == 0), nonzero[~positive]]).astype(np.int64)
    return Ranking(order=order, scores=scores[order])


class ScopeIndex(ABC):
    """The chunks of one scope, indexed; answers queries with full rankings over them."""

    def __init__(self, scope_key: str, n_chunks: int):
        self.scope_key = scope_key
        self.n_chunks = n_chunks

    @abstractmethod
    def search(self, query: str) -> Ranking: ...

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        """One ranking per query, identical to calling `search` on each (subclasses batch the work)."""
        return [self.search(q) for q in queries]


class Retriever(ABC):
    """A named, configured retriever. `describe()` is its provenance record (frozen with the study)."""

    def __init__(self, name: str):
        self.name = name

    @abstractmethod
    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> ScopeIndex:
        """Index `chunks` (corpus order) by their `indexed_text`; `scope_key` names the scope in messages."""

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    def stats(self) -> dict[str, int]:
        """Counters accumulated so far (cache hits, truncated inputs, ...); empty when there are none."""
        return {}
