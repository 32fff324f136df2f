"""Late chunking (`pooling: late` on a sentence-transformers dense retriever; Günther et al. 2024).

Each document is encoded once at the token level, and a chunk's vector is the mean of the token vectors
inside its source spans (Chunk.spans, character offsets into the document): the chunk is embedded with
the whole document as its context. Queries are embedded as by the plain retriever (the model's pooling).

- Tokens: the model's tokenizer over the document text, with character offsets; a token belongs to a
  chunk when its offsets overlap one of the chunk's spans (a token across a boundary counts for both).
- Windows: a document whose tokens fit the model's window (its max_seq_length, less its special tokens and
  the document prefix's tokens) is one forward pass. A longer one is cut into windows of that many tokens,
  each starting `late_overlap` tokens before the previous one ends; the last window ends at the document's
  last token. Each window is a sequence of its own: the model's special tokens, the document prefix, then
  its tokens.
- Window rule: a token takes its vector from the window where it has most context, the one maximising
  min(tokens before it in the window, tokens after it in the window); of equal windows, the earlier.
- A chunk with no token inside its spans gets a zero vector (cosine 0 to every query) and is counted.

Refused: a chunk whose indexed text is not its source text (S+T's section path, E's and CR's generated
fields, contextual headers). Those texts are not in the document, so they have no token vectors; any rule
that splices them into the document would encode a text that exists nowhere, which is neither late
chunking (amendment 0001: token embeddings pooled over header-led chunk spans) nor comparable with S.
Restrict a late retriever to arms that index their source text (`arms: [S]`).

Same bytes wherever computed: each window is its own forward pass on one torch thread (as dense.py's
protocol), and chunk vectors are cached by (document text hash, spans) in the vector cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.files import canonical_json, sha256_text
from harness.retrieval.cache import CacheNamespace, VectorCache
from harness.retrieval.dense import (
    DenseIndex,
    DenseRetriever,
    SentenceTransformerEmbedder,
    l2_normalise,
    one_torch_thread,
)
from harness.timing import ENCODER, waiting_on

LATE_ENCODING = "late chunking: one forward pass per window, 1 torch thread, most-context window per token"


def window_starts(n_tokens: int, width: int, overlap: int) -> list[int]:
    """Starts of the windows covering n_tokens: one when it fits, else stride width - overlap, the last
    window ending at the last token."""
    if n_tokens <= width:
        return [0]
    if overlap >= width:
        raise HarnessError(
            f"late chunking: late_overlap {overlap} must be below the window of {width} tokens"
        )
    starts = list(range(0, n_tokens - width, width - overlap))
    return starts + [n_tokens - width]


def best_window(n_tokens: int, starts: Sequence[int], width: int) -> np.ndarray:
    """For each token, the index of the window where it has most context (ties: the earlier window)."""
    best = np.zeros(n_tokens, dtype=np.int64)
    context = np.full(n_tokens, -1, dtype=np.int64)
    for w, start in enumerate(starts):
        end = min(start + width, n_tokens)
        idx = np.arange(start, end)
        here = np.minimum(idx - start, end - 1 - idx)
        better = here > context[start:end]
        best[start:end][better] = w
        context[start:end][better] = here[better]
    return best


class LateEncoder:
    """Token vectors of whole documents from the sentence-transformers model of `embedder`."""

    def __init__(self, embedder: SentenceTransformerEmbedder, *, overlap: int, prefix: str = ""):
        self.embedder, self.overlap, self.prefix = embedder, overlap, prefix
        self._layout: tuple[list[int], list[int], list[int]] | None = None

    def _model(self):
        st = self.embedder._loaded()
        names = [type(m).__name__ for m in st]
        pooling = st[1] if len(st) > 1 else None
        mode = getattr(
            pooling, "pooling_mode", None
        )  # sentence-transformers 5: "mean"; older: one flag per mode
        if isinstance(mode, str):
            mean = mode == "mean"
        elif mode is not None:
            mean = list(mode) == ["mean"]
        else:
            mean = (
                pooling is not None
                and getattr(pooling, "pooling_mode_mean_tokens", False)
                and not any(
                    getattr(pooling, f"pooling_mode_{m}", False)
                    for m in ("cls_token", "max_tokens", "lasttoken")
                )
            )
        if names[:1] != ["Transformer"] or not mean or any(n != "Normalize" for n in names[2:]):
            raise HarnessError(
                f"late chunking: model {self.embedder.model!r} ({' -> '.join(names)}) does not embed a "
                "text as the mean of its token vectors (Transformer, mean Pooling, optional Normalize)"
            )
        return st

    def layout(self) -> tuple[list[int], list[int], list[int]]:
        """(special ids before the text, prefix ids, special ids after the text) of one window."""
        if self._layout is None:
            tokenizer = self._model().tokenizer
            plain = tokenizer("a", add_special_tokens=False)["input_ids"]
            full = tokenizer("a", add_special_tokens=True)["input_ids"]
            at = next((k for k in range(len(full)) if full[k : k + len(plain)] == plain), None)
            if at is None:
                raise HarnessError(
                    f"late chunking: cannot place text between the special tokens of {self.embedder.model!r}"
                )
            prefix = tokenizer(self.prefix, add_special_tokens=False)["input_ids"] if self.prefix else []
            self._layout = (full[:at], prefix, full[at + len(plain) :])
        return self._layout

    @property
    def width(self) -> int:
        head, prefix, tail = self.layout()
        return self.embedder.max_tokens - len(head) - len(prefix) - len(tail)

    def tokens(self, text: str) -> tuple[list[int], np.ndarray]:
        enc = self._model().tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return list(enc["input_ids"]), np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)

    def forward(self, ids: list[int]) -> np.ndarray:
        """Token vectors of one window's text tokens (specials and prefix dropped)."""
        import torch

        head, prefix, tail = self.layout()
        st = self._model()
        sequence = torch.tensor([head + prefix + ids + tail])
        with one_torch_thread(), torch.no_grad():
            out = st[0]({"input_ids": sequence, "attention_mask": torch.ones_like(sequence)})[
                "token_embeddings"
            ][0]
        skip = len(head) + len(prefix)
        return out[skip : skip + len(ids)].float().numpy()

    def token_vectors(self, text: str) -> tuple[np.ndarray, np.ndarray, int]:
        """(offsets [n, 2], vectors [n, dim], windows) for a document."""
        ids, offsets = self.tokens(text)
        width = self.width
        if width < 1:
            raise HarnessError(
                f"late chunking: the document prefix leaves no room in {self.embedder.model!r}'s window"
            )
        starts = window_starts(len(ids), width, self.overlap)
        owner = best_window(len(ids), starts, width)
        vectors = None
        for w, start in enumerate(starts):
            window = self.forward(ids[start : start + width])
            if vectors is None:
                vectors = np.zeros((len(ids), window.shape[1]), dtype=np.float32)
            mine = np.flatnonzero(owner[start : start + width] == w)
            vectors[start + mine] = window[mine]
        if vectors is None:  # an empty document
            vectors = np.zeros((0, self._model().get_sentence_embedding_dimension()), dtype=np.float32)
        return offsets, vectors, len(starts)


def span_mean(
    offsets: np.ndarray, vectors: np.ndarray, spans: Sequence[tuple[int, int]]
) -> np.ndarray | None:
    """Mean of the token vectors overlapping any of `spans`; None when no token does."""
    inside = np.zeros(len(offsets), dtype=bool)
    nonempty = offsets[:, 1] > offsets[:, 0] if len(offsets) else inside
    for a, b in spans:
        inside |= nonempty & (offsets[:, 0] < b) & (offsets[:, 1] > a)
    return vectors[inside].mean(axis=0) if inside.any() else None


class LateChunkingRetriever(DenseRetriever):
    """A dense retriever whose chunk vectors are late-pooled from their documents (`documents`: doc_id ->
    text)."""

    def __init__(
        self,
        name: str,
        embedder: SentenceTransformerEmbedder,
        *,
        cache_dir: str | Path,
        documents: Mapping[str, str],
        overlap: int,
        query_prefix: str = "",
        document_prefix: str = "",
        encoder: Any = None,
    ):
        super().__init__(
            name, embedder, cache_dir=cache_dir, query_prefix=query_prefix, document_prefix=document_prefix
        )
        self.documents, self.overlap = documents, overlap
        # the token vectors: the model's own, or a stand-in's with the same token_vectors (a rehearsal's)
        self.encoder = encoder or LateEncoder(embedder, overlap=overlap, prefix=document_prefix)
        self.counts = {"late_documents": 0, "late_windows": 0, "late_chunks_without_tokens": 0}
        self._late_cache: VectorCache | None = None

    def _chunk_cache(self) -> VectorCache:
        if self._late_cache is None:
            encoding = f"{LATE_ENCODING}, overlap {self.overlap}, window {self.embedder.max_tokens}"
            namespace = CacheNamespace(
                "late-chunk", self.embedder.model, self.embedder.digest, self.document_prefix, encoding
            )
            self._late_cache = VectorCache(self.cache_dir, namespace)
        return self._late_cache

    def _document(self, chunk: Chunk, scope_key: str) -> str:
        if chunk.indexed_text != chunk.text:
            raise HarnessError(
                f"retriever {self.name!r} (pooling: late), scope {scope_key}: chunk {chunk.chunk_id} indexes "
                "text that is "
                "not its source text (a section path, generated fields or headers); late chunking pools "
                "source tokens "
                "only, so restrict this retriever to arms indexing source text (e.g. `arms: [S]`)"
            )
        if chunk.doc_id not in self.documents:
            raise HarnessError(
                f"retriever {self.name!r} (pooling: late): the text of document {chunk.doc_id} was not "
                "given to the retriever context (RetrieverContext.add_documents)"
            )
        return self.documents[chunk.doc_id]

    def chunk_vectors(self, scope_key: str, chunks: Sequence[Chunk]) -> np.ndarray:
        """One late-pooled vector per chunk (rows in chunk order), through the vector cache."""
        keys, where = [], {}
        for c in chunks:
            key = canonical_json(
                {"document": sha256_text(self._document(c, scope_key)), "spans": [list(s) for s in c.spans]}
            )
            keys.append(key)
            where[key] = (c.doc_id, c.spans)

        def encode(missing: list[str]) -> tuple[np.ndarray, np.ndarray]:
            # document by document, each one's token vectors dropped before the next is encoded: a scope's
            # documents' token vectors together can take gigabytes (tokens x dimensions x 4 bytes)
            positions: dict[str, list[int]] = {}
            for i, key in enumerate(missing):
                positions.setdefault(where[key][0], []).append(i)
            rows: list[np.ndarray | None] = [None] * len(missing)
            for doc_id, at in positions.items():
                with waiting_on(ENCODER):
                    offsets, vectors, windows = self.encoder.token_vectors(self.documents[doc_id])
                self.counts["late_documents"] += 1
                self.counts["late_windows"] += windows
                for i in at:
                    mean = span_mean(offsets, vectors, where[missing[i]][1])
                    if mean is None:
                        self.counts["late_chunks_without_tokens"] += 1
                        mean = np.zeros(vectors.shape[1], dtype=np.float32)
                    rows[i] = mean
                offsets = vectors = None
            return np.stack(rows).astype(np.float32), np.zeros(len(missing), dtype=bool)

        return self._chunk_cache().encode(keys, encode)[0]

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> DenseIndex:
        vectors = self.chunk_vectors(scope_key, chunks)
        # nothing is cut: a document longer than the window is encoded in overlapping windows
        return DenseIndex(self, scope_key, l2_normalise(vectors) if len(chunks) else np.zeros((0, 0)), None)

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "pooling": "late: mean of document token vectors inside each chunk's spans",
            "late_overlap": self.overlap,
            "window_rule": "each token from the window where min(tokens before, tokens after) is largest; "
                           "ties: earlier",
            "truncation": "none: documents longer than the window are encoded in overlapping windows",
        }

    def flush(self) -> None:
        super().flush()
        if self._late_cache is not None:
            self._late_cache.flush()

    def stats(self) -> dict[str, int]:
        out = super().stats()
        out["cache_hits"] += self._chunk_cache().hits if self._late_cache is not None else 0
        out["cache_misses"] += self._chunk_cache().misses if self._late_cache is not None else 0
        return out | self.counts
