"""Retrievers (docs/design.md, Retrievers): BM25, dense, reciprocal rank fusion, reranking; run files;
caches."""

from harness.retrieval.base import Ranking, Retriever, ScopeIndex, rank_by_score
from harness.retrieval.registry import RetrieverContext, build_retriever

__all__ = ["Ranking", "Retriever", "RetrieverContext", "ScopeIndex", "build_retriever", "rank_by_score"]
