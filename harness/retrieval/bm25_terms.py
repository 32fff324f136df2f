"""A scope's chunks as term ids, for BM25: one pass over every token, terms numbered in order of first
occurrence (the order of rank_bm25's vocabulary, which its mean idf is summed in).

Text tokenised with the harness's `words` takes a fast path: an ASCII chunk is lowercased and split with
a byte table instead of the regular expression, and a batch of chunks is split in one call with a
separator token between chunks. The table is derived from `words`' own pattern, so both paths give the
same tokens; a non-ASCII chunk goes through `words` itself.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from harness.tokens import WORD_RE, words

# byte -> its lowercase when `words` keeps it, else a space
_ASCII_WORD_BYTES = bytes(
    ord(chr(c).lower()) if WORD_RE.fullmatch(chr(c).lower()) else ord(" ") for c in range(128)
) + b" " * 128
_CHUNK_END = "|"  # never a token: the table turns every "|" of the text into a space
_BATCH = 4096  # chunks split at once: bounds the token strings alive at a time


@dataclass(frozen=True)
class CorpusTerms:
    """`term_ids` holds every token's term, chunk after chunk; `lengths` the tokens of each chunk."""

    vocabulary: list[str]
    term_ids: np.ndarray
    lengths: np.ndarray

    def postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, chunk, count) of each distinct pair, sorted by term then chunk."""
        n_chunks = max(len(self.lengths), 1)
        chunk_ids = np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)
        keys = self.term_ids * n_chunks + chunk_ids
        keys.sort()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys
        counts = np.diff(np.append(starts, len(keys)))
        terms, chunks = np.divmod(keys[starts], n_chunks)
        return terms, chunks, counts


def corpus_terms(texts: Sequence[str], tokenize: Callable[[str], list[str]]) -> CorpusTerms:
    """Tokenise `texts` with `tokenize` and number the terms."""
    if tokenize is not words:
        return token_list_terms([tokenize(t) for t in texts])
    term_of = _new_vocabulary()
    sentinel = term_of[_CHUNK_END]  # id 0
    parts = []
    for start in range(0, len(texts), _BATCH):
        batch = b" | ".join(map(_ascii_words, texts[start : start + _BATCH])) + b" |"
        tokens = batch.decode("ascii").split()
        parts.append(np.fromiter(map(term_of.__getitem__, tokens), np.int64, len(tokens)))
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(ids == sentinel)
    lengths = np.diff(ends, prepend=-1) - 1
    vocabulary = list(term_of)[1:]
    return CorpusTerms(vocabulary, ids[ids != sentinel] - 1, lengths.astype(np.int64))


def token_list_terms(token_lists: Sequence[Sequence[str]]) -> CorpusTerms:
    """Number the terms of already tokenised chunks."""
    term_of = _new_vocabulary()
    lengths = np.fromiter(map(len, token_lists), np.int64, len(token_lists))
    ids = np.fromiter(
        map(term_of.__getitem__, itertools.chain.from_iterable(token_lists)), np.int64, int(lengths.sum())
    )
    return CorpusTerms(list(term_of), ids, lengths)


def _new_vocabulary() -> collections.defaultdict:
    """term -> id, a new term taking the next id: numbering in order of first occurrence at C speed."""
    return collections.defaultdict(itertools.count().__next__)


def _ascii_words(text: str) -> bytes:
    """`words(text)` as space-separated ASCII bytes."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORD_BYTES)
    return " ".join(words(text)).encode("ascii")

