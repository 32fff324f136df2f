"""Word 5-grams of one unit of text (docs/design.md, Evidence metrics): taken within a unit, never across two.

A 5-gram is a tuple of five words (harness.tokens.words). Tuples are exact (no hash collisions), their
sets are built by `zip` at C speed, and set operations never depend on hash order, so results are identical
across processes. Each distinct text is analysed once per scoring run (GramCache); a truncated unit of an
ASCII text reuses its text's analysis instead of re-tokenising the cut.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from functools import cached_property
from typing import Callable, TypeVar

import numpy as np

from harness.tokens import words

N = 5

Gram = tuple[str, str, str, str, str]
T = TypeVar("T")


def word_ngrams(unit_words: list[str], n: int = N) -> frozenset[tuple[str, ...]]:
    """The set of contiguous n-word sequences of one unit's words (empty when it has fewer than n)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return frozenset(zip(*(unit_words[i:] for i in range(n))))


class UnitGrams:
    """What the metrics need from one unit: its 5-grams (in order, and as a set) and its words."""

    def __init__(self, unit_words: list[str], gram_seq: list[Gram] | None = None) -> None:
        self.words = unit_words
        self.gram_seq = gram_seq if gram_seq is not None else list(zip(*(unit_words[i:] for i in range(N))))

    @property
    def n_words(self) -> int:
        return len(self.words)

    @cached_property
    def grams(self) -> frozenset[Gram]:
        # built on first use: a cut unit is often only scanned (gram_seq), never needed as a set
        return frozenset(self.gram_seq)

    @cached_property
    def padded(self) -> str:
        # " w1 w2 ... wn ": words are [a-z0-9]+, so " a b " in padded <=> "a b" is a contiguous sequence
        return f" {' '.join(self.words)} "

    def contains(self, other: "UnitGrams") -> bool:
        """True when other's words occur as a contiguous word sequence inside this unit (no words: never)."""
        return other.n_words > 0 and other.padded in self.padded


def unit_grams(text: str) -> UnitGrams:
    return UnitGrams(words(text))


class WordEnds:
    """Where an ASCII text's words start and end (character offsets), to cut its analysis anywhere."""

    __slots__ = ("lowered", "starts", "ends")

    def __init__(self, text: str) -> None:
        self.lowered = text.lower()
        is_word = np.frombuffer(self.lowered.encode("ascii"), dtype=np.uint8)
        is_word = ((is_word >= ord("a")) & (is_word <= ord("z"))) | (
            (is_word >= ord("0")) & (is_word <= ord("9"))
        )
        edges = np.diff(np.concatenate(([False], is_word, [False])).astype(np.int8))
        self.starts = np.flatnonzero(edges == 1).tolist()
        self.ends = np.flatnonzero(edges == -1).tolist()


def prefix_grams(whole: UnitGrams, ends: WordEnds, cut: int) -> UnitGrams:
    """The analysis of text[:cut] for an ASCII text, sliced from the whole text's analysis.

    Equal to unit_grams(text[:cut]) (a test checks it): ASCII lowercasing keeps every offset, so the
    prefix's words are the whole text's first words, the last one possibly cut short.
    """
    k = bisect_right(ends.ends, cut)  # words that end at or before the cut
    kept = whole.words[:k]
    seq = whole.gram_seq[: max(0, k - N + 1)]
    if k < len(ends.starts) and ends.starts[k] < cut:  # the cut falls inside word k: keep its head
        kept.append(ends.lowered[ends.starts[k] : cut])
        if len(kept) >= N:
            seq.append(tuple(kept[-N:]))
    return UnitGrams(kept, seq)


class GramCache:
    """UnitGrams per distinct text, computed once for a whole scoring run.

    Keyed by the text itself (not chunk_id), so chunks shared by several arms are analysed once and a
    reused id can never return another text's grams. Whole texts stay for the run; truncated units and gold
    unions (one per question) live in a bounded LRU, since there can be one per question, cell and budget.
    """

    def __init__(self, *, max_transient: int = 8192) -> None:
        self._by_text: dict[str, UnitGrams] = {}
        self._ends: dict[str, WordEnds] = {}  # for texts that have been cut
        self._transient: OrderedDict[object, object] = OrderedDict()
        self._max_transient = max_transient
        # one str object per distinct word: the words and 5-gram tuples of every text share them, which takes
        # about a quarter off the analyses' memory (each occurrence was its own string)
        self._vocabulary: dict[str, str] = {}

    def _analyse(self, text: str) -> UnitGrams:
        vocabulary = self._vocabulary
        return UnitGrams([vocabulary.setdefault(w, w) for w in words(text)])

    def __len__(self) -> int:
        return len(self._by_text)

    def get(self, text: str) -> UnitGrams:
        found = self._by_text.get(text)
        if found is None:
            found = self._by_text[text] = self._analyse(text)
        return found

    def prefix(self, text: str, cut: int) -> UnitGrams:
        """The analysis of text[:cut]; fast for ASCII texts (whose lowercase keeps every offset)."""
        if not text.isascii():
            return self._lru(("cut", text, cut), lambda: self._analyse(text[:cut]))
        ends = self._ends.get(text)
        if ends is None:
            ends = self._ends[text] = WordEnds(text)
        return self._lru(("cut", text, cut), lambda: prefix_grams(self.get(text), ends, cut))

    def get_transient(self, text: str) -> UnitGrams:
        """Like get, for a text unlikely to recur (a decoded truncation): kept in the bounded LRU only."""
        return self._lru(("text", text), lambda: self._analyse(text))

    def union(self, texts: tuple[str, ...]) -> frozenset[Gram]:
        """The union of the 5-gram sets of several texts, each taken within its own text."""
        if len(texts) == 1:
            return self.get(texts[0]).grams
        return self._lru(("union", texts), lambda: frozenset().union(*(self.get(t).grams for t in texts)))

    def _lru(self, key: object, compute: Callable[[], T]) -> T:
        found = self._transient.get(key)
        if found is not None:
            self._transient.move_to_end(key)
            return found  # type: ignore[return-value]
        found = self._transient[key] = compute()
        if len(self._transient) > self._max_transient:
            self._transient.popitem(last=False)
        return found
