"""Qasper-like metrics on hand-built cases (one token per word, so every budget cut is visible by eye)."""

import pytest

from harness.metrics.registry import score_question
from metrics_support import chunks, question, word_cache

BUDGETS = (4, 8, 16)


def score(q, ranking, budgets=BUDGETS):
    return dict(score_question("qasper", q, ranking, budgets, cache=word_cache()))


def test_hand_computed_all_fifteen_values():
    # E1 has 8 words -> 4 distinct 5-grams; E2 is short (2 words) and must be contiguous in one unit.
    q = question("e1 e2 e3 e4 e5 e6 e7 e8", "s1 s2")
    ranking = chunks(
        "x e1 e2 e3 e4 e5 e6",  # 7 tokens: 2 of E1's 4 grams (exactly half)
        "s1 y s2",  # 3 tokens: E2's words, but not contiguous
        "z s1 s2",  # 3 tokens: E2 contiguous
        "e4 e5 e6 e7 e8",  # 5 tokens
    )
    got = score(q, ranking)
    assert got == {
        # B=4: first chunk cut to "x e1 e2 e3 " -> no 5-gram, nothing retrieved
        "rec@4t": 0.0, "complete@4t": 0.0, "partial@4t": 0.0,
        # B=8: chunk 1 whole (E1 at half) + chunk 2 cut to "s1 " -> E1 only
        "rec@8t": 0.5, "complete@8t": 0.0, "partial@8t": 1.0,
        # B=16: chunks 1-3 whole (13 tokens) + 3 tokens of chunk 4 -> both
        "rec@16t": 1.0, "complete@16t": 1.0, "partial@16t": 1.0,
        "rec@1": 0.5, "hit@1": 1.0,
        "rec@3": 1.0, "hit@3": 1.0,
        "rec@5": 1.0, "hit@5": 1.0,
    }


def test_short_evidence_matches_inside_one_unit():
    q = question("Gamma, delta")
    assert score(q, chunks("alpha GAMMA delta beta"))["rec@1"] == 1.0


def test_short_evidence_split_across_two_units_is_not_retrieved():
    q = question("gamma delta")
    got = score(q, chunks("alpha gamma", "delta beta"))
    assert got["rec@3"] == 0.0 and got["rec@16t"] == 0.0 and got["hit@5"] == 0.0


def test_short_evidence_needs_whole_words():
    assert score(question("gamma delta"), chunks("gamma deltas"))["rec@1"] == 0.0


def test_four_words_need_contiguity_five_words_need_their_one_gram():
    four = question("a1 a2 a3 a4")
    assert score(four, chunks("a1 a2 a3 x a4"))["rec@1"] == 0.0
    assert score(four, chunks("x a1 a2 a3 a4 y"))["rec@1"] == 1.0
    five = question("a1 a2 a3 a4 a5")
    assert score(five, chunks("a1 a2 a3 a4 x a5"))["rec@1"] == 0.0
    assert score(five, chunks("y a1 a2 a3 a4 a5"))["rec@1"] == 1.0


def test_five_grams_never_span_two_units():
    q = question("e1 e2 e3 e4 e5 e6")  # grams (e1..e5), (e2..e6)
    split = score(q, chunks("e1 e2 e3", "e4 e5 e6"))
    assert split["rec@5"] == 0.0 and split["rec@16t"] == 0.0
    whole = score(q, chunks("e1 e2 e3 e4 e5 e6"))
    assert whole["rec@1"] == 1.0 and whole["rec@8t"] == 1.0


def test_evidence_split_across_chunks_uses_the_union_and_the_half_rule():
    # 9 words -> 5 grams; retrieved needs >= 2.5, i.e. 3 of them
    q = question(" ".join(f"e{i}" for i in range(1, 10)))
    ranking = chunks("e1 e2 e3 e4 e5 e6", "e5 e6 e7 e8 e9")  # grams 1,2 then gram 5
    got = score(q, ranking)
    assert got["rec@1"] == 0.0  # 2 of 5
    assert got["rec@3"] == 1.0  # 3 of 5 over two units
    assert got["rec@8t"] == 0.0  # 6 tokens + "e5 e6 " -> still 2 of 5
    assert got["rec@16t"] == 1.0


def test_unlocated_evidence_stays_in_the_denominator_and_is_matched_by_text():
    q = question("s1 s2", unlocated=("u1 u2 u3 u4 u5 u6",))
    only_located = score(q, chunks("s1 s2"))
    assert (only_located["rec@1"], only_located["complete@4t"], only_located["partial@4t"]) == (0.5, 0.0, 1.0)
    both = score(q, chunks("s1 s2 u1 u2 u3 u4 u5 u6"))
    assert both["rec@1"] == 1.0


def test_repeated_evidence_strings_count_once():
    q = question("s1 s2", "s1 s2", "t1 t2")
    assert score(q, chunks("s1 s2"))["rec@1"] == 0.5


def test_indexed_text_is_never_matched():
    # the helper's chunks carry indexed_text "IGNORED PREFIX <text>"
    assert score(question("ignored prefix"), chunks("s1 s2"))["hit@1"] == 0.0


def test_empty_ranking_gives_zero_everywhere():
    got = score(question("s1 s2", "e1 e2 e3 e4 e5"), [])
    assert len(got) == 15 and set(got.values()) == {0.0}


def test_evidence_without_words_counts_but_is_never_retrieved():
    q = question("s1 s2", "---")
    assert score(q, chunks("--- s1 s2"))["rec@1"] == 0.5


def test_question_without_evidence_is_refused():
    with pytest.raises(ValueError, match="question 'q1' has no evidence strings"):
        score(question(), chunks("a b c"))
