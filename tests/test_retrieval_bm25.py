"""BM25 reproduces rank_bm25.BM25Okapi on real chunk sets; ranking ties break by position."""

from __future__ import annotations

import dataclasses
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from harness.retrieval.bm25 import BM25Index, BM25Retriever
from harness.retrieval.bm25_terms import token_list_terms
from harness.tokens import words
from retrieval_support import LARAVEL, chunks_of, laravel_chunks

needs_laravel = pytest.mark.skipif(not LARAVEL.is_dir(), reason=f"real data not present at {LARAVEL}")


@pytest.fixture(scope="module")
def laravel():
    return laravel_chunks()


def _queries(chunks, every=7):
    """Real queries: the opening words of some chunks, plus ones with repeated and unknown words."""
    qs = [" ".join(words(c.text)[:8]) for c in chunks[::every]]
    return qs + ["how do I configure the redis cache driver", "cache cache cache the", "zzzunknownword", ""]


def _assert_same_scores(reference: BM25Okapi, index: BM25Index, query: str):
    """Bit for bit: the run files hold these scores, and must not change with the implementation."""
    expected = reference.get_scores(words(query))
    assert index.scores(query).tobytes() == expected.tobytes(), query


@needs_laravel
def test_scores_equal_rank_bm25_per_page(laravel):
    retriever = BM25Retriever("bm25")
    pages = [p for p in laravel if len(laravel[p]) >= 5]
    assert len(pages) >= 50
    for page in pages:
        chunks = laravel[page]
        reference = BM25Okapi([words(c.indexed_text) for c in chunks])
        index = retriever.index(page, chunks)
        for query in _queries(chunks):
            _assert_same_scores(reference, index, query)


@needs_laravel
def test_scores_equal_rank_bm25_on_pooled_corpus(laravel):
    chunks = [c for page in sorted(laravel) for c in laravel[page]]
    assert len(chunks) > 1000
    reference = BM25Okapi([words(c.indexed_text) for c in chunks])
    index = BM25Retriever("bm25").index("laravel", chunks)
    for query in _queries(chunks, every=97):
        _assert_same_scores(reference, index, query)
        # the ranking is the stable (-score, position) order of rank_bm25's own scores
        expected_order = np.lexsort((np.arange(len(chunks)), -reference.get_scores(words(query))))
        assert index.search(query).order.tolist() == expected_order.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_scores_are_rank_bm25s_bit_for_bit_over_dense_and_sparse_terms(seed):
    # Zipf-like words: a few in most chunks (kept as dense columns), many in a few (posting lists); queries
    # mix both kinds in random order, repeat words and include unknown ones, so any change to the order
    # in which a chunk's contributions are added shows in the last bits
    rng = np.random.default_rng(seed)
    n_chunks, vocabulary = int(rng.integers(30, 400)), int(rng.integers(20, 400))
    p = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
    texts = [" ".join(f"W{w}" for w in rng.choice(vocabulary, size=int(rng.integers(0, 60)), p=p / p.sum()))
             for _ in range(n_chunks)]
    k1, b, epsilon = float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.0, 1.0)), float(rng.uniform(0.0, 0.5))
    reference = BM25Okapi([words(t) for t in texts], k1=k1, b=b, epsilon=epsilon)
    index = BM25Retriever("bm25", k1=k1, b=b, epsilon=epsilon).index("s", chunks_of(texts))
    assert len(index._columns) and len(index._rows)  # both kinds of term are exercised
    for _ in range(40):
        query = " ".join(f"w{w}" for w in rng.choice(vocabulary + 5, size=int(rng.integers(1, 14))))
        _assert_same_scores(reference, index, query)


def test_a_zero_epsilon_floor_scores_plus_zero_like_rank_bm25():
    # every word but "c" is in more than half the chunks: the mean idf is negative, and epsilon 0 floors
    # those idfs at -0.0; rank_bm25 adds +0.0 for them, and so must the dense columns
    texts = ["a b", "a b", "a b c", "a b"]
    reference = BM25Okapi([words(t) for t in texts], epsilon=0.0)
    index = BM25Retriever("bm25", epsilon=0.0).index("s", chunks_of(texts))
    assert reference.average_idf < 0 and len(index._columns) == 3
    for query in ("a", "b a", "c a", "a c", "c", "zz"):
        _assert_same_scores(reference, index, query)


def test_negative_idf_is_floored_at_epsilon_times_mean_idf():
    # "common" is in 3 of 4 chunks: raw idf ln(1.5/3.5) < 0, so rank_bm25 replaces it by eps * mean idf
    texts = ["common alpha", "common beta", "common gamma delta", "epsilon zeta"]
    tokens = [words(t) for t in texts]
    reference = BM25Okapi(tokens, epsilon=0.4)
    index = BM25Index("s", token_list_terms(tokens), k1=1.5, b=0.75, epsilon=0.4)
    col = index.vocabulary["common"]
    assert index.idf[col] == pytest.approx(0.4 * reference.average_idf, rel=1e-12)
    assert index.idf[col] == pytest.approx(reference.idf["common"], rel=1e-12)
    np.testing.assert_allclose(
        index.scores("common alpha"), reference.get_scores(["common", "alpha"]), rtol=1e-12
    )


def test_ranking_is_full_and_ties_break_by_position():
    chunks = chunks_of(["apple pie", "banana split", "apple pie", "cherry tart", "banana split"])
    ranking = BM25Retriever("bm25").index("s", chunks).search("banana")
    # chunks 1 and 4 score equal and positive; the three zero-score chunks follow in position order
    assert ranking.order.tolist() == [1, 4, 0, 2, 3]
    assert ranking.scores[0] == ranking.scores[1] > 0
    assert ranking.scores[2:].tolist() == [0.0, 0.0, 0.0]


def test_indexes_indexed_text_not_source_text():
    fillers = chunks_of(["filler text", "more filler", "heading"], "t/other.md")
    chunk = dataclasses.replace(
        chunks_of(["source words only"])[0], indexed_text="Title: rendered\n\nsource words only"
    )
    ranking = BM25Retriever("bm25").index("s", [*fillers, chunk]).search("rendered")
    assert ranking.order.tolist() == [3, 0, 1, 2] and ranking.scores[0] > 0
    assert BM25Retriever("bm25").index("s", [*fillers, chunk]).search("title").scores[0] > 0


def test_search_many_equals_search():
    chunks = chunks_of(["red fish", "blue fish", "one fish two fish", "red blue"])
    index = BM25Retriever("bm25").index("s", chunks)
    queries = ["red fish", "blue", "fish fish", "nothing here"]
    for single, batch in zip([index.search(q) for q in queries], index.search_many(queries)):
        assert single.order.tolist() == batch.order.tolist()
        assert single.scores.tolist() == batch.scores.tolist()


def test_empty_scope_and_empty_chunks():
    assert len(BM25Retriever("bm25").index("s", []).search("anything")) == 0
    ranking = BM25Retriever("bm25").index("s", chunks_of(["", "   ", "!!"])).search("word")
    assert ranking.order.tolist() == [0, 1, 2] and ranking.scores.tolist() == [0.0, 0.0, 0.0]


def test_ranking_arrays_are_read_only():
    ranking = BM25Retriever("bm25").index("s", chunks_of(["a b", "b c"])).search("b")
    with pytest.raises(ValueError, match="read-only"):
        ranking.order[0] = 1
