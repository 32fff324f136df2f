"""Retrieval-time expansion cells and per-seed averaging in the score stage, end to end on a copy of the demo
study (LLM-free: the expansions start from F512c, whose windows share section paths that SX follows)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.arms.build import read_chunk_set
from harness.cli.main import main
from harness.data.load import load_dataset, read_selection
from harness.data.model import Chunk
from harness.files import read_json
from harness.metrics.registry import budgets_from_config, score_question
from harness.pipeline.addon_cells import chunk_variants, expand, mean_over_variants
from harness.grid.cells import arm_spec, chunk_sets
from harness.provenance.freeze import frozen_hash
from harness.retrieval.expansion import ChunkPositions
from harness.retrieval.registry import RetrieverContext
from pipeline_support import edit_config, make_llm_free_study
from harness.grid.paths import chunks_path, per_question_path, results_dir, run_path


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    study = make_llm_free_study(tmp_path_factory.mktemp("study"), freeze=False)
    edit_config(study.root, lambda c: c["arms"].update({
        "W+SX": {"kind": "E+SX", "of": "F512c", "datasets": ["papers"]},
        "W+AX": {"kind": "E+AX", "of": "F512c", "datasets": ["papers"]},
    }))
    for command in ("select", "freeze", "build-arms", "score"):
        assert (
            main(
                [
                    command,
                    "--study",
                    str(study.root),
                    *(["--no-progress"] if command in ("build-arms", "score") else []),
                ]
            )
            == 0
        )
    return study.__class__.at(study.root)


def test_expansion_arms_have_cells_but_no_chunk_set(scored):
    assert {cs.arm.name for cs in chunk_sets(scored)} == {"S", "S+T", "F512c", "F256t", "P", "FL"}
    assert not chunks_path(scored, "papers", "W+SX").exists()
    df = pd.read_parquet(per_question_path(scored, "papers"))
    s, sx = df[df["arm"] == "F512c"], df[df["arm"] == "W+SX"]
    assert len(sx) == len(s) and set(sx["qid"]) == set(s["qid"])
    run = run_path(scored, "papers", "W+SX", "bm25").read_text(encoding="utf-8").splitlines()
    assert run[0].split()[3] == "1" and run[0].split()[5] == "W+SX__bm25"


def test_expanded_lists_are_cut_by_the_budget_as_any_other(scored):
    """Each row equals the metric of the expanded ranking under the usual budget cut, recomputed here."""
    dataset = load_dataset(scored, "papers", selection=read_selection(scored))
    chunks = read_chunk_set(scored, dataset, arm_spec(scored, "F512c"), frozen_hash=frozen_hash(scored))
    retriever = RetrieverContext.for_study(scored).get("bm25")
    budgets = budgets_from_config(scored.config.budgets, dataset.metric_set)
    df = pd.read_parquet(per_question_path(scored, "papers")).set_index(["arm", "qid", "metric"])["value"]
    changed = 0
    for q in dataset.questions[:12]:
        doc = [c for c in chunks if c.doc_id == q.scope[0]]
        ranking = retriever.index(q.scope[0], doc).search(q.query)
        ids = [doc[j].chunk_id for j in ranking.order.tolist()]
        by_id = {c.chunk_id: c for c in doc}
        expanded = [by_id[i] for i in expand("SX", ids, ChunkPositions(doc)).chunk_ids]
        for metric, value in score_question(dataset.metric_set, q, expanded, budgets):
            assert df[("W+SX", q.qid, metric)] == pytest.approx(value, abs=1e-12), (q.qid, metric)
        changed += df[("W+SX", q.qid, "rec@512t")] != df[("F512c", q.qid, "rec@512t")]
    assert changed > 0  # expansion moved the budget-cut context for some question


def test_insertions_per_expansion_are_recorded(scored):
    counts = read_json(results_dir(scored) / "per_question" / "papers.manifest.json")["cell_counts"]
    sx = counts["papers/W+SX/bm25"]["inserted_per_expansion"]
    assert sx["units"] > 0 and sx["total"] > 0 and sum(sx["distribution"].values()) == sx["units"]
    # F512c has no keys, so KX inserts nothing after any chunk and its control AX gets the same zero quota
    ax = counts["papers/W+AX/bm25"]["inserted_per_expansion"]
    assert ax["total"] == 0 and ax["units"] > 0


def _tagged(variant: str, n: int) -> list[Chunk]:
    return [
        Chunk("d", f"d#{i}@{variant}", "t", ((0, 1),), "", 1, 1, (), "t", {"variant": variant})
        for i in range(n)
    ]


def test_variants_split_in_order_and_average_per_metric():
    assert chunk_variants(_tagged("s0", 2) + _tagged("s1", 3)) == [
        ("@s0", _tagged("s0", 2)),
        ("@s1", _tagged("s1", 3)),
    ]
    plain = [Chunk("d", "d#0", "t", ((0, 1),), "", 1, 1, ())]
    assert chunk_variants(plain) == [("", plain)]
    with pytest.raises(Exception, match="mixes chunks with and without"):
        chunk_variants(plain + _tagged("s0", 1))
    assert mean_over_variants([[("a", 0.2), ("b", 1.0)], [("a", 0.4), ("b", 0.0)]]) == [
        ("a", pytest.approx(0.3)),
        ("b", 0.5),
    ]
    assert mean_over_variants([[("a", 0.1)]]) == [("a", 0.1)]


# --- the expansion worked out only as far as it is read (ExpandedRanking) ---

def _random_chunk_set(rng, n_docs=4, per_doc=9):
    from harness.data.model import Chunk

    chunks = []
    for d in range(n_docs):
        for i in range(per_doc):
            key = f"k{rng.randrange(4)}" if rng.random() < 0.7 else ""
            related = [f"k{rng.randrange(4)}" for _ in range(rng.randrange(3))]
            chunks.append(
                Chunk(
                    doc_id=f"d{d}",
                    chunk_id=f"d{d}#{i}",
                    text=f"chunk {d} {i}",
                    spans=((i, i + 1),),
                    section_path=f"s{rng.randrange(3)}" if rng.random() < 0.8 else "",
                    start_line=i + 1,
                    end_line=i + 1,
                    block_types=("paragraph",),
                    indexed_text=f"chunk {d} {i}",
                    generated={"key": key, "related_keys": related},
                )
            )
    return chunks


@pytest.mark.parametrize("mode", ["KX", "AX", "SX"])
def test_an_expansion_read_in_part_equals_the_whole_expansion(mode, monkeypatch):
    import random

    import numpy as np

    from harness.pipeline.addon_cells import ExpandedRanking, expanded_run_block, inserted_in_head
    from harness.retrieval.base import Ranking

    monkeypatch.setattr(ExpandedRanking, "FIRST", 2)  # grow several times on a small set
    rng = random.Random(7)
    partial = 0
    for _ in range(25):
        chunks = _random_chunk_set(rng)
        ids = [c.chunk_id for c in chunks]
        by_id = {c.chunk_id: c for c in chunks}
        scores = np.array([rng.random() for _ in chunks])
        order = Ranking.lazy(scores.copy()).order.tolist()
        whole = expand(mode, [ids[j] for j in order], ChunkPositions(chunks))
        for depth in (1, 3, 10, len(chunks)):
            lazy = ExpandedRanking(mode, Ranking.lazy(scores.copy()), ids, ChunkPositions(chunks), by_id)
            block = expanded_run_block("q", lazy, "t", depth=depth)
            assert list(block.chunk_ids) == list(whole.chunk_ids[:depth])
            assert block.scores.tolist() == [float(len(chunks) - r) for r in range(depth)]
            assert inserted_in_head(lazy.head(depth), depth) == inserted_in_head(whole, depth)
            partial += len(lazy.expansion.chunk_ids) < len(chunks)
            assert [c.chunk_id for c in lazy] == list(whole.chunk_ids)  # read to the end: the whole list
    assert partial  # the run file's head did not need the whole expansion
