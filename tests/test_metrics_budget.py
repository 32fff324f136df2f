"""Budget filling: whole chunks in rank order, the crossing chunk cut at a token boundary."""

import pytest

from harness.metrics.budget import TokenCache, fill_budget, needed_prefix
from harness.tokens import cl100k
from metrics_support import WordEncoding, chunks


def kept(units):
    return [(u.rank, u.text, u.n_tokens, u.truncated) for u in units]


@pytest.fixture
def words_tokens():
    return TokenCache(WordEncoding())


def test_last_chunk_is_cut_mid_way(words_tokens):
    ranking = chunks("a b c", "d e f g", "h")  # 3, 4 and 1 tokens
    assert kept(fill_budget(ranking, 5, words_tokens)) == [(1, "a b c", 3, False), (2, "d e ", 2, True)]


def test_budget_exactly_filled_takes_nothing_more(words_tokens):
    ranking = chunks("a b c", "d e f g", "h")
    assert kept(fill_budget(ranking, 7, words_tokens)) == [(1, "a b c", 3, False), (2, "d e f g", 4, False)]


def test_budget_larger_than_everything_retrieved(words_tokens):
    ranking = chunks("a b c", "d e f g", "h")
    units = fill_budget(ranking, 1000, words_tokens)
    assert kept(units) == [(1, "a b c", 3, False), (2, "d e f g", 4, False), (3, "h", 1, False)]
    assert [u.chunk_id for u in units] == ["doc#0000", "doc#0001", "doc#0002"]


def test_budget_counts_source_text_not_indexed_text(words_tokens):
    # indexed_text is "IGNORED PREFIX a b c" (5 tokens); the source text has 3
    assert kept(fill_budget(chunks("a b c"), 3, words_tokens)) == [(1, "a b c", 3, False)]


def test_empty_ranking_selects_nothing(words_tokens):
    assert fill_budget([], 512, words_tokens) == []


@pytest.mark.parametrize("budget", [0, -1, 2.5, True, "512"])
def test_bad_budget_is_refused(words_tokens, budget):
    with pytest.raises(ValueError, match="budget must be a positive integer number of tokens"):
        fill_budget(chunks("a"), budget, words_tokens)


def test_each_text_is_encoded_once(words_tokens):
    enc = WordEncoding()
    tokens = TokenCache(enc)
    ranking = chunks("a b c", "d e f g", "h")
    for budget in (1, 2, 5, 8, 5, 1):
        fill_budget(ranking, budget, tokens)
    assert enc.encode_calls == 3


class Exhaustible:
    """A ranking that fails the test if read past `limit` items."""

    def __init__(self, items, limit):
        self.items, self.limit = items, limit

    def __iter__(self):
        for i, item in enumerate(self.items):
            assert i < self.limit, f"read item {i + 1} of the ranking, only {self.limit} were needed"
            yield item


def test_needed_prefix_reads_only_what_budget_and_k_need(words_tokens):
    ranking = chunks(*(f"w{i} x y" for i in range(50)))  # 3 tokens each
    # 7 tokens need 3 chunks; k = 5 needs 5, but only the first 3 are encoded
    head, counts = needed_prefix(Exhaustible(ranking, 5), 7, 5, words_tokens)
    assert (len(head), counts) == (5, [3, 3, 3])
    assert len(words_tokens) == 3
    # 16 tokens need 6 chunks; k = 1 needs 1
    head, counts = needed_prefix(Exhaustible(ranking, 6), 16, 1, words_tokens)
    assert (len(head), counts) == (6, [3] * 6)


# --- the real tokenizer (cl100k_base) ---

FOX = "The quick brown fox jumps over the lazy dog."  # The| quick| brown| fox| jumps| over| the| lazy| dog|.


def test_cl100k_counts_and_cuts_at_a_token_boundary():
    tokens = TokenCache()
    assert tokens.count(FOX) == 10
    units = fill_budget(chunks(FOX, FOX), 14, tokens)
    assert kept(units) == [(1, FOX, 10, False), (2, "The quick brown fox", 4, True)]


def test_cl100k_cut_inside_a_word_keeps_the_token_prefix():
    tokens = TokenCache()
    ids = cl100k().encode_ordinary("tokenization rules")
    assert [cl100k().decode([i]) for i in ids] == ["token", "ization", " rules"]
    assert kept(fill_budget(chunks("tokenization rules"), 1, tokens)) == [(1, "token", 1, True)]


def test_cl100k_counts_special_token_strings_as_text():
    tokens = TokenCache()
    text = "end <|endoftext|> here"
    assert tokens.count(text) == len(cl100k().encode(text, disallowed_special=()))
    assert fill_budget(chunks(text), 1000, tokens)[0].text == text


def test_cl100k_cut_inside_a_character_decodes_to_the_replacement_character():
    # "a 🦜 bird" is a| \xf0\x9f|\xa6|\x9c| bird: two tokens end inside the parrot's UTF-8 bytes
    tokens = TokenCache()
    assert tokens.count("a 🦜 bird") == 5
    assert [tokens.prefix("a 🦜 bird", n) for n in range(6)] == [
        "",
        "a",
        "a \ufffd",
        "a \ufffd",
        "a 🦜",
        "a 🦜 bird",
    ]
    assert kept(fill_budget(chunks("naïve café", "x"), 3, tokens)) == [(1, "naïve", 3, True)]
