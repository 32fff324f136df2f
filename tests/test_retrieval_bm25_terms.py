"""Term numbering for BM25: the fast path for `words` gives the tokens and the first-occurrence vocabulary
of tokenising each chunk with `words`, on ASCII and non-ASCII text alike."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.retrieval.bm25_terms import corpus_terms, token_list_terms
from harness.tokens import words

# ASCII letters of both cases, digits, punctuation (the chunk separator "|" among it), whitespace and
# control characters, and non-ASCII characters whose lowercase is or contains ASCII (Kelvin sign, dotted I)
ALPHABET = "aZz09 |\t\n\x00\x0b-_.'Kİé€ß\u00a0"
texts = st.lists(st.text(alphabet=ALPHABET, max_size=40), max_size=12)


def expanded(terms) -> list[list[str]]:
    """Each chunk's tokens, read back from the term ids."""
    ends = np.cumsum(terms.lengths)
    return (
        [[terms.vocabulary[i] for i in ids] for ids in np.split(terms.term_ids, ends[:-1])]
        if len(ends)
        else []
    )


@settings(max_examples=300, deadline=None)
@given(texts=texts)
def test_fast_path_equals_tokenising_each_chunk_with_words(texts):
    fast = corpus_terms(texts, words)
    reference = token_list_terms([words(t) for t in texts])
    assert fast.vocabulary == reference.vocabulary  # first-occurrence order
    assert fast.lengths.tolist() == reference.lengths.tolist() == [len(words(t)) for t in texts]
    assert fast.term_ids.tolist() == reference.term_ids.tolist()
    assert expanded(fast) == [words(t) for t in texts]


def test_chunks_past_one_batch_keep_their_boundaries():
    texts = [f"Chunk {i} | word{i % 7} " * (i % 3) for i in range(10_000)]
    assert expanded(corpus_terms(texts, words)) == [words(t) for t in texts]


def test_other_tokenisers_keep_their_own_tokens_even_the_separator():
    split = str.split
    terms = corpus_terms(["a | b", "| |", ""], split)
    assert terms.vocabulary == ["a", "|", "b"]
    assert expanded(terms) == [["a", "|", "b"], ["|", "|"], []]


def test_postings_count_each_term_in_each_chunk_sorted_by_term_then_chunk():
    terms = token_list_terms([["x", "y", "x"], [], ["y", "z", "y", "y"]])
    term, chunk, count = terms.postings()
    assert list(zip(term.tolist(), chunk.tolist(), count.tolist())) == [
        (0, 0, 2),
        (1, 0, 1),
        (1, 2, 3),
        (2, 2, 1),
    ]
