"""The retriever interface: index one scope's chunks, answer each query with a FULL ranking.

Every chunk of the scope appears exactly once in a ranking; ties break by chunk position (lower first),
never by dict or hash order, so two runs over the same inputs write the same run file.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from harness.data.model import Chunk


class Ranking:
    """A full ranking of a scope's chunks: `order` holds positions into the chunks, best first, and
    `scores` the aligned scores (non-increasing).

    A ranking made by `rank_by_score` is lazy: it keeps the scores by position and orders only the head
    a reader asks for (`top`, `head`, `position`), so a scope of 100,000 chunks whose run file and metrics
    read 100 of them never sorts the rest. The full `order` is computed on first use. Either way every
    prefix is the prefix of the one (-score, position) order."""

    def __init__(self, order: np.ndarray, scores: np.ndarray):
        if order.shape != scores.shape or order.ndim != 1:
            raise ValueError(f"order {order.shape} and scores {scores.shape} must be aligned 1-d arrays")
        self._by_position: np.ndarray | None = None
        self._set_prefix(order, scores)

    @classmethod
    def lazy(cls, by_position: np.ndarray) -> "Ranking":
        """The (-score, position) ranking of `by_position` (float64 without NaN, checked by the caller)."""
        ranking = cls.__new__(cls)
        by_position.setflags(write=False)
        ranking._by_position = by_position
        ranking._set_prefix(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        return ranking

    def _set_prefix(self, order: np.ndarray, scores: np.ndarray) -> None:
        order.setflags(write=False)
        scores.setflags(write=False)
        self._order, self._scores = order, scores

    def __len__(self) -> int:
        return len(self._by_position) if self._by_position is not None else len(self._order)

    def _ordered(self, k: int) -> None:
        """Make sure at least the first min(k, len) entries are ordered."""
        n = len(self)
        if len(self._order) >= min(k, n):
            return
        assert self._by_position is not None  # an eager ranking is ordered in full
        order = ordered_positions(self._by_position, n if 2 * k >= n else k)  # most of it: order it all
        self._set_prefix(order, self._by_position[order])

    @property
    def order(self) -> np.ndarray:
        self._ordered(len(self))
        return self._order

    @property
    def scores(self) -> np.ndarray:
        self._ordered(len(self))
        return self._scores

    def top(self, k: int) -> np.ndarray:
        """The positions of the best `k` chunks (fewer when the scope is smaller)."""
        self._ordered(k)
        return self._order[:k]

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions and scores of the best `k` chunks."""
        self._ordered(k)
        return self._order[:k], self._scores[:k]

    def position(self, rank: int) -> int:
        """The position of the chunk at 0-based `rank`; IndexError past the end (so it iterates as a
        sequence).
        A reader walking down the ranking doubles the ordered head at each step past it."""
        if not 0 <= rank < len(self):
            raise IndexError(f"rank {rank} outside a ranking of {len(self)} chunks")
        if rank >= len(self._order):
            self._ordered(max(2 * len(self._order), rank + 1, HEAD_STEP))
        return int(self._order[rank])

    def scores_by_position(self) -> np.ndarray:
        """Each chunk's score, indexed by its position in the scope."""
        if self._by_position is not None:
            return self._by_position
        out = np.empty(len(self._order), dtype=np.float64)
        out[self._order] = self._scores
        return out


HEAD_STEP = 64  # the smallest head a lazy ranking orders when read rank by rank


def rank_by_score(scores: np.ndarray) -> Ranking:
    """Full ranking by (-score, position), ordered lazily (Ranking.lazy): lower positions first among equal
    scores."""
    scores = np.array(
        scores, dtype=np.float64
    )  # a private copy: the ranking must not change under its reader
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN; a ranking needs comparable scores")
    return Ranking.lazy(scores)


def ordered_positions(scores: np.ndarray, k: int) -> np.ndarray:
    """The first min(k, n) positions of the (-score, position) order of `scores`, without ordering the rest.

    The k-th best value splits the head exactly: every position scoring above it is in the head (sorted
    stably, so equal scores keep position order), then the positions scoring exactly that value fill the
    rest in position order. Positive scores beat everything else, so when there are at least k of them
    (most BM25 queries) only they are partitioned."""
    n = len(scores)
    k = min(k, n)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    if k == n:
        return _full_order(scores)
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) < k:
        candidates = np.arange(n)
    values = scores[candidates]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    above = candidates[values > kth]
    above = above[np.argsort(-scores[above], kind="stable")]
    tied = candidates[values == kth][: k - len(above)]
    return np.concatenate([above, tied]).astype(np.int64, copy=False)


def _full_order(scores: np.ndarray) -> np.ndarray:
    """Every position by (-score, position): same result as a stable argsort of -scores, but faster."""
    # Zeros (most lexical scores) skip the sort and keep position order between positives and negatives;
    # the rest are sorted on distinct integer keys (rank of the score value, position), so the fast
    # unstable quicksort gives the unique answer. With more than an eighth of the scores nonzero (dense
    # retrievers, fusions) one stable sort is faster (1.7 ms against 2.7 ms at 20,000 scores, none zero).
    nonzero = np.flatnonzero(scores)
    if 8 * len(nonzero) > len(scores):
        return np.argsort(-scores, kind="stable").astype(np.int64, copy=False)
    keys = -scores[nonzero]
    by_key = np.argsort(keys)
    sorted_keys = keys[by_key]
    value_rank = np.zeros(len(keys), dtype=np.int64)
    np.cumsum(sorted_keys[1:] != sorted_keys[:-1], out=value_rank[1:])
    distinct = np.empty(len(keys), dtype=np.int64)
    distinct[by_key] = value_rank * len(scores) + nonzero[by_key]
    nonzero = nonzero[np.argsort(distinct)]
    positive = scores[nonzero] > 0
    return np.concatenate([nonzero[positive], np.flatnonzero(scores == 0), nonzero[~positive]]).astype(
        np.int64
    )


class ScopeIndex(ABC):
    """The chunks of one scope, indexed; answers queries with full rankings over them."""

    def __init__(self, scope_key: str, n_chunks: int):
        self.scope_key = scope_key
        self.n_chunks = n_chunks
        self.last_batch: tuple[tuple[str, ...], list[Ranking]] | None = None  # search_batch's memory

    @abstractmethod
    def search(self, query: str) -> Ranking: ...

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        """One ranking per query, identical to calling `search` on each (subclasses batch the work)."""
        return [self.search(q) for q in queries]

    def over_window(self) -> dict[str, np.ndarray]:
        """Per embedding retriever this index ranks with (itself or a member), one flag per chunk position:
        the chunk's text was longer than the embedder's input window and cut before encoding. Empty: no
        embedder cuts here."""
        return {}


def search_batch(index: ScopeIndex, queries: Sequence[str]) -> list[Ranking]:
    """index.search_many(queries), remembered for the last batch the index answered: the cells of an arm
    rank each batch of questions with a retriever, then with the fusions and rerankers built on it, which
    read the same rankings instead of ranking again. Rankings are never changed by reading them (Ranking
    orders its head lazily, to the same order), so a shared one is the one a fresh search gives."""
    key = tuple(queries)
    last = index.last_batch
    if last is not None and last[0] == key:
        return last[1]
    rankings = index.search_many(key)
    index.last_batch = (key, rankings)
    return rankings


class IndexMemo:
    """Scope indexes kept while one chunk set is scored: every cell of an arm ranks the same scopes, and a
    hybrid, reranker or graph retriever indexes again what its members have indexed. Keyed by retriever,
    scope and each chunk's id, document, spans and indexed text, so a hit is the index a fresh build would
    give; indexes are never changed by searching. `clear()` when no cell will rank the scopes it holds
    again (score clears it after each scope: a chunk set's indexes together can take gigabytes)."""

    def __init__(self) -> None:
        self._indexes: dict[tuple[str, str, str], "ScopeIndex"] = {}
        # id(chunk) -> (the chunk, its digest): every retriever of every cell of an arm hands in the scope's
        # same Chunk objects, so each is hashed once; a Chunk is frozen, and holding it keeps its id unused
        self._chunk_digests: dict[int, tuple[Chunk, bytes]] = {}
        self.hits = 0

    def get(self, retriever: str, scope_key: str, chunks: Sequence[Chunk], build: Callable[[], "ScopeIndex"]):
        digest = hashlib.sha256(b"".join(map(self._chunk_digest, chunks)))
        key = (retriever, scope_key, f"{len(chunks)}:{digest.hexdigest()}")
        found = self._indexes.get(key)
        if found is None:
            found = self._indexes[key] = build()
        else:
            self.hits += 1
        return found

    def _chunk_digest(self, chunk: Chunk) -> bytes:
        held = self._chunk_digests.get(id(chunk))
        if held is not None and held[0] is chunk:
            return held[1]
        parts = (chunk.chunk_id, chunk.doc_id, repr(chunk.spans), chunk.indexed_text)
        digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).digest()
        self._chunk_digests[id(chunk)] = (chunk, digest)
        return digest

    def clear(self) -> None:
        self._indexes.clear()
        self._chunk_digests.clear()


class Retriever(ABC):
    """A named, configured retriever. `describe()` is its provenance record (frozen with the study)."""

    def __init__(self, name: str):
        self.name = name
        self.memo: IndexMemo | None = (
            None  # set by the scoring loop's RetrieverContext (None: build every time)
        )

    def _memoised(self, scope_key: str, chunks: Sequence[Chunk], build: Callable[[], "ScopeIndex"]):
        return build() if self.memo is None else self.memo.get(self.name, scope_key, chunks, build)

    @abstractmethod
    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> ScopeIndex:
        """Index `chunks` (corpus order) by their `indexed_text`; `scope_key` names the scope in messages."""

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    def stats(self) -> dict[str, int]:
        """Counters accumulated so far (cache hits, truncated inputs, ...); empty when there are none."""
        return {}

    def model_identity(self) -> str | None:
        """The digest its own model's caches are keyed on (the freeze records it where the type's spec says it
        loads a model); None: it has none."""
        return None

    def flush(self) -> None:
        """Write what the retriever's caches hold in memory (harness.retrieval.cache); none here."""
