"""On-disk cache of model outputs (embeddings, reranker scores), keyed by (model, digest, prefix, text hash).

Layout: <root>/<slug>-<namespace hash>/namespace.json plus `.npz` shards (keys, vectors, truncated flags).
New entries are held in memory and written together as one shard by `flush()`: the scoring loop flushes
after each cell (a cell's many small lookups, one per question for a reranker, would otherwise write one
shard each), past `pending_bytes` a cache flushes by itself, and at interpreter exit every cache flushes
what it still holds. Each shard is written to a temporary name and renamed, so a killed run loses at most
the entries not yet flushed and never leaves a half-written shard; nothing is ever rewritten
(append-only). A rerun indexes every shard and encodes only texts it has not seen.
"""

from __future__ import annotations

import atexit
import io
import re
import weakref
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


def _digests(shard: Path, keys: np.ndarray) -> np.ndarray:
    """A shard's hex keys (SHA-256) as 32-byte digests (dtype S32)."""
    texts = keys.tolist()
    try:
        if any(len(k) != 64 for k in texts):
            raise ValueError("a key is not 64 hex digits")
        return np.frombuffer(bytes.fromhex("".join(texts)), dtype="S32").copy()
    except (ValueError, TypeError) as e:
        raise HarnessError(
            f"{shard}: unreadable cache shard ({e}); delete it to recompute its entries"
        ) from None


class KeyIndex:
    """Exact map from 32-byte key digests to int64 locations, first entry of a key winning.

    Held as numpy arrays (the digests sorted as fixed-width bytes, beside their locations): 40 bytes a key
    where a dict of bytes and ints takes about 150, and no Python objects, so an index of millions of keys
    neither weighs on memory nor pins the allocator's arenas between the transient objects of scoring.
    Keys added later wait in a small dict until it is worth merging them into the sorted arrays.
    """

    def __init__(self, *, merge_at: int = 1 << 16) -> None:
        self.merge_at = (
            merge_at  # recent keys held in the dict before a merge (at least an eighth of the index)
        )
        self._keys = np.zeros(0, dtype="S32")
        self._locations = np.zeros(0, dtype=np.int64)
        self._recent: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._keys) + len(self._recent)

    def find(self, digests: Sequence[bytes]) -> np.ndarray:
        """Each digest's location, -1 where absent."""
        out = np.full(len(digests), -1, dtype=np.int64)
        if len(self._keys) and len(digests):
            wanted = np.array(digests, dtype="S32")
            at = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
            found = self._keys[at] == wanted
            out[found] = self._locations[at[found]]
        if self._recent:
            absent = np.flatnonzero(out < 0).tolist()
            out[absent] = [self._recent.get(digests[i], -1) for i in absent]
        return out

    def add(self, digests: Sequence[bytes], locations: np.ndarray) -> None:
        """Add the digests not yet present, each at its first location in this call."""
        fresh = self.find(digests) < 0
        for d, location, new in zip(digests, np.asarray(locations).tolist(), fresh.tolist()):
            if new:
                self._recent.setdefault(d, location)
        if len(self._recent) > max(
            self.merge_at, len(self._keys) >> 3
        ):  # merges cost a sort: amortised over many adds
            self._merge()

    def load(self, digests: np.ndarray, locations: np.ndarray) -> None:
        """Start from `digests` (dtype S32) in order of precedence: where a key repeats, its first entry
        wins."""
        first = np.unique(digests, return_index=True)[1] if len(digests) else np.zeros(0, dtype=np.int64)
        self._keys, self._locations, self._recent = (
            digests[first],
            np.asarray(locations, dtype=np.int64)[first],
            {},
        )

    def _merge(self) -> None:
        keys = np.concatenate([self._keys, np.array(list(self._recent), dtype="S32")])
        locations = np.concatenate([self._locations, np.fromiter(self._recent.values(), dtype=np.int64,
                                                                  count=len(self._recent))])
        order = np.argsort(keys, kind="stable")
        self._keys, self._locations, self._recent = keys[order], locations[order], {}


class VectorCache:
    """Vectors for one namespace; `hits` / `misses` count texts looked up (after de-duplication).

    Only the index (each key's shard and row) and the truncated flags stay in memory; a shard's vectors are
    read when a lookup needs them and kept in a least-recently-used set of at most `resident_bytes` (an
    arm's texts are looked up together, each shard read once per lookup, so the set need only hold what
    arms share). The paper-size twin's embeddings are 2.7 GB on disk, which held whole (one array per row)
    made most of the score stage's memory.
    """

    def __init__(self, root: str | Path, namespace: CacheNamespace, *, dtype: type = np.float32,
                 resident_bytes: int = 64 * 2**20, pending_bytes: int = 64 * 2**20):
        self.namespace = namespace
        self.dtype = np.dtype(dtype)  # float32 for embeddings; float64 keeps reranker scores exact
        self.root = Path(root)
        self.directory = self.root / namespace.dirname
        # the nearest folder that exists now: gone at exit, the cache belonged to a removed scratch copy
        self._anchor = next(p for p in (self.root, *self.root.parents) if p.is_dir())
        self.resident_bytes = resident_bytes
        self.hits = 0
        self.misses = 0
        self._where = KeyIndex()  # key digest -> shard number << 32 | row
        self._shards: list[Path] = []
        self._flags: list[np.ndarray] = []
        self._resident: OrderedDict[int, np.ndarray] = OrderedDict()
        self._held = 0  # bytes of the resident vectors
        self.pending_bytes = pending_bytes
        self._pending = _Pending()  # entries not yet written, under shard number self._pending.number
        self.shards_written = 0
        self._load()
        _LIVE.add(self)

    def _load(self) -> None:
        meta = self.directory / "namespace.json"
        if meta.exists() and read_json(meta) != self.namespace.as_dict():
            raise HarnessError(f"{meta}: cache namespace does not match {self.namespace.as_dict()}")
        digests, locations = [], []
        for number, shard in enumerate(sorted(self.directory.glob("*.npz"))):
            keys, truncated = self._read(shard, "keys", "truncated")
            self._shards.append(shard)
            self._flags.append(np.asarray(truncated, dtype=bool))
            digests.append(_digests(shard, keys))
            locations.append(number << 32 | np.arange(len(keys), dtype=np.int64))
        if digests:  # the first shard (in name order) holding a key wins
            self._where.load(np.concatenate(digests), np.concatenate(locations))

    @staticmethod
    def _read(shard: Path, *names: str) -> list[np.ndarray]:
        try:
            with np.load(shard, allow_pickle=False) as z:
                return [z[name] for name in names]
        except (OSError, ValueError, KeyError) as e:
            raise HarnessError(
                f"{shard}: unreadable cache shard ({e}); delete it to recompute its entries"
            ) from None

    def _vectors(self, number: int) -> np.ndarray:
        if number == self._pending.number:
            return self._pending.vectors()
        if number in self._resident:
            self._resident.move_to_end(number)
            return self._resident[number]
        (vectors,) = self._read(self._shards[number], "vectors")
        if vectors.ndim != 2 or len(vectors) != len(self._flags[number]):
            raise HarnessError(
                f"{self._shards[number]}: {vectors.shape} vectors for {len(self._flags[number])} keys; "
                "delete it to recompute its entries"
            )
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
        where = self._where.find(digests)
        missing: dict[str, str] = {}
        for key, location, text in zip(keys, where.tolist(), texts):
            if location < 0 and key not in missing:
                missing[key] = text
        self.misses += len(missing)
        self.hits += len(set(keys)) - len(missing)
        if missing:
            try:
                encoded = encoder(list(missing.values()))
            except BaseException:
                # a failing model (a server gone, an interrupt): keep what was computed before it
                self.flush()
                raise
            self._store(list(missing), *encoded)
            where = self._where.find(digests)
        if not keys:
            return np.zeros((0, 0), dtype=self.dtype), np.zeros(0, dtype=bool)
        return self._gather(where)

    def differing(self, texts: Sequence[str], encoder: Encoder) -> list[int]:
        """Indexes of the `texts` the cache holds whose vector or truncated flag is not, bit for bit, what
        `encoder` computes now (texts it does not hold are skipped; nothing is stored): a sample of them
        checks that the cache on disk holds the model's outputs (`audit --rescore`)."""
        where = self._where.find([bytes.fromhex(sha256_text(t)) for t in texts])
        held = [i for i, location in enumerate(where.tolist()) if location >= 0]
        if not held:
            return []
        cached, cached_flags = self._gather(where[held])
        fresh, fresh_flags = encoder([texts[i] for i in held])
        fresh = np.asarray(fresh, dtype=self.dtype)
        flags = zip(cached_flags.tolist(), np.asarray(fresh_flags, dtype=bool).tolist())
        return [i for i, a, b, (fa, fb) in zip(held, cached, fresh, flags)
                if a.shape != b.shape or a.tobytes() != b.tobytes() or fa != fb]

    def _gather(self, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The vectors and flags at these locations (each at least 0), reading each shard once."""
        shard_of, row_of = where >> 32, where & 0xFFFFFFFF
        vectors, truncated = None, np.zeros(len(where), dtype=bool)
        by_shard = np.argsort(shard_of, kind="stable")
        numbers, starts = np.unique(shard_of[by_shard], return_index=True)
        for number, at in zip(
            numbers.tolist(), np.split(by_shard, starts[1:])
        ):  # each needed shard read once
            block = self._vectors(number)
            if vectors is None:
                vectors = np.empty((len(where), block.shape[1]), dtype=self.dtype)
            vectors[at] = block[row_of[at]]
            truncated[at] = self._flags[number][row_of[at]]
        return vectors, truncated

    def _store(self, keys: list[str], vectors: np.ndarray, truncated: np.ndarray) -> None:
        """Hold new entries (under the pending shard's number) until the next flush."""
        vectors = np.asarray(vectors, dtype=self.dtype)
        truncated = np.asarray(truncated, dtype=bool)
        if vectors.ndim != 2 or len(vectors) != len(keys) or truncated.shape != (len(keys),):
            raise HarnessError(
                f"{self.namespace.model}: encoder returned {vectors.shape} vectors and {truncated.shape} "
                "flags "
                f"for {len(keys)} texts"
            )
        if self._pending.number is not None and self._pending.width != vectors.shape[1]:
            self.flush()  # a shard holds vectors of one width
        pending = self._pending
        if pending.number is None:
            pending.number = len(self._shards)
            self._shards.append(None)  # its path once written
            self._flags.append(None)
        rows = pending.rows + np.arange(len(keys), dtype=np.int64)
        pending.add(keys, vectors, truncated)
        self._flags[pending.number] = (
            pending.flags()
        )  # a view of the held flags, replaced by the written ones
        self._where.add([bytes.fromhex(k) for k in keys], pending.number << 32 | rows)
        if pending.nbytes > self.pending_bytes:
            self.flush()

    def flush(self) -> Path | None:
        """Write the entries held in memory as one shard (named by its keys); returns its path (None: none
        held)."""
        pending = self._pending
        if pending.number is None:
            return None
        keys, vectors, truncated = pending.keys, pending.vectors().copy(), pending.flags().copy()
        meta = self.directory / "namespace.json"
        if not meta.exists():
            atomic_write_json(meta, self.namespace.as_dict())
        buf = io.BytesIO()
        np.savez(buf, keys=np.array(keys), vectors=vectors, truncated=truncated)
        # Named by content, so two runs writing the same entries write the same file.
        shard = self.directory / f"{sha256_text(canonical_json(keys))[:24]}.npz"
        atomic_write_bytes(shard, buf.getvalue())
        number = pending.number
        self._shards[number], self._flags[number] = shard, truncated
        self._pending = _Pending()
        self._keep(number, vectors)
        self.shards_written += 1
        return shard


class _Pending:
    """A cache's entries not yet written, in the order they were stored: keys, and vectors and flags in
    buffers that double when full (a lookup reads them between stores, so appending must not copy them
    all)."""

    def __init__(self) -> None:
        self.number: int | None = None  # the shard number its entries are indexed under
        self.keys: list[str] = []
        self.rows = 0
        self._vectors: np.ndarray | None = None
        self._flags = np.zeros(0, dtype=bool)

    @property
    def width(self) -> int:
        return self._vectors.shape[1]

    @property
    def nbytes(self) -> int:
        return (
            self.rows * self._vectors.itemsize * self.width + 100 * self.rows
        )  # the keys' str objects, roughly

    def add(self, keys: list[str], vectors: np.ndarray, truncated: np.ndarray) -> None:
        end = self.rows + len(keys)
        if self._vectors is None or end > len(self._vectors):
            grown = np.empty((max(end, 2 * self.rows, 64), vectors.shape[1]), dtype=vectors.dtype)
            flags = np.zeros(len(grown), dtype=bool)
            if self._vectors is not None:
                grown[: self.rows], flags[: self.rows] = self._vectors[: self.rows], self._flags[: self.rows]
            self._vectors, self._flags = grown, flags
        self._vectors[self.rows : end], self._flags[self.rows : end] = vectors, truncated
        self.keys += keys
        self.rows = end

    def vectors(self) -> np.ndarray:
        return self._vectors[: self.rows]

    def flags(self) -> np.ndarray:
        return self._flags[: self.rows]


_LIVE: "weakref.WeakSet[VectorCache]" = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    """What a process computed is kept when it ends normally without a last flush (a crash loses it)."""
    for cache in list(_LIVE):
        if (
            cache._anchor.is_dir()
        ):  # else a removed scratch copy's (harness.pipeline.rescore): nothing to keep
            cache.flush()
