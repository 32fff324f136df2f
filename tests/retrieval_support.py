"""Helpers for the retrieval tests: chunk builders, real-data paths, a counting fake embedder."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from harness.data.model import Chunk, Document, make_chunk_id
from harness.retrieval.dense import Embedder

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LARAVEL = SHARED_DATA / "laravel-docs-724c31cc"


def chunks_of(texts: list[str], doc_id: str = "t/doc.md") -> list[Chunk]:
    return [
        Chunk(
            doc_id, make_chunk_id(doc_id, i, t), t, ((0, len(t)),), "", 1, 1, ("paragraph",), indexed_text=t
        )
        for i, t in enumerate(texts)
    ]


def laravel_chunks() -> dict[str, list[Chunk]]:
    """Real chunk sets per Laravel page: header-led chunks when that chunker exists, else blank-line
    paragraphs."""
    try:
        from harness.chunking.header_led import header_led_chunks
    except ImportError:
        header_led_chunks = None
    out = {}
    for path in sorted(LARAVEL.glob("*.md")):
        doc = Document(f"laravel/{path.name}", "laravel", path.read_bytes().decode("utf-8"))
        if header_led_chunks is not None:
            chunks = header_led_chunks(doc)
            out[doc.doc_id] = [dataclasses.replace(c, indexed_text=c.text) for c in chunks]
        else:
            paragraphs = [p for p in re.split(r"\n\s*\n", doc.text) if p.strip()]
            out[doc.doc_id] = chunks_of(paragraphs, doc.doc_id)
    return out


class CountingEmbedder(Embedder):
    """Deterministic bag-of-words vectors (hashed into 32 dims); records every text it is asked to embed.
    Texts with more than `max_tokens` words are flagged truncated and embedded from their first words."""

    backend = "fake"

    def __init__(self, model: str = "fake-embedder", *, digest: str = "sha256:fake", max_tokens: int = 8):
        self.model, self._digest, self._max_tokens = model, digest, max_tokens
        self.calls: list[list[str]] = []

    @property
    def digest(self) -> str:
        return self._digest

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for row, text in zip(out, texts):
            for w in re.findall(r"[a-z0-9]+", text.lower())[: self._max_tokens]:
                row[sum(map(ord, w)) % 32] += 1.0
            row[31] += 0.5  # no zero vectors
        return out * 3.0, np.array([len(t.split()) > self._max_tokens for t in texts])

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]
