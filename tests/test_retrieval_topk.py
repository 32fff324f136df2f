"""Lazy rankings: the head a reader asks for is exactly the head of the full (-score, position) order.

BM25 rankings (harness.retrieval.base.Ranking.lazy) order only the top k chunks; these tests compare
every prefix with a stable sort of rank_bm25's own scores and with the full sort the harness used before,
on random corpora and score arrays built to have many ties (repeated chunks, a tiny vocabulary, scores
drawn from a handful of values, zeros and negatives).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from harness.retrieval.base import Ranking, _full_order, ordered_positions, rank_by_score
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.runfile import ranking_block
from harness.tokens import words
from retrieval_support import chunks_of


def stable_order(scores: np.ndarray) -> list[int]:
    """The reference order: by score descending, ties by position (a stable sort, no cleverness)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


tied_scores = st.lists(
    st.sampled_from([0.0, 0.0, 0.0, -0.0, 1.5, 1.5, 2.25, -1.0, 7.0, 1e-300, np.inf]), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(values=tied_scores, k=st.integers(0, 70))
def test_every_head_is_the_head_of_the_stable_order(values, k):
    scores = np.array(values, dtype=np.float64)
    expected = stable_order(scores)
    assert _full_order(scores).tolist() == expected  # the old full sort agrees with the reference
    assert ordered_positions(scores, k).tolist() == expected[:k]
    ranking = rank_by_score(scores)
    order, head_scores = ranking.head(k)
    assert order.tolist() == expected[:k]
    assert head_scores.tolist() == [scores[i] for i in expected[:k]]
    assert ranking.order.tolist() == expected  # the full order after a head was ordered
    assert [ranking.position(r) for r in range(len(scores))] == expected


@settings(max_examples=100, deadline=None)
@given(values=tied_scores)
def test_reading_rank_by_rank_matches_the_full_order(values):
    scores = np.array(values * 5, dtype=np.float64)  # longer than one head step
    ranking = rank_by_score(scores)
    walked = [ranking.position(r) for r in range(len(scores))]  # grows the head by doubling
    assert walked == stable_order(scores)
    with pytest.raises(IndexError):
        ranking.position(len(scores))


def random_corpus(rng: np.random.Generator, n_chunks: int, vocabulary: int) -> list[str]:
    """Short chunks from a tiny vocabulary, a third of them copies of earlier ones: many exact ties."""
    texts: list[str] = []
    for i in range(n_chunks):
        if texts and rng.random() < 0.33:
            texts.append(texts[int(rng.integers(len(texts)))])
        else:
            texts.append(
                " ".join(f"t{int(w)}" for w in rng.integers(0, vocabulary, int(rng.integers(1, 12))))
            )
    return texts


@pytest.mark.parametrize("seed", range(8))
def test_bm25_heads_equal_rank_bm25_scores_and_order(seed):
    rng = np.random.default_rng(seed)
    texts = random_corpus(rng, int(rng.integers(50, 600)), int(rng.integers(5, 60)))
    reference = BM25Okapi([words(t) for t in texts])
    index = BM25Retriever("bm25").index("s", chunks_of(texts))
    queries = [texts[int(rng.integers(len(texts)))] for _ in range(15)] + ["t1 t1 t2", "nothing known", ""]
    for query in queries:
        expected_scores = reference.get_scores(words(query))
        expected = stable_order(expected_scores)
        ranking = index.search(query)
        for k in (1, 10, 100, len(texts)):
            order, scores = ranking.head(k)
            assert order.tolist() == expected[:k], (query, k)
            assert scores.tolist() == [expected_scores[i] for i in expected[:k]], (query, k)  # bit for bit
        assert ranking.order.tolist() == _full_order(np.asarray(expected_scores)).tolist()


def test_a_run_file_head_orders_no_more_than_it_writes():
    scores = np.zeros(10_000)
    scores[[5, 9_000, 17]] = [2.0, 3.0, 2.0]
    ranking = rank_by_score(scores)
    block = ranking_block("q", ranking, [f"c{i}" for i in range(len(scores))], "tag", depth=5)
    assert list(block.chunk_ids) == ["c9000", "c5", "c17", "c0", "c1"]
    assert len(ranking._order) == 5  # the other 9,995 positions were never sorted


def test_eager_ranking_keeps_its_given_order():
    ranking = Ranking(order=np.array([2, 0, 1]), scores=np.array([3.0, 2.0, 1.0]))
    assert ranking.top(2).tolist() == [2, 0] and ranking.position(2) == 1
    assert ranking.scores_by_position().tolist() == [2.0, 1.0, 3.0]
    with pytest.raises(ValueError, match="aligned"):
        Ranking(order=np.array([0, 1]), scores=np.array([1.0]))


def test_rank_by_score_refuses_nan_and_does_not_share_the_callers_array():
    with pytest.raises(ValueError, match="NaN"):
        rank_by_score(np.array([1.0, np.nan]))
    scores = np.array([1.0, 2.0])
    ranking = rank_by_score(scores)
    scores[0] = 5.0
    assert ranking.order.tolist() == [1, 0]


@pytest.mark.parametrize("nonzero_share", [0.0, 0.05, 0.12, 0.13, 0.5, 1.0])
def test_the_full_order_is_the_stable_order_sparse_or_dense(nonzero_share):
    """_full_order takes one of two paths by the share of nonzero scores: both give the reference order."""
    rng = np.random.default_rng(int(nonzero_share * 100))
    n = 400
    values = np.where(
        rng.random(n) < nonzero_share, rng.choice([-2.0, -0.5, 0.25, 1.0, 3.0, np.inf], size=n), 0.0
    )
    values[rng.random(n) < 0.1] = -0.0
    assert _full_order(values).tolist() == stable_order(values)
