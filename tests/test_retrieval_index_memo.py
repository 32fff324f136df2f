"""Scope indexes shared by the cells of one arm (harness.retrieval.base.IndexMemo): a hit only for the same
chunks, the same rankings as a fresh build, and nothing kept when the context was not asked to share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.retrieval.base import IndexMemo
from harness.retrieval.registry import RetrieverContext
from metrics_support import chunk

CONFIGS = {"bm25": {"type": "bm25"},
           "dense": {"type": "dense", "backend": "simulated", "model": "nomic-embed-text"},
           "hybrid": {"type": "rrf", "of": ["bm25", "dense"]}}
TEXTS = ["the cat sat on the mat", "stock markets fell sharply", "a cat and a mat", "rain in the hills"]


def chunks():
    return [replace(chunk(t, i), indexed_text=t) for i, t in enumerate(TEXTS)]


def test_a_hybrid_reuses_its_members_indexes_and_ranks_as_a_fresh_build(tmp_path):
    shared = RetrieverContext(tmp_path / "a", CONFIGS, memo=IndexMemo())
    first = shared.get("bm25").index("doc", chunks())
    assert shared.get("bm25").index("doc", chunks()) is first  # the next cell of the arm
    fused = shared.get("hybrid").index("doc", chunks())
    assert fused.members[0] is first and shared.memo.hits >= 2
    fresh = RetrieverContext(tmp_path / "b", CONFIGS).get("hybrid").index("doc", chunks())
    for got, want in zip(
        fused.search_many(["cat mat", "markets"]), fresh.search_many(["cat mat", "markets"])
    ):
        assert np.array_equal(got.order, want.order) and np.array_equal(got.scores, want.scores)


def test_any_change_to_a_chunk_or_the_scope_builds_anew(tmp_path):
    context = RetrieverContext(tmp_path, CONFIGS, memo=IndexMemo())
    bm25 = context.get("bm25")
    first = bm25.index("doc", chunks())
    changed = chunks()
    changed[2] = replace(changed[2], indexed_text="a dog and a rug")
    assert bm25.index("doc", changed) is not first
    moved = chunks()
    moved[0] = replace(moved[0], spans=((1, 5),))
    assert bm25.index("doc", moved) is not first
    assert bm25.index("other scope", chunks()) is not first
    assert bm25.index("doc", chunks()[:3]) is not first
    context.memo.clear()
    assert bm25.index("doc", chunks()) is not first


def test_without_a_memo_every_index_is_built(tmp_path):
    bm25 = RetrieverContext(tmp_path, CONFIGS).get("bm25")
    assert bm25.memo is None and bm25.index("doc", chunks()) is not bm25.index("doc", chunks())


def test_a_chunk_made_where_a_freed_one_was_is_hashed_anew():
    """Chunks are recognised by identity (each hashed once per scope): the memo holds every chunk it has
    hashed, so a new chunk can never take a freed one's id and its digest."""
    memo = IndexMemo()
    texts = []

    def index(text: str) -> str:
        # one chunk made and dropped in here (CPython gives the next one its memory): only the memo keeps it
        return memo.get("bm25", "doc", [chunk(text)], lambda: text)

    for i in range(200):
        texts.append(f"text {i}")
        assert index(texts[-1]) == texts[-1]
