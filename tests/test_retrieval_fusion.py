"""Full rankings by (-score, position) and reciprocal rank fusion against hand computations."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.retrieval.base import Ranking, ScopeIndex, rank_by_score
from harness.retrieval.hybrid import RRFRetriever, reciprocal_rank_fusion
from retrieval_support import chunks_of


def ranking(order, n=None) -> Ranking:
    order = np.array(order, dtype=np.int64)
    return Ranking(order=order, scores=-np.arange(len(order), dtype=np.float64))


@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0, 1e-300, -3.0]), max_size=40))
def test_rank_by_score_is_the_stable_minus_score_position_order(values):
    scores = np.array(values, dtype=np.float64)
    result = rank_by_score(scores)
    expected = np.lexsort((np.arange(len(scores)), -scores))
    assert result.order.tolist() == expected.tolist()
    assert result.scores.tolist() == scores[expected].tolist()


def test_rank_by_score_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        rank_by_score(np.array([1.0, np.nan]))


def test_rrf_hand_computation_with_ties():
    # A ranks chunks 2,0,3,1; B ranks 3,1,2,0. Chunk 2: 1/61 + 1/63; chunk 3: 1/63 + 1/61 (a tie, 2 first
    # by position); chunk 0: 1/62 + 1/64; chunk 1: 1/64 + 1/62 (a tie, 0 first).
    fused = reciprocal_rank_fusion([ranking([2, 0, 3, 1]), ranking([3, 1, 2, 0])], k=60)
    assert fused.order.tolist() == [2, 3, 0, 1]
    high, low = 1 / 61 + 1 / 63, 1 / 62 + 1 / 64
    np.testing.assert_allclose(fused.scores, [high, high, low, low], rtol=1e-15)
    assert fused.scores[0] == fused.scores[1] and fused.scores[2] == fused.scores[3]


def test_rrf_k_changes_scores():
    fused = reciprocal_rank_fusion([ranking([1, 0]), ranking([1, 0])], k=1)
    assert fused.order.tolist() == [1, 0]
    np.testing.assert_allclose(fused.scores, [2 / 2, 2 / 3], rtol=1e-15)


def test_rrf_retriever_order_does_not_break_ties():
    # The same multiset of ranks must give the same float whatever order the retrievers are listed in.
    a, b, c = ranking([0, 1, 2, 3, 4]), ranking([4, 3, 2, 1, 0]), ranking([2, 4, 0, 3, 1])
    first = reciprocal_rank_fusion([a, b, c])
    for permuted in ([c, b, a], [b, a, c], [c, a, b]):
        other = reciprocal_rank_fusion(permuted)
        assert other.order.tolist() == first.order.tolist()
        assert other.scores.tolist() == first.scores.tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 25).flatmap(lambda n: st.lists(st.permutations(range(n)), min_size=2, max_size=4)))
def test_rrf_matches_exact_fractions(orders):
    fused = reciprocal_rank_fusion([ranking(o) for o in orders], k=60)
    n = len(orders[0])
    exact = [sum(Fraction(1, 60 + o.index(c) + 1) for o in orders) for c in range(n)]
    expected = sorted(range(n), key=lambda c: (-exact[c], c))
    assert fused.order.tolist() == expected


@pytest.mark.parametrize(
    "rankings, k, message",
    [
        ([ranking([0, 1])], 60, "at least two rankings"),
        ([ranking([0, 1]), ranking([0, 1, 2])], 60, "same chunks"),
        ([ranking([0, 1]), ranking([1, 0])], 0, "k must be positive"),
    ],
)
def test_rrf_rejects_bad_input(rankings, k, message):
    with pytest.raises(ValueError, match=message):
        reciprocal_rank_fusion(rankings, k=k)


class _FixedIndex(ScopeIndex):
    def __init__(self, order):
        super().__init__("s", len(order))
        self.order = order

    def search(self, query):
        return ranking(self.order)


class _Fixed:
    def __init__(self, name, order):
        self.name, self.order = name, order

    def index(self, scope_key, chunks):
        return _FixedIndex(self.order)


def test_rrf_retriever_fuses_its_members_for_every_query():
    retriever = RRFRetriever("hybrid", [_Fixed("a", [2, 0, 3, 1]), _Fixed("b", [3, 1, 2, 0])], k=60)
    index = retriever.index("s", chunks_of(["w", "x", "y", "z"]))
    assert [r.order.tolist() for r in index.search_many(["q1", "q2"])] == [[2, 3, 0, 1]] * 2
    assert retriever.describe() == {"type": "rrf", "k": 60, "of": ["a", "b"]}
    with pytest.raises(ValueError, match="at least two retrievers"):
        RRFRetriever("hybrid", [_Fixed("a", [0])])


def test_rank_sets_with_equal_exact_sums_tie_and_fall_back_to_position():
    # chunk 8 at ranks 18, 3, 3, 3 and chunk 9 at ranks 10, 5, 5, 5: 1/78 + 3/63 = 1/70 + 3/65 exactly,
    # but the float sums differ in the last bit, which ordered 9 before 8
    first = [0, 1, 2, 3, 4, 5, 6, 10, 7, 9, 11, 12, 13, 14, 15, 16, 17, 8, 18, 19]
    other = [0, 1, 8, 3, 9, 5, 6, 7, 2, 4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    fused = reciprocal_rank_fusion([ranking(first), ranking(other), ranking(other), ranking(other)], k=60)
    order = fused.order.tolist()
    at = order.index(8)
    assert order[at + 1] == 9 and fused.scores[at] == fused.scores[at + 1]  # scores in rank order
