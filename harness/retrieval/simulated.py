"""Fast deterministic stand-ins for encoders and rerankers (`backend: simulated`), for rehearsals.

A text's vector is its hashed word unigrams and bigrams (feature hashing into `dim` buckets by SHA-256,
sign from the same digest), L2-normalised: no weights, the same bytes on every machine, and enough lexical
signal that rankings are better than chance without being BM25's. The reranker scores a pair by the
cosine of the two vectors. `model` names the encoder the stand-in replaces (it keys the caches).

Late chunking (`pooling: late`) gets token vectors too: each word's hashed unigram plus the mean of its
window's (LATE_WINDOW words, windows laid out as the real encoder lays them), so a late-pooled chunk carries
its document's context and ranks differently from the same chunk embedded alone, as with a real model.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from harness.retrieval.dense import Embedder, l2_normalise
from harness.retrieval.late import best_window, window_starts
from harness.tokens import WORD_RE, words

DIMENSIONS = 256
SIMULATED = "simulated"
_WINDOW = 1 << 30  # no truncation: a stand-in sees every word
LATE_WINDOW = 512  # words per window of the late-chunking stand-in
CONTEXT_WEIGHT = 0.5  # the window mean's share in a token vector
# the word pattern matched on the original text, so offsets index it (lower() may change a text's length)
_CASELESS_WORD = re.compile(WORD_RE.pattern, re.IGNORECASE)


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str) -> tuple[int, float]:
    digest = hashlib.sha256(feature.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") % DIMENSIONS, (1.0 if digest[4] & 1 else -1.0)


def hashed_vectors(texts: Sequence[str]) -> np.ndarray:
    """[n, DIMENSIONS] float32 rows, L2-normalised (an empty text is the zero vector)."""
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float64)
    for row, text in enumerate(texts):
        tokens = words(text)
        for feature in tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]:
            column, sign = _bucket(feature)
            out[row, column] += sign
    return l2_normalise(out).astype(np.float32)


class HashedEmbedder(Embedder):
    backend = SIMULATED

    def __init__(self, model: str, *, batch_size: int):
        self.model = model
        self.batch_size = batch_size

    @property
    def digest(self) -> str:
        return f"hashed-ngrams-{DIMENSIONS}"

    @property
    def max_tokens(self) -> int:
        return _WINDOW

    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return hashed_vectors(texts), np.zeros(len(texts), dtype=bool)


class HashedPairScorer:
    """Cosine of the hashed vectors of query and passage (harness.retrieval.rerank.PairScorer)."""

    def __init__(self, model: str):
        self.name = model
        self.digest = f"hashed-ngrams-{DIMENSIONS}"

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
        own = np.zeros((len(found), DIMENSIONS), dtype=np.float64)
        for row, m in enumerate(found):
            column, sign = _bucket(m.group().lower())
            own[row, column] = sign
        starts = window_starts(len(found), self.width, self.overlap)
        owner = best_window(len(found), starts, self.width)
        means = np.stack([own[s:s + self.width].mean(axis=0) if len(found) else np.zeros(DIMENSIONS) for s in starts])
        return offsets, (own + CONTEXT_WEIGHT * means[owner]).astype(np.float32), len(starts)
