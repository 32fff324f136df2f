"""On-disk cache of model outputs (embeddings, reranker scores), keyed by (model, digest, prefix, text hash).

Layout: <root>/<slug>-<namespace hash>/namespace.json plus one `.npz` shard per write batch (keys,
vectors, truncated flags). Each shard is written to a temporary name and renamed, so a killed run loses
at most the batch in flight and never leaves a half-written shard; nothing is ever rewritten
(append-only). A rerun indexes every shard and encodes only texts it has not seen.
"""

from __future__ import annotations

import io
import re
from collections import OrderedDict
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
    """Vectors for one namespace; `hits` / `misses` count texts looked up (after de-duplication).

    Only the index (each key's shard and row) and the truncated flags stay in memory; a shard's vectors are
    read when a lookup needs them and kept in a least-recently-used set of at most `resident_bytes` (an
    arm's texts are looked up together, each shard read once per lookup, so the set need only hold what
    arms share). The paper-size twin's embeddings are 2.7 GB on disk, which held whole (one array per row)
    made most of the score stage's memory.
    """

    def __init__(self, root: str | Path, namespace: CacheNamespace, *, dtype: type = np.float32,
                 resident_bytes: int = 64 * 2**20):
        self.namespace = namespace
        self.dtype = np.dtype(dtype)  # float32 for embeddings; float64 keeps reranker scores exact
        self.directory = Path(root) / namespace.dirname
        self.resident_bytes = resident_bytes
        self.hits = 0
        self.misses = 0
        self._where: dict[bytes, int] = {}  # key digest -> shard number << 32 | row
        self._shards: list[Path] = []
        self._flags: list[np.ndarray] = []
        self._resident: OrderedDict[int, np.ndarray] = OrderedDict()
        self._held = 0  # bytes of the resident vectors
        self._load()

    def _load(self) -> None:
        meta = self.directory / "namespace.json"
        if meta.exists() and read_json(meta) != self.namespace.as_dict():
            raise HarnessError(f"{meta}: cache namespace does not match {self.namespace.as_dict()}")
        for shard in sorted(self.directory.glob("*.npz")):
            keys, truncated = self._read(shard, "keys", "truncated")
            self._add_shard(shard, keys.tolist(), truncated)

    @staticmethod
    def _read(shard: Path, *names: str) -> list[np.ndarray]:
        try:
            with np.load(shard, allow_pickle=False) as z:
                return [z[name] for name in names]
        except (OSError, ValueError, KeyError) as e:
            raise HarnessError(f"{shard}: unreadable cache shard ({e}); delete it to recompute its entries") from None

    def _add_shard(self, shard: Path, keys: list[str], truncated: np.ndarray) -> int:
        number = len(self._shards)
        self._shards.append(shard)
        self._flags.append(np.asarray(truncated, dtype=bool))
        for row, key in enumerate(keys):
            self._where.setdefault(bytes.fromhex(key), number << 32 | row)  # the first shard holding a key wins
        return number

    def _vectors(self, number: int) -> np.ndarray:
        if number in self._resident:
            self._resident.move_to_end(number)
            return self._resident[number]
        (vectors,) = self._read(self._shards[number], "vectors")
        if vectors.ndim != 2 or len(vectors) != len(self._flags[number]):
            raise HarnessError(f"{self._shards[number]}: {vectors.shape} vectors for {len(self._flags[number])} keys; "
                               "delete it to recompute its entries")
        return self._keep(number, vectors.astype(self.dtype, copy=False))

    def _keep(self, number: int, vectors: np.ndarray) -> np.ndarray:
        self._resident[number] = vectors
        self._held += vectors.nbytes
        while self._held > self.resident_bytes and len(self._resident) > 1:
            self._held -= self._resident.popitem(last=False)[1].nbytes
        return vectors

    def __len__(self) -> int:
        return len(self._where)

    def encode(self, texts: Sequence[str], encoder: Encoder) -> tuple[np.ndarray, np.ndarray]:
        """Vectors and truncated flags for `texts` (row i for texts[i]); only unseen texts reach `encoder`."""
        keys = [sha256_text(t) for t in texts]
        digests = [bytes.fromhex(k) for k in keys]
        missing: dict[str, str] = {}
        for key, digest, text in zip(keys, digests, texts):
            if digest not in self._where and key not in missing:
                missing[key] = text
        self.misses += len(missing)
        self.hits += len(set(keys)) - len(missing)
        if missing:
            self._store(list(missing), *encoder(list(missing.values())))
        if not keys:
            return np.zeros((0, 0), dtype=self.dtype), np.zeros(0, dtype=bool)
        where = np.array([self._where[d] for d in digests], dtype=np.int64)
        shard_of, row_of = where >> 32, where & 0xFFFFFFFF
        vectors, truncated = None, np.zeros(len(keys), dtype=bool)
        by_shard = np.argsort(shard_of, kind="stable")
        numbers, starts = np.unique(shard_of[by_shard], return_index=True)
        for number, at in zip(numbers.tolist(), np.split(by_shard, starts[1:])):  # each needed shard read once
            block = self._vectors(number)
            if vectors is None:
                vectors = np.empty((len(keys), block.shape[1]), dtype=self.dtype)
            vectors[at] = block[row_of[at]]
            truncated[at] = self._flags[number][row_of[at]]
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
        shard = self.directory / f"{sha256_text(canonical_json(keys))[:24]}.npz"
        atomic_write_bytes(shard, buf.getvalue())
        self._keep(self._add_shard(shard, keys, truncated), vectors)
