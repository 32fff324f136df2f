"""BM25 reproducing rank_bm25.BM25Okapi score for score, over per-scope posting lists.

rank_bm25 semantics kept exactly: idf = ln(N - df + 0.5) - ln(df + 0.5); a negative idf is replaced by
epsilon x (mean idf over the vocabulary); a query token counts once per occurrence; unknown tokens add 0.
Contributions are added token by token in query order, as rank_bm25 does, so scores match bit for bit.

A term in at least a quarter of the chunks keeps its contributions as a dense column: adding it to the
scores is one vector addition, cheaper than scattering that many postings, and it takes at most twice
the memory of its postings (16 bytes each). Rarer terms keep posting lists. A dense column holds 0.0
where the term is absent, and x + 0.0 == x, so both kinds add the same values in the same order.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from harness.data.model import Chunk
from harness.retrieval.base import Ranking, Retriever, ScopeIndex
from harness.retrieval.bm25_terms import CorpusTerms, corpus_terms
from harness.tokens import words

DENSE_SHARE = 4  # a term in at least 1/DENSE_SHARE of the chunks is stored as a dense column


class BM25Index(ScopeIndex):
    def __init__(
        self,
        scope_key: str,
        corpus: CorpusTerms,
        *,
        k1: float,
        b: float,
        epsilon: float,
        tokenize: Callable[[str], list[str]] = words,
    ):
        n_docs, n_terms = len(corpus.lengths), len(corpus.vocabulary)
        super().__init__(scope_key, n_docs)
        self._tokenize = tokenize  # queries must be tokenised like the chunks were
        self.vocabulary: dict[str, int] = {t: i for i, t in enumerate(corpus.vocabulary)}
        terms, rows, freq = corpus.postings()
        doc_freq = np.bincount(terms, minlength=n_terms)
        self.idf = _okapi_idf(doc_freq, n_docs, epsilon)
        doc_len = corpus.lengths.astype(np.float64)
        avgdl = doc_len.sum() / n_docs if n_docs else 0.0
        # Same expression, same operation order as rank_bm25.get_scores, so each contribution is
        # bit-identical.
        length_norm = k1 * (1 - b + b * doc_len / avgdl) if avgdl > 0 else np.zeros(n_docs)
        freq = freq.astype(np.float64)
        weights = self.idf[terms] * (freq * (k1 + 1) / (freq + length_norm[rows]))

        dense_terms = np.flatnonzero(doc_freq * DENSE_SHARE >= max(n_docs, 1))
        slot = np.full(n_terms, -1, dtype=np.int64)
        slot[dense_terms] = np.arange(len(dense_terms))
        in_dense = slot[terms] >= 0
        self._columns = np.zeros((len(dense_terms), n_docs), dtype=np.float64)
        self._columns[slot[terms[in_dense]], rows[in_dense]] = weights[in_dense]
        self._dense_slot: dict[int, int] = dict(zip(dense_terms.tolist(), range(len(dense_terms))))
        sparse = ~in_dense
        self._rows, self._weights = rows[sparse], weights[sparse]
        # Python ints: a query reads a few of them, scalar by scalar
        self._indptr: list[int] = np.concatenate(
            ([0], np.cumsum(np.bincount(terms[sparse], minlength=n_terms)))
        ).tolist()

    def scores(self, query: str) -> np.ndarray:
        scores = None
        for term in map(self.vocabulary.get, self._tokenize(query)):
            if term is None:
                continue
            slot = self._dense_slot.get(term)
            if slot is not None:
                if scores is None:  # 0.0 + x in one pass instead of zeroing first (x + 0.0 is the same sum)
                    scores = self._columns[slot] + 0.0
                else:
                    scores += self._columns[slot]
            else:  # a term's postings name each chunk once, so the scatter adds once per chunk
                if scores is None:
                    scores = np.zeros(self.n_chunks, dtype=np.float64)
                span = slice(self._indptr[term], self._indptr[term + 1])
                scores[self._rows[span]] += self._weights[span]
        return np.zeros(self.n_chunks, dtype=np.float64) if scores is None else scores

    def search(self, query: str) -> Ranking:
        # a fresh array of finite sums (no NaN to check, nobody else holds it): ranked lazily as it is
        return Ranking.lazy(self.scores(query))


def _okapi_idf(doc_freq: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """rank_bm25's idf with its floor; math.log per distinct df and a sequential mean, as rank_bm25 computes
    them."""
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
        return self._memoised(scope_key, chunks, lambda: BM25Index(
            scope_key,
            corpus_terms([c.indexed_text for c in chunks], self.tokenize),
            k1=self.k1,
            b=self.b,
            epsilon=self.epsilon,
            tokenize=self.tokenize,
        ))

    def describe(self) -> dict[str, Any]:
        return {
            "type": "bm25",
            "implementation": "vectorised rank_bm25.BM25Okapi",
            "tokens": self.tokens_label,
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
        }
