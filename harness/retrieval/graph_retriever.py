"""The chunk-graph retriever (`type: graph`, docs/chunking-lab.md): a base retriever's scores re-weighted by
personalised PageRank over a graph of the scope's chunks (the scoring itself is harness.retrieval.graph).

The graph is built from the chunks alone, so it works for every arm and dataset:
- adjacency: consecutive chunks of the same document;
- same section: equal non-empty section paths within one document;
- cross-references: chunk i's source text mentions provision x.y (the `ref_pattern`), and chunk j of the same
  document holds that provision (its section path ends in an "x.y ..." heading, or the heading line is in it);
- lexical: Jaccard of the chunks' lab token sets (stop words dropped, stemmed) at or above the threshold.
Base scores are taken from the base ranking, position by position, so any retriever can be the base.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from harness.chunking.provisions import PATH_SEPARATOR, compile_ref_pattern
from harness.config.lab import EDGE_TYPES
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.retrieval.base import Ranking, Retriever, ScopeIndex, search_batch
from harness.retrieval.graph import GraphParams, chunk_graph, graph_ranking
from harness.retrieval.lab_tokens import lab_tokens

MAX_CHUNKS = 5000  # the graph is a dense n x n matrix per scope; a larger scope is refused, not truncated
_LABEL = re.compile(r"(\d+(?:\.\d+)+)\.?\s")
_HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)+)\.?\s", re.MULTILINE)


def provisions_held(chunk: Chunk) -> set[str]:
    """Provision ids a chunk holds: the label of its innermost heading, and any numbered heading inside it."""
    held = set(_HEADING.findall(chunk.text))
    last = chunk.section_path.split(PATH_SEPARATOR)[-1].lstrip("# ") + " "
    m = _LABEL.match(last)
    if m:
        held.add(m.group(1))
    return held


def xref_pairs(chunks: Sequence[Chunk], pattern: re.Pattern) -> list[tuple[int, int]]:
    """(i, j), i != j, same document: chunk i refers to a provision chunk j holds."""
    holders: dict[tuple[str, str], list[int]] = {}
    for j, c in enumerate(chunks):
        for pid in provisions_held(c):
            holders.setdefault((c.doc_id, pid), []).append(j)
    pairs = set()
    for i, c in enumerate(chunks):
        for m in pattern.finditer(c.text):
            pairs.update((i, j) for j in holders.get((c.doc_id, m.group(1)), ()) if j != i)
    return sorted(pairs)


def scope_graph(chunks: Sequence[Chunk], params: GraphParams, pattern: re.Pattern) -> np.ndarray:
    # documents are kept apart: adjacency and section edges never join two documents
    sections = [f"{c.doc_id}\x00{c.section_path}" if c.section_path else "" for c in chunks]
    w = chunk_graph(sections, xref_pairs(chunks, pattern), [frozenset(lab_tokens(c.text)) for c in chunks],
                    GraphParams(**{**params.__dict__, "adjacency": 0.0}))
    if params.adjacency:
        for k in range(len(chunks) - 1):
            if chunks[k].doc_id == chunks[k + 1].doc_id:
                w[k, k + 1] += params.adjacency
                w[k + 1, k] += params.adjacency
    return w


class GraphIndex(ScopeIndex):
    def __init__(self, scope_key: str, base: ScopeIndex, w: np.ndarray, params: GraphParams):
        super().__init__(scope_key, base.n_chunks)
        self.base, self.w, self.params = base, w, params

    def _rerank(self, base: Ranking) -> Ranking:
        return graph_ranking(base.scores_by_position(), self.w, self.params)

    def search(self, query: str) -> Ranking:
        return self._rerank(self.base.search(query))

    def search_many(self, queries: Sequence[str]) -> list[Ranking]:
        return [self._rerank(r) for r in search_batch(self.base, queries)]

    def over_window(self) -> dict[str, np.ndarray]:
        return self.base.over_window()


class GraphRetriever(Retriever):
    def __init__(self, name: str, base: Retriever, params: GraphParams, *, ref_pattern: str):
        super().__init__(name)
        self.base, self.params, self.ref_pattern = base, params, ref_pattern
        self._pattern = compile_ref_pattern(ref_pattern)

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> GraphIndex:
        if len(chunks) > MAX_CHUNKS:
            raise HarnessError(
                f"retriever {self.name!r}: scope {scope_key} has {len(chunks)} chunks; the chunk "
                f"graph is built for at most {MAX_CHUNKS} (one document or a small pool)"
            )
        return GraphIndex(
            scope_key,
            self.base.index(scope_key, chunks),
            scope_graph(chunks, self.params, self._pattern),
            self.params,
        )

    def describe(self) -> dict[str, Any]:
        p = self.params
        return {"type": "graph", "base": self.base.name, "edges": {t: getattr(p, t) for t in EDGE_TYPES},
                "lexical_threshold": p.lexical_threshold, "ref_pattern": self.ref_pattern, "seeds": p.seeds,
                "restart": p.restart, "iterations": p.iterations, "base_weight": p.base_weight}
