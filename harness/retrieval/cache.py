"""On-disk cache of model outputs (embeddings, reranker scores), keyed by (model, digest, prefix, text hash).

Layout: <root>/<slug>-<namespace hash>/namespace.json plus one `.npz` shard per write batch (keys,
vectors, truncated flags). Each shard is written to a temporary name and renamed, so a killed run loses
at most the batch in flight and never leaves a half-written shard; nothing is ever rewritten
(append-only). A rerun loads every shard and encodes only texts it has not seen.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from harness.errors import HarnessError
from harness.files import atomic_write_bytes, atomic_write_json, canonical_json, read_json, sha256_text

# encoder(texts) -> (vectors [len(texts), dim], truncated flags [len(texts)])
Encoder = Callable[[list[str]], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class CacheNamespace:
    """What makes two outputs interchangeable: same model, same weights, same prefix (or scoring template)."""

    kind: str  # "embedding" | "pair-score"
    model: str
    digest: str
    prefix: str
    encoding: str = ""  # how a vector is computed, when that decides its bytes (harness.retrieval.dense)

    def as_dict(self) -> dict[str, str]:
        identity = {"kind": self.kind, "model": self.model, "digest": self.digest, "prefix": self.prefix}
        # absent when empty, so namespaces without a protocol keep their directory (shipped pair scores)
        return identity | ({"encoding": self.encoding} if self.encoding else {})

    @property
    def dirname(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model).strip("_")[-60:] or "model"
        return f"{slug}-{sha256_text(canonical_json(self.as_dict()))[:16]}"


class VectorCache:
    """Vectors for one namespace; `hits` / `misses` count texts looked up (after de-duplication)."""

    def __init__(self, root: str | Path, namespace: CacheNamespace, *, dtype: type = np.float32):
        self.namespace = namespace
        self.dtype = np.dtype(dtype)  # float32 for embeddings; float64 keeps reranker scores exact
        self.directory = Path(root) / namespace.dirname
        self.hits = 0
        self.misses = 0
        self._rows: dict[str, tuple[np.ndarray, bool]] = {}
        self._load()

    def _load(self) -> None:
        meta = self.directory / "namespace.json"
        if meta.exists() and read_json(meta) != self.namespace.as_dict():
            raise HarnessError(f"{meta}: cache namespace does not match {self.namespace.as_dict()}")
        for shard in sorted(self.directory.glob("*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as z:
                    keys, vectors, truncated = z["keys"], z["vectors"], z["truncated"]
            except (OSError, ValueError, KeyError) as e:
                raise HarnessError(f"{shard}: unreadable cache shard ({e}); delete it to recompute its entries") from None
            vectors = vectors.astype(self.dtype, copy=False)
            for key, vector, flag in zip(keys.tolist(), vectors, truncated.tolist()):
                self._rows.setdefault(key, (vector, bool(flag)))

    def __len__(self) -> int:
        return len(self._rows)

    def encode(self, texts: Sequence[str], encoder: Encoder) -> tuple[np.ndarray, np.ndarray]:
        """Vectors and truncated flags for `texts` (row i for texts[i]); only unseen texts reach `encoder`."""
        keys = [sha256_text(t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._rows and key not in missing:
                missing[key] = text
        self.misses += len(missing)
        self.hits += len(set(keys)) - len(missing)
        if missing:
            self._store(list(missing), *encoder(list(missing.values())))
        if not keys:
            return np.zeros((0, 0), dtype=self.dtype), np.zeros(0, dtype=bool)
        vectors = np.stack([self._rows[k][0] for k in keys])
        truncated = np.array([self._rows[k][1] for k in keys], dtype=bool)
        return vectors, truncated

    def _store(self, keys: list[str], vectors: np.ndarray, truncated: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=self.dtype)
        truncated = np.asarray(truncated, dtype=bool)
        if vectors.ndim != 2 or len(vectors) != len(keys) or truncated.shape != (len(keys),):
            raise HarnessError(
                f"{self.namespace.model}: encoder returned {vectors.shape} vectors and {truncated.shape} flags "
                f"for {len(keys)} texts"
            )
        meta = self.directory / "namespace.json"
        if not meta.exists():
            atomic_write_json(meta, self.namespace.as_dict())
        buf = io.BytesIO()
        np.savez(buf, keys=np.array(keys), vectors=vectors, truncated=truncated)
        # Named by content, so two runs writing the same batch write the same file.
        atomic_write_bytes(self.directory / f"{sha256_text(canonical_json(keys))[:24]}.npz", buf.getvalue())
        for key, vector, flag in zip(keys, vectors, truncated.tolist()):
            self._rows[key] = (vector, bool(flag))
