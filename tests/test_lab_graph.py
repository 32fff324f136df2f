"""Chunk-graph scoring against a hand-computed 4-node graph (issue 16)."""

import numpy as np
import pytest

from harness.retrieval.graph import (
    GraphParams,
    chunk_graph,
    graph_ranking,
    graph_scores,
    personalised_pagerank,
    seed_vector,
)

# a star: node 0 joined to 1, 2 and 3 with weight 1
STAR = np.array([[0, 1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]], dtype=float)


def test_pagerank_on_a_star_matches_the_hand_computed_fixed_point():
    # seed node 1 only. With restart 1/2: p1 = 1/2 + c/6, p2 = p3 = c/6 and c = (p1 + p2 + p3)/2,
    # so c = 1/4 + c/4, c = 1/3, p1 = 5/9, p2 = p3 = 1/18 (25 iterations: error below 2^-25)
    p = personalised_pagerank(STAR, np.array([0, 1.0, 0, 0]))
    assert p == pytest.approx([1 / 3, 5 / 9, 1 / 18, 1 / 18], abs=1e-6)


def test_blended_score_is_06_min_max_base_plus_04_normalised_mass():
    scores = graph_scores(np.array([0, 2.0, 0, 0]), STAR)
    # base [0, 1, 0, 0]; mass / max = [3/5, 1, 1/10, 1/10]
    assert scores == pytest.approx([0.24, 1.0, 0.04, 0.04], abs=1e-6)
    assert graph_ranking(np.array([0, 2.0, 0, 0]), STAR).order.tolist() == [1, 0, 2, 3]  # tie 2/3 by position


def test_restart_vector_uses_the_top_three_positive_scores_weighted_by_score():
    base = np.array([1.0, 4.0, 0.0, 3.0, 1.0])
    assert seed_vector(base, 3) == pytest.approx([1 / 8, 4 / 8, 0, 3 / 8, 0])  # tie 0/4 goes to position 0
    assert seed_vector(np.zeros(3), 3).tolist() == [0, 0, 0]


def test_edge_types_add_up_and_each_can_be_switched_off():
    sections = ["A", "A", "", "B"]
    tokens = [frozenset("ab"), frozenset("ab"), frozenset("c"), frozenset("d")]
    w = chunk_graph(sections, [(0, 3)], tokens)
    # (0,1): adjacency 1 + same section 0.5 + lexical 0.5; (0,3): xref 1; (1,2), (2,3): adjacency
    expected = np.array([[0, 2, 0, 1], [2, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]], dtype=float)
    assert np.array_equal(w, expected)
    off = chunk_graph(sections, [(0, 3)], tokens, GraphParams().without("xref", "lexical"))
    assert off[0, 1] == 1.5 and off[0, 3] == 0
    with pytest.raises(ValueError, match="unknown edge type"):
        GraphParams().without("citation")


def test_a_chunk_without_edges_keeps_only_its_restart_mass():
    w = np.zeros((3, 3))
    w[0, 1] = w[1, 0] = 1
    p = personalised_pagerank(w, np.array([0, 0, 1.0]))
    assert p == pytest.approx([0, 0, 0.5])
