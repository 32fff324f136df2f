"""Fast deterministic stand-ins for encoders and rerankers (`backend: simulated`), for rehearsals.

A text's vector is its hashed word unigrams and bigrams (feature hashing into DIMENSIONS buckets: a word's
SHA-256, a pair's mix of its words' hashes, the sign from the bit above the bucket), L2-normalised: no
weights, the same bytes on every machine, and enough lexical signal that rankings are better than chance
without being BM25's. The reranker scores a pair by the
cosine of the two vectors. `model` names the encoder the stand-in replaces (it keys the caches).

Late chunking (`pooling: late`) gets token vectors too: each word's hashed unigram plus the mean of its
window's (LATE_WINDOW words, windows laid out as the real encoder lays them), so a late-pooled chunk carries
its document's context and ranks differently from the same chunk embedded alone, as with a real model.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from itertools import chain
from typing import Any, Sequence

import numpy as np

from harness.retrieval.dense import Embedder, l2_normalise
from harness.retrieval.late import best_window, window_starts
from harness.tokens import WORD_RE, words

DIMENSIONS = 256
DIGEST = f"hashed-ngrams-{DIMENSIONS}-splitmix"  # keys the vector caches: a change of hashing is a new digest
SIMULATED = "simulated"
_WINDOW = 1 << 30  # no truncation: a stand-in sees every word
LATE_WINDOW = 512  # words per window of the late-chunking stand-in
CONTEXT_WEIGHT = 0.5  # the window mean's share in a token vector
# the word pattern matched on the original text, so offsets index it (lower() may change a text's length)
_CASELESS_WORD = re.compile(WORD_RE.pattern, re.IGNORECASE)


_SIGN_BIT = np.uint64(DIMENSIONS.bit_length() - 1)  # the bit above the bucket's
_PAIR = np.uint64(0x9E3779B97F4A7C15)  # odd: the second word's hash is multiplied, so "a b" and "b a" differ


@lru_cache(maxsize=1 << 20)
def _word_hash(word: str) -> int:
    """A word's 64-bit hash: the first 8 bytes of its SHA-256 (the same on every machine)."""
    return int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic, so the same bits on every platform)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _columns_and_signs(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bucket (low bits) and sign (the next bit) of each feature hash."""
    columns = (features % np.uint64(DIMENSIONS)).astype(np.int64)
    signs = np.where((features >> _SIGN_BIT) & np.uint64(1), 1.0, -1.0)
    return columns, signs


# Vectors remembered per text: the stand-ins of several encoders embed the same chunk texts, and the
# reranker's
# stand-in sees a scope's passages once per query. A row depends on its text alone, so a remembered row is the
# row a fresh batch would give.
_REMEMBERED: dict[str, np.ndarray] = {}
MAX_REMEMBERED_VECTORS = 1 << 15


def hashed_vectors(texts: Sequence[str]) -> np.ndarray:
    """[n, DIMENSIONS] float32 rows, L2-normalised (an empty text is the zero vector); each row depends on its
    text alone (_hash_rows), and rows already computed in this process are reused."""
    found = {t: row for t in texts if (row := _REMEMBERED.get(t)) is not None}
    missing = [t for t in dict.fromkeys(texts) if t not in found]
    if missing:
        if len(_REMEMBERED) + len(missing) > MAX_REMEMBERED_VECTORS:
            _REMEMBERED.clear()
        for text, row in zip(missing, _hash_rows(missing)):
            row = row.copy()  # its own memory, not a view that keeps the whole batch alive
            row.setflags(write=False)
            found[text] = _REMEMBERED[text] = row
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return np.stack([found[t] for t in texts])


def _hash_rows(texts: Sequence[str]) -> np.ndarray:
    """Features are every word and every adjacent pair within a text; all texts are bucketed in one
    bincount."""
    per_text = [words(text) for text in texts]
    lengths = np.fromiter((len(t) for t in per_text), dtype=np.int64, count=len(per_text))
    hashes = np.fromiter(
        map(_word_hash, chain.from_iterable(per_text)), dtype=np.uint64, count=int(lengths.sum())
    )
    rows = np.repeat(np.arange(len(per_text), dtype=np.int64), lengths)
    same_text = rows[:-1] == rows[1:]  # a pair never spans two texts
    pairs = _mix(hashes[:-1][same_text] ^ (hashes[1:][same_text] * _PAIR))
    columns, signs = _columns_and_signs(np.concatenate([_mix(hashes), pairs]))
    cells = np.concatenate([rows, rows[:-1][same_text]]) * DIMENSIONS + columns
    out = np.bincount(cells, weights=signs, minlength=len(per_text) * DIMENSIONS).reshape(
        len(per_text), DIMENSIONS
    )
    return l2_normalise(out).astype(np.float32)


class HashedEmbedder(Embedder):
    backend = SIMULATED

    def __init__(self, model: str, *, batch_size: int):
        self.model = model
        self.batch_size = batch_size

    @property
    def digest(self) -> str:
        return DIGEST

    @property
    def max_tokens(self) -> int:
        return _WINDOW

    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return hashed_vectors(texts), np.zeros(len(texts), dtype=bool)


class HashedPairScorer:
    """Cosine of the hashed vectors of query and passage (harness.retrieval.rerank.PairScorer)."""

    def __init__(self, model: str):
        self.name = model
        self.digest = DIGEST

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        vectors = hashed_vectors([query, *passages])
        return [round(float(s), 6) for s in vectors[1:].astype(np.float64) @ vectors[0].astype(np.float64)]

    def describe(self) -> dict[str, Any]:
        return {"backend": SIMULATED, "model": self.name, "digest": self.digest}


class HashedLateEncoder:
    """Token vectors of a whole document for late chunking (harness.retrieval.late.LateEncoder's interface):
    a word's signed hashed bucket plus CONTEXT_WEIGHT times the mean over the window it is read in."""

    def __init__(self, *, overlap: int):
        self.overlap = overlap
        self.width = LATE_WINDOW

    def token_vectors(self, text: str) -> tuple[np.ndarray, np.ndarray, int]:
        """(offsets [n, 2], vectors [n, DIMENSIONS], windows) for a document; its words are its tokens."""
        found = list(_CASELESS_WORD.finditer(text))
        offsets = np.array([m.span() for m in found], dtype=np.int64).reshape(-1, 2)
        hashes = np.fromiter(
            (_word_hash(m.group().lower()) for m in found), dtype=np.uint64, count=len(found)
        )
        columns, signs = _columns_and_signs(_mix(hashes))
        own = np.zeros((len(found), DIMENSIONS), dtype=np.float64)
        own[np.arange(len(found)), columns] = signs
        starts = window_starts(len(found), self.width, self.overlap)
        owner = best_window(len(found), starts, self.width)
        means = np.stack(
            [own[s : s + self.width].mean(axis=0) if len(found) else np.zeros(DIMENSIONS) for s in starts]
        )
        return offsets, (own + CONTEXT_WEIGHT * means[owner]).astype(np.float32), len(starts)
