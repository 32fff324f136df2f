"""BM25 reproducing rank_bm25.BM25Okapi score for score, vectorised over per-scope posting lists.

rank_bm25 semantics kept exactly: idf = ln(N - df + 0.5) - ln(df + 0.5); a negative idf is replaced by
epsilon x (mean idf over the vocabulary); a query token counts once per occurrence; unknown tokens add 0.
Contributions are added token by token in query order, as rank_bm25 does, so scores match bit for bit.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

from harness.data.model import Chunk
from harness.retrieval.base import Ranking, Retriever, ScopeIndex
from harness.tokens import words


class BM25Index(ScopeIndex):
    def __init__(
        self,
        scope_key: str,
        token_lists: Sequence[Sequence[str]],
        *,
        k1: float,
        b: float,
        epsilon: float,
        tokenize: Callable[[str], list[str]] = words,
    ):
        super().__init__(scope_key, len(token_lists))
        self._tokenize = tokenize  # queries must be tokenised like the chunks were
        # term -> column, in order of first occurrence (the order of rank_bm25's dict); C-speed iteration
        first_seen = dict.fromkeys(itertools.chain.from_iterable(token_lists))
        self.vocabulary: dict[str, int] = {t: i for i, t in enumerate(first_seen)}
        doc_len = np.array([len(t) for t in token_lists], dtype=np.int64)
        n_docs, n_terms, n_tokens = len(token_lists), len(self.vocabulary), int(doc_len.sum())
        term_ids = np.fromiter(map(self.vocabulary.__getitem__, itertools.chain.from_iterable(token_lists)), np.int64, n_tokens)
        doc_ids = np.repeat(np.arange(n_docs, dtype=np.int64), doc_len)
        # posting lists: one (term, chunk) pair per distinct occurrence, sorted by term then chunk, with its
        # count (a CSC matrix built with numpy alone: scipy.sparse costs a quarter second to import)
        pairs, freq = np.unique(term_ids * max(n_docs, 1) + doc_ids, return_counts=True)
        cols, rows = np.divmod(pairs, max(n_docs, 1))
        indptr = np.searchsorted(cols, np.arange(n_terms + 1))
        self.idf = _okapi_idf(np.diff(indptr), n_docs, epsilon)
        doc_len = doc_len.astype(np.float64)
        avgdl = doc_len.sum() / n_docs if n_docs else 0.0
        # Same expression, same operation order as rank_bm25.get_scores, so each contribution is bit-identical.
        length_norm = k1 * (1 - b + b * doc_len / avgdl) if avgdl > 0 else np.zeros(n_docs)
        freq = freq.astype(np.float64)
        weights = self.idf[cols] * (freq * (k1 + 1) / (freq + length_norm[rows]))
        self._indptr, self._rows, self._weights = indptr, rows, weights

    def scores(self, query: str) -> np.ndarray:
        cols = [c for c in map(self.vocabulary.get, self._tokenize(query)) if c is not None]
        if not cols:
            return np.zeros(self.n_chunks, dtype=np.float64)
        # one pass over the query's posting lists; bincount adds each chunk's contributions in input order,
        # i.e. token by token in query order, as rank_bm25 does (a term absent from a chunk adds exactly 0)
        spans = [slice(self._indptr[c], self._indptr[c + 1]) for c in cols]
        rows = np.concatenate([self._rows[s] for s in spans])
        weights = np.concatenate([self._weights[s] for s in spans])
        return np.bincount(rows, weights=weights, minlength=self.n_chunks).astype(np.float64, copy=False)

    def search(self, query: str) -> Ranking:
        # a fresh array of finite sums (no NaN to check, nobody else holds it): ranked lazily as it is
        return Ranking.lazy(self.scores(query))


def _okapi_idf(doc_freq: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """rank_bm25's idf with its floor; math.log per distinct df and a sequential mean, as rank_bm25 computes them."""
    if len(doc_freq) == 0:
        return np.zeros(0)
    by_df = {int(df): math.log(n_docs - df + 0.5) - math.log(df + 0.5) for df in np.unique(doc_freq)}
    idf = np.array([by_df[int(df)] for df in doc_freq], dtype=np.float64)
    average = sum(idf.tolist()) / len(idf)  # left-to-right over first-occurrence order, like rank_bm25
    idf[idf < 0] = epsilon * average
    return idf


class BM25Retriever(Retriever):
    def __init__(
        self,
        name: str,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        tokenize: Callable[[str], list[str]] = words,
        tokens_label: str = "lowercase [a-z0-9]+",
    ):
        super().__init__(name)
        self.k1, self.b, self.epsilon = float(k1), float(b), float(epsilon)
        self.tokenize, self.tokens_label = tokenize, tokens_label

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> BM25Index:
        return BM25Index(
            scope_key,
            [self.tokenize(c.indexed_text) for c in chunks],
            k1=self.k1,
            b=self.b,
            epsilon=self.epsilon,
            tokenize=self.tokenize,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "type": "bm25",
            "implementation": "vectorised rank_bm25.BM25Okapi",
            "tokens": self.tokens_label,
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
        }
