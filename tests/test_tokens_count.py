"""harness.tokens.count_tokens: counted part by part and remembered, it must equal encoding the whole text."""

from __future__ import annotations

import random

import pytest

from harness.tokens import PIECE_BREAK_RE, cl100k, count_tokens, prompt_words, words

# fragments where cl100k's pre-tokenizer is delicate: newline runs, CRLF, indentation, Unicode spaces that
# Python and the tokenizer may class differently, contractions, digit runs, special-token text
FRAGMENTS = [
    "\n",
    "\n\n",
    "\r",
    "\r\n",
    " ",
    "  ",
    "\t",
    "\v",
    "\f",
    "\x1c",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "a",
    "Ab",
    " word",
    "'s",
    "'ll",
    "'",
    "1",
    "123456",
    ":",
    "#",
    "```",
    "- ",
    "é",
    "😀",
    "<|endoftext|>",
]


def whole(text: str) -> int:
    return len(cl100k().encode(text, disallowed_special=()))


def test_counting_part_by_part_equals_encoding_the_whole_text():
    rng = random.Random(0)
    for _ in range(20000):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 40)))
        assert count_tokens(text) == whole(text), repr(text)


@pytest.mark.parametrize(
    "text", ["", "\n", "x\n", "\ny", "x\ny\n", "x\n\n y", " \n\tz", "a:\n\n\nb", "x\r\ny"]
)
def test_edges_count_as_the_whole_text(text):
    assert count_tokens(text) == whole(text)


def test_a_part_remembered_from_one_text_counts_right_in_another():
    document = "# Title\n\nFirst paragraph, with 2024 numbers.\n\n```py\n  code()\n```\nLast line."
    assert len(PIECE_BREAK_RE.split(document)) > 3  # several parts, so the cache is exercised
    for text in (document, "Full document:\n" + document + "\n=====\n", "  " + document, document + "\n\n x"):
        assert count_tokens(text) == whole(text)


def test_counts_stay_exact_when_the_remembered_parts_are_cleared(monkeypatch):
    import harness.tokens as tokens

    monkeypatch.setattr(tokens, "_PART_COUNTS", {})
    monkeypatch.setattr(tokens, "MAX_REMEMBERED_PARTS", 3)
    rng = random.Random(1)
    for _ in range(500):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 30)))
        assert count_tokens(text) == whole(text), repr(text)
        assert len(tokens._PART_COUNTS) <= 3


def test_a_part_and_the_same_part_closed_by_a_newline_are_remembered_apart():
    # "a\nb" is counted as the parts "a\n" and "b"; the text "a" alone is one token, "a\n" two
    import harness.tokens as tokens

    tokens._PART_COUNTS.clear()
    for text in ("a\nb", "a", "a\n\nz", "a"):
        assert count_tokens(text) == whole(text), repr(text)


def test_an_answer_counted_once_is_not_remembered():
    import harness.tokens as tokens
    from harness.tokens import count_tokens_once

    before = len(tokens._PART_COUNTS)
    text = "a one-off answer 9f2c\nwith two lines"
    assert count_tokens_once(text) == whole(text)
    assert len(tokens._PART_COUNTS) == before


def test_a_text_met_again_is_not_split_again(monkeypatch):
    import harness.tokens as tokens

    splits = []

    class Counting:
        def split(self, text):
            splits.append(text)
            return tokens.PIECE_BREAK_RE_REAL.split(text)

    monkeypatch.setattr(tokens, "_PART_COUNTS", {})
    monkeypatch.setattr(tokens, "PIECE_BREAK_RE_REAL", tokens.PIECE_BREAK_RE, raising=False)
    monkeypatch.setattr(tokens, "PIECE_BREAK_RE", Counting())
    document = "# Title\nA paragraph.\n\n- a list\n- of items\nclosing line"
    assert [count_tokens(document) for _ in range(3)] == [whole(document)] * 3
    assert splits == [document]
    # its parts were remembered as parts: a text that is one of them counts right, unsplit or split
    assert count_tokens("A paragraph.\n") == whole("A paragraph.\n")


WORD_FRAGMENTS = ["\n", "\n\n", "\r\n", " ", "\t", "\u3000", "a", "Ab", "ΟΔΟΣ", "Σ", "σ", "İ", "K", "ß", "1",
                  "x2", "-", "é", "ǅ", "😀"]


def test_prompt_words_line_by_line_equal_the_words_of_the_joined_prompt():
    rng = random.Random(0)
    for _ in range(5000):
        contents = ["".join(rng.choice(WORD_FRAGMENTS) for _ in range(rng.randint(0, 20)))
                    for _ in range(rng.randint(0, 3))]
        assert prompt_words(contents) == words(" ".join(contents)), contents


def test_prompt_words_of_an_edited_line_are_its_own():
    assert prompt_words(["Set up the guide\nthen run"]) == ["set", "up", "the", "guide", "then", "run"]
    assert prompt_words(["Set up the guides\nthen run"]) == ["set", "up", "the", "guides", "then", "run"]


def test_prompt_words_forget_every_line_when_full_and_stay_the_same(monkeypatch):
    import harness.tokens as tokens

    monkeypatch.setattr(tokens, "MAX_REMEMBERED_LINE_CHARS", 20)
    lines = [f"line {i} of words" for i in range(10)]
    assert prompt_words(["\n".join(lines)]) == words(" ".join(lines))
    assert sum(map(len, tokens._LINE_WORDS)) <= 20
