"""Chunk-graph scoring (SpectRAG-style, docs/chunking-lab.md): personalised PageRank over one document's
chunks.

Edges (undirected, weights added when several types join the same pair): adjacency (consecutive chunk
positions), same section (equal non-empty section paths), resolved cross-references (given pairs), and
lexical similarity (Jaccard of token sets at or above a threshold). A weight of 0 switches a type off.

PageRank: restart vector p0 = base scores of the top-3 seeds (ties by position; only positive scores
seed) divided by their sum; p <- r p0 + (1 - r) W^T D^-1 p for 25 iterations from p = p0. A chunk without
edges passes no mass on (its column of W^T D^-1 is zero). Final score = 0.6 x min-max normalised base
score + 0.4 x p / max(p); rankings break ties by position (rank_by_score).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from harness.retrieval.base import Ranking, rank_by_score

from harness.config import lab
from harness.config.lab import EDGE_TYPES


@dataclass(frozen=True)
class GraphParams:
    """Defaults written once, in harness.config.lab."""

    adjacency: float = lab.GRAPH_ADJACENCY
    section: float = lab.GRAPH_SECTION
    xref: float = lab.GRAPH_XREF
    lexical: float = lab.GRAPH_LEXICAL
    lexical_threshold: float = lab.GRAPH_LEXICAL_THRESHOLD  # Jaccard of token sets
    seeds: int = lab.GRAPH_SEEDS
    restart: float = lab.GRAPH_RESTART
    iterations: int = lab.GRAPH_ITERATIONS
    base_weight: float = lab.GRAPH_BASE_WEIGHT  # the PageRank term gets 1 - base_weight

    def without(self, *edge_types: str) -> "GraphParams":
        """These parameters with the named edge types switched off (the ablation switch)."""
        unknown = set(edge_types) - set(EDGE_TYPES)
        if unknown:
            raise ValueError(f"unknown edge type(s) {sorted(unknown)}; known: {', '.join(EDGE_TYPES)}")
        return replace(self, **{t: 0.0 for t in edge_types})


def jaccard_matrix(token_sets: Sequence[frozenset[str]]) -> np.ndarray:
    n = len(token_sets)
    vocab = {t: k for k, t in enumerate(sorted(set().union(*token_sets)))} if n else {}
    m = np.zeros((n, len(vocab)))
    for i, ts in enumerate(token_sets):
        m[i, [vocab[t] for t in ts]] = 1.0
    inter = m @ m.T
    sizes = m.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def chunk_graph(
    sections: Sequence[str],
    xref_pairs: Sequence[tuple[int, int]],
    token_sets: Sequence[frozenset[str]],
    params: GraphParams = GraphParams(),
) -> np.ndarray:
    """The symmetric weighted adjacency matrix (zero diagonal) over n chunks in position order."""
    n = len(sections)
    if len(token_sets) != n:
        raise ValueError(f"token_sets has {len(token_sets)} entries for {n} chunks")
    w = np.zeros((n, n))
    if params.adjacency and n > 1:
        k = np.arange(n - 1)
        w[k, k + 1] += params.adjacency
        w[k + 1, k] += params.adjacency
    if params.section:
        sec = np.array(sections, dtype=object)
        same = (sec[:, None] == sec[None, :]) & (sec[:, None] != "")
        w += params.section * same
    if params.xref:
        for i, j in xref_pairs:
            if i != j:
                w[i, j] += params.xref
                w[j, i] += params.xref
    if params.lexical:
        w += params.lexical * (jaccard_matrix(token_sets) >= params.lexical_threshold)
    np.fill_diagonal(w, 0.0)
    return w


def seed_vector(base: np.ndarray, seeds: int) -> np.ndarray:
    """Restart vector: the top `seeds` positive base scores (ties by position), normalised to sum 1."""
    p0 = np.zeros(len(base))
    top = [i for i in rank_by_score(base).top(seeds) if base[i] > 0]
    if top:
        p0[top] = base[top] / base[top].sum()
    return p0


def personalised_pagerank(
    w: np.ndarray, p0: np.ndarray, *, restart: float = 0.5, iterations: int = 25
) -> np.ndarray:
    degree = w.sum(axis=1)
    # column j of the transition holds w[j, :] / degree[j]: mass flows from j to its neighbours
    transition = np.divide(w, degree[:, None], out=np.zeros_like(w), where=degree[:, None] > 0).T
    p = p0.copy()
    for _ in range(iterations):
        p = restart * p0 + (1 - restart) * (transition @ p)
    return p


def min_max(x: np.ndarray) -> np.ndarray:
    span = x.max() - x.min() if len(x) else 0.0
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def graph_scores(base: np.ndarray, w: np.ndarray, params: GraphParams = GraphParams()) -> np.ndarray:
    base = np.asarray(base, dtype=np.float64)
    p = personalised_pagerank(
        w, seed_vector(base, params.seeds), restart=params.restart, iterations=params.iterations
    )
    mass = p / p.max() if len(p) and p.max() > 0 else np.zeros_like(p)
    return params.base_weight * min_max(base) + (1 - params.base_weight) * mass


def graph_ranking(base: np.ndarray, w: np.ndarray, params: GraphParams = GraphParams()) -> Ranking:
    return rank_by_score(graph_scores(base, w, params))
