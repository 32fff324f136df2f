"""Reranking: rescore the top `depth` of a first-stage ranking with a PairScorer; the tail keeps
first-stage order. Pair scores are cached on disk like embeddings, keyed by (scorer, digest, query, passage).
In replay (ReplayPairScorer, the audit's rescore) the cache alone answers, as harness.llm.replay answers a
model's calls from the generation cache: a pair it lacks is a ReplayMiss naming the pair.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np
from tqdm import tqdm

from harness.config.retrievers import BATCH_SIZE, RERANK_DEPTH
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.timing import ENCODER, waiting_on
from harness.files import canonical_json
from harness.llm.base import ReplayMiss
from harness.retrieval.base import Ranking, Retriever, ScopeIndex, search_batch
from harness.retrieval.cache import CacheNamespace, VectorCache
from harness.retrieval.dense import _load_sentence_transformers, directory_digest, resolve_model_dir

DEFAULT_RERANK_DEPTH = RERANK_DEPTH  # written once, in the config schema


@runtime_checkable
class PairScorer(Protocol):
    """Relevance of each passage to the query (higher is more relevant). `name` + `digest` identify
    the scorer for caching: change either whenever scores could change (weights, prompt, options)."""

    name: str
    digest: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderScorer:
    """A sentence-transformers CrossEncoder from a local path, an installed package or the local HF cache."""

    def __init__(
        self,
        model: str,
        *,
        max_length: int | None = None,
        batch_size: int = BATCH_SIZE,
        root: Path | None = None,
    ):
        self.name = model
        self.directory = resolve_model_dir(model, root=root)
        self.digest = directory_digest(self.directory)
        self.max_length, self.batch_size = max_length, batch_size
        self._model = None

    def _loaded(self):
        if self._model is None:
            st = _load_sentence_transformers()
            try:
                self._model = st.CrossEncoder(
                    str(self.directory), device="cpu", local_files_only=True, max_length=self.max_length
                )
            except Exception as e:
                raise HarnessError(
                    f"cannot load cross-encoder {self.name!r} from {self.directory}: {e}"
                ) from None
        return self._model

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        scores = self._loaded().predict(
            [(query, p) for p in passages], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(len(passages), -1)[:, 0]]

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "cross-encoder",
            "model": self.name,
            "digest": self.digest,
            "max_length": self.max_length,
        }


class ReplayPairScorer:
    """A scorer's identity (so the cache keys are the ones it wrote) without its model: the cache hands it
    only the pairs it lacks, and each is a miss."""

    def __init__(self, original: PairScorer, retriever: str):
        self.original, self.retriever = original, retriever
        self.name, self.digest = original.name, original.digest

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        raise ReplayMiss(
            f"replay: reranker {self.retriever!r} ({self.name}, digest {self.digest[:16]}) has no cached "
            f"pair score for query {query[:80]!r} and passage {passages[0][:80]!r}"
            + (f" (and {len(passages) - 1} more)" if len(passages) > 1 else "")
            + "; the pair-score cache lacks it: run `harness score` with the model to compute it"
        )

    def describe(self) -> dict[str, Any]:
        return self.original.describe() if hasattr(self.original, "describe") else {"model": self.name}


class RerankIndex(ScopeIndex):
    def __init__(self, retriever: "RerankRetriever", first_stage: ScopeIndex, passages: list[str]):
        super().__init__(first_stage.scope_key, first_stage.n_chunks)
        self.retriever, self.first_stage, self.passages = retriever, first_stage, passages

    def _rerank(self, query: str, first: Ranking) -> Ranking:
        head = first.order[: self.retriever.depth]
        tail = first.order[self.retriever.depth :]
        if len(head) == 0:
            return first
        scores = self.retriever.pair_scores(query, [self.passages[i] for i in head])
        by_score = np.lexsort((head, -scores))  # ties by chunk position
        head_scores = scores[by_score]
        # The reranker never scored the tail: give it strictly decreasing values below the head so the
        # run file's scores agree with its ranks (TREC tools sort by score).
        tail_scores = head_scores[-1] - np.arange(1, len(tail) + 1, dtype=np.float64)
        return Ranking(
            order=np.concatenate([head[by_score], tail]), scores=np.concatenate([head_scores, tail_scores])
        )

    def search(self, query: str) -> Ranking:
        return self._rerank(query, self.first_stage.search(query))

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        firsts = search_batch(self.first_stage, queries)
        # a local model scores a pair in about a second: show progress per query
        pairs = tqdm(zip(queries, firsts), total=len(queries), desc=f"rerank {self.scope_key}", unit="query",
                     leave=False, disable=not self.retriever.progress)
        return [self._rerank(q, r) for q, r in pairs]

    def over_window(self) -> dict[str, np.ndarray]:
        return self.first_stage.over_window()


class RerankRetriever(Retriever):
    def __init__(
        self, name: str, first_stage: Retriever, scorer: PairScorer, *, depth: int = DEFAULT_RERANK_DEPTH,
        cache_dir: str | Path, progress: bool = False,
    ):
        super().__init__(name)
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"retriever {name!r}: depth must be a positive integer, got {depth!r}")
        if not isinstance(scorer, PairScorer):
            raise TypeError(
                f"retriever {name!r}: {type(scorer).__name__} does not implement PairScorer (name, digest, "
                "score)"
            )
        self.first_stage, self.scorer, self.depth, self.progress = first_stage, scorer, depth, progress
        self.cache = VectorCache(
            cache_dir, CacheNamespace("pair-score", scorer.name, scorer.digest, ""), dtype=np.float64
        )

    def pair_scores(self, query: str, passages: list[str]) -> np.ndarray:
        def score_missing(pairs: list[str]) -> tuple[np.ndarray, np.ndarray]:
            # every pair in one call shares this query; the cache hands back only the unseen passages
            missing = [passage for _, passage in (_decode_pair(p) for p in pairs)]
            with waiting_on(ENCODER):
                scores = np.asarray(self.scorer.score(query, missing), dtype=np.float64)
            if scores.shape != (len(missing),) or not np.isfinite(scores).all():
                raise HarnessError(
                    f"reranker {self.scorer.name!r} returned {scores.shape} scores (finite: "
                    f"{np.isfinite(scores).all()}) "
                    f"for {len(missing)} passages"
                )
            return scores.reshape(-1, 1), np.zeros(len(missing), dtype=bool)

        vectors, _ = self.cache.encode([canonical_json([query, p]) for p in passages], score_missing)
        return vectors[:, 0].astype(np.float64)

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> RerankIndex:
        return RerankIndex(self, self.first_stage.index(scope_key, chunks), [c.indexed_text for c in chunks])

    def model_identity(self) -> str:
        return str(self.scorer.digest)

    def describe(self) -> dict[str, Any]:
        scorer = self.scorer.describe() if hasattr(self.scorer, "describe") else {"model": self.scorer.name}
        return {
            "type": "rerank",
            "first_stage": self.first_stage.name,
            "depth": self.depth,
            "scorer": scorer | {"digest": self.scorer.digest},
            "tail": "first-stage order, scores placed below the reranked head",
        }

    def flush(self) -> None:
        self.cache.flush()

    def stats(self) -> dict[str, int]:
        return {"cache_hits": self.cache.hits, "cache_misses": self.cache.misses}


def _decode_pair(text: str) -> tuple[str, str]:
    query, passage = json.loads(text)
    return query, passage
