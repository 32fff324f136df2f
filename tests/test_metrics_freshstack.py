"""FreshStack-like metrics on hand-built cases (one token per word)."""

import pytest

from harness.metrics.registry import score_question
from metrics_support import chunks, question, word_cache

BUDGETS = (6, 11, 20)
G1 = "g1 g2 g3 g4 g5 g6 g7"  # 3 grams
G2 = "h1 h2 h3 h4 h5"  # 1 gram; N_G = 4


def score(q, ranking, budgets=BUDGETS):
    return dict(score_question("freshstack", q, ranking, budgets, cache=word_cache()))


def filler(i):
    return f"x{i}a x{i}b x{i}c x{i}d x{i}e x{i}f"  # 6 tokens, 2 grams, none gold


def test_hand_computed_all_eleven_values():
    got = score(question(G1, G2), chunks(filler(0), G1, G2))
    assert got == {
        "prec@6t": 0.0, "rec@6t": 0.0,  # filler only: 2 grams, none gold
        "prec@11t": 1 / 3, "rec@11t": 1 / 4,  # + "g1 g2 g3 g4 g5 " -> 1 gold gram of 3
        "prec@20t": 4 / 6, "rec@20t": 1.0,  # 18 tokens, everything whole
        "hit@1": 0.0, "hit@3": 1.0, "hit@5": 1.0, "hit@10": 1.0,
        "mrr@10": 0.5,
    }


def test_relevant_chunk_at_rank_three():
    got = score(question(G1), chunks(filler(0), filler(1), G1))
    assert [got[m] for m in ("hit@1", "hit@3", "hit@5", "hit@10", "mrr@10")] == [0.0, 1.0, 1.0, 1.0, 1 / 3]


def test_relevant_chunk_below_rank_ten_counts_nowhere():
    got = score(question(G1), chunks(*(filler(i) for i in range(10)), G1))
    assert (got["hit@10"], got["mrr@10"]) == (0.0, 0.0)


def test_relevance_needs_at_least_half_of_the_chunks_grams():
    gold = question(G1)
    half = score(gold, chunks("g1 g2 g3 g4 g5 g6 z1 z2"))  # 2 gold of 4
    assert half["hit@1"] == 1.0
    third = score(gold, chunks("g1 g2 g3 g4 g5 z1 z2"))  # 1 gold of 3
    assert third["hit@1"] == 0.0


def test_chunk_without_grams_is_not_relevant():
    assert score(question(G1), chunks("g1 g2 g3 g4"))["mrr@10"] == 0.0


def test_gold_grams_never_span_two_spans():
    # this chunk's grams all straddle the end of G1 and the start of G2
    got = score(question(G1, G2), chunks("g4 g5 g6 g7 h1 h2 h3"))
    assert (got["prec@20t"], got["rec@20t"], got["hit@1"]) == (0.0, 0.0, 0.0)


def test_five_grams_never_span_two_units():
    got = score(question(G2), chunks("h1 h2 h3", "h4 h5"))
    assert (got["prec@20t"], got["rec@20t"]) == (0.0, 0.0)


def test_repeated_text_counts_once_in_the_selection():
    got = score(question(G1), chunks(G1, G1))
    assert (got["prec@20t"], got["rec@20t"]) == (1.0, 1.0)


def test_empty_ranking_gives_zero_precision_and_recall():
    got = score(question(G1), [])
    assert len(got) == 11 and set(got.values()) == {0.0}


def test_gold_without_any_five_gram_is_refused():
    with pytest.raises(ValueError, match="question 'q1': its gold spans have no word 5-gram"):
        score(question("a b c", "d e f"), chunks("a b c d e f"))
