"""Assembler options, the lab BM25 tokeniser and the question-evidence adapter (issue 16)."""

import pytest

from harness.data.model import Chunk
from harness.data.question_evidence import lab_questions
from harness.errors import InputError
from harness.metrics.assembly import assemble, word_prefix
from harness.metrics.budget import TokenCache, fill_budget
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.lab_tokens import lab_tokens, stem


def chunk(i, text):
    return Chunk("d", f"d#{i}", text, ((0, len(text)),), "", 1, 1, ("paragraph",))


BIG = chunk(0, "alpha beta gamma delta epsilon zeta eta theta")  # 8 words
SMALL = chunk(1, "iota kappa lambda")  # 3 words
TINY = chunk(2, "mu nu")  # 2 words


def test_skip_lets_a_lower_ranked_chunk_that_fits_take_the_space():
    picked = assemble([SMALL, BIG, TINY], 6, unit="words", overflow="skip")
    assert [p.chunk_id for p in picked] == ["d#1", "d#2"]
    assert [p.rank for p in picked] == [1, 3] and sum(p.size for p in picked) == 5


def test_cut_truncates_the_crossing_chunk_at_a_word_and_stops():
    picked = assemble([SMALL, BIG, TINY], 6, unit="words", overflow="cut")
    assert [(p.chunk_id, p.text, p.truncated) for p in picked] == [
        ("d#1", "iota kappa lambda", False),
        ("d#0", "alpha beta gamma", True),
    ]
    assert word_prefix("a, b. c", 2) == "a, b"


def test_tokens_cut_without_novelty_is_exactly_fill_budget():
    tokens = TokenCache()
    chunks = [BIG, SMALL, TINY]
    units = fill_budget(chunks, 10, tokens)
    picked = assemble(chunks, 10, unit="tokens", overflow="cut", tokens=tokens)
    assert [(p.chunk_id, p.text, p.size, p.truncated) for p in picked] == [
        (u.chunk_id, u.text, u.n_tokens, u.truncated) for u in units
    ]


def test_novelty_filter_skips_a_chunk_less_than_30_percent_new():
    first = chunk(0, "one two three four five six seven eight nine ten")
    repeat = chunk(1, "one two three four five six seven eight nine eleven twelve")  # 2 of 11 new: 18%
    fresh = chunk(2, "one two three four five six seven eleven twelve thirteen")  # 3 of 10 new: 30%
    picked = assemble([first, repeat, fresh], 100, unit="words", overflow="skip", novelty=0.3)
    assert [p.chunk_id for p in picked] == ["d#0", "d#2"]
    assert len(assemble([first, repeat, fresh], 100, unit="words", overflow="skip")) == 3


def test_assembler_options_are_checked():
    with pytest.raises(InputError, match="unit must be one of tokens, words, got 'chars'"):
        assemble([BIG], 5, unit="chars")
    with pytest.raises(InputError, match="overflow must be one of cut, skip"):
        assemble([BIG], 5, overflow="drop")


@pytest.mark.parametrize(
    "word, stemmed",
    [("applies", "appli"), ("coming", "com"), ("booked", "book"), ("rules", "rul"), ("rule", "rule"),
     ("tools", "tool"), ("bus", "bus"), ("sing", "sing"), ("glasses", "glass")],
)
def test_light_stemmer_strips_one_suffix_from_words_longer_than_four(word, stemmed):
    assert stem(word) == stemmed


def test_lab_tokens_drop_stop_words_then_stem():
    assert lab_tokens("What rule applies on the terrace?") == ["rule", "appli", "terrace"]
    assert lab_tokens("The tools", stop_words=False, stemming=False) == ["the", "tools"]


def test_bm25_tokeniser_option_tokenises_queries_like_chunks():
    texts = ["booking the laser", "quiet hours", "open door"]
    chunks = [
        Chunk("d", f"d#{i}", t, ((0, len(t)),), "", 1, 1, (), indexed_text=t) for i, t in enumerate(texts)
    ]
    plain = BM25Retriever("b", k1=1.2).index("s", chunks).scores("the booked")
    stemmed = BM25Retriever("b", k1=1.2, tokenize=lab_tokens).index("s", chunks).scores("the booked")
    # plain: only "the" matches; lab tokens: "the" is dropped and booked/booking meet as "book"
    assert plain[0] > 0 and stemmed[0] > 0 and plain[0] != stemmed[0]
    assert plain[1:].tolist() == stemmed[1:].tolist() == [0.0, 0.0]
    assert BM25Retriever("b", k1=1.2, tokenize=lab_tokens).index("s", chunks).scores("the").tolist() == [
        0.0,
        0.0,
        0.0,
    ]


def test_adapter_locates_evidence_as_exact_spans():
    text = "Intro. The gate closes at ten. Bye."
    (q,) = lab_questions(
        text, [{"question": "When?", "evidence": ["The gate closes at ten."], "split": "train"}], doc_id="d"
    )
    (s, e), = q.spans
    assert text[s:e] == "The gate closes at ten." and q.split == "train" and q.question.qid == "q001"


def test_adapter_names_a_missing_evidence_string():
    items = [
        {
            "question": "When?",
            "evidence": ["The gate closes at ten.", "The gate opens at nine."],
            "split": "held-out",
        }
    ]
    with pytest.raises(
        InputError,
        match=r"qe.json \(record 0\): evidence string not found in the document: 'The gate opens at nine.'",
    ):
        lab_questions("The gate closes at ten.", items, doc_id="d", path="qe.json")


@pytest.mark.parametrize(
    "item, message",
    [
        ({"question": "", "evidence": ["a"], "split": "train"}, "'question' must be a non-empty string"),
        ({"question": "q", "evidence": [], "split": "train"}, "'evidence' must be a non-empty list"),
        (
            {"question": "q", "evidence": ["a"], "split": "test"},
            "'split' must be one of train, held-out, got 'test'",
        ),
    ],
)
def test_adapter_rejects_malformed_records(item, message):
    with pytest.raises(InputError, match=message):
        lab_questions("a", [item], doc_id="d")
