"""Building retrievers from configs/study.yaml entries: canonical types, shared members, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.retrievers import DENSE_BACKENDS, RERANK_BACKENDS, RETRIEVER_TYPES
from harness.errors import HarnessError
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.hybrid import RRFRetriever
from harness.retrieval.registry import BUILDERS, SCORERS, RetrieverContext, build_retriever
from harness.study import Study
from retrieval_support import chunks_of
from harness.grid.paths import results_dir

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def test_canonical_names():
    assert tuple(RETRIEVER_TYPES) == ("bm25", "dense", "rrf", "graph", "rerank", "python", "run-file")
    assert DENSE_BACKENDS == ("sentence-transformers", "ollama", "simulated")
    assert tuple(RERANK_BACKENDS) == ("cross-encoder", "llm-yes", "simulated", "transformers", "http-rerank")


def test_every_declared_type_and_rerank_backend_has_a_builder():
    assert list(BUILDERS) == list(RETRIEVER_TYPES)
    assert list(SCORERS) == list(RERANK_BACKENDS)


@pytest.mark.skipif(not (DEMO / "configs" / "study.yaml").exists(), reason="demo study config not present")
def test_demo_retrievers_build_and_share_members(tmp_path):
    study = Study.at(DEMO)
    configs = {k: v for k, v in study.retrievers.items() if v.type != "rerank"}
    ctx = RetrieverContext(tmp_path, configs, study.models, study.root)
    built = ctx.all()
    assert list(built) == [k for k in study.retrievers if study.retrievers[k].type != "rerank"]
    hybrid = built["hybrid"]
    assert isinstance(hybrid, RRFRetriever) and hybrid.members == [built["bm25"], built["minilm"]]
    assert RetrieverContext.for_study(study).cache_dir == results_dir(study) / "embeddings"


def test_bm25_options_reach_the_retriever(tmp_path):
    r = build_retriever(
        "b", {"type": "bm25", "k1": 1.2, "b": 0.5, "epsilon": 0.1}, context=RetrieverContext(tmp_path, {})
    )
    assert isinstance(r, BM25Retriever) and (r.k1, r.b, r.epsilon) == (1.2, 0.5, 0.1)
    assert r.describe()["k1"] == 1.2


def test_rrf_of_two_bm25_variants_searches(tmp_path):
    configs = {
        "a": {"type": "bm25"},
        "b": {"type": "bm25", "k1": 0.9},
        "h": {"type": "rrf", "of": ["a", "b"], "k": 10},
    }
    ranking = (
        RetrieverContext(tmp_path, configs).get("h").index("s", chunks_of(["x y", "y z", "z w"])).search("z")
    )
    assert sorted(ranking.order.tolist()) == [0, 1, 2] and ranking.scores[0] == pytest.approx(2 / 11)


@pytest.mark.parametrize(
    "configs, name, message",
    [
        (
            {"x": {"type": "tfidf"}},
            "x",
            r"`retrievers\.x\.type` is 'tfidf', not a known value; known: bm25, dense, rrf, graph, rerank",
        ),
        ({"x": "bm25"}, "x", r"`retrievers\.x` must be a mapping with `type:`"),
        (
            {"x": {"type": "bm25", "k2": 1}},
            "x",
            r"`retrievers\.x\.k2` is not a known key \(did you mean `k1`\?\)",
        ),
        (
            {"x": {"type": "bm25", "b": 1.5}},
            "x",
            r"`retrievers\.x\.b` must be a number >= 0 and <= 1, got 1.5",
        ),
        ({"x": {"type": "bm25", "k1": "big"}}, "x", r"`retrievers\.x\.k1` must be a number >= 0, got 'big'"),
        (
            {"x": {"type": "dense", "backend": "faiss"}},
            "x",
            r"`retrievers\.x\.backend` must be one of 'sentence-transformers', 'ollama', 'simulated', got "
            r"'faiss'",
        ),
        (
            {"x": {"type": "dense", "max_tokens": 0}},
            "x",
            r"`retrievers\.x\.max_tokens` must be an integer >= 1, got 0",
        ),
        (
            {"a": {"type": "bm25"}, "x": {"type": "rrf", "of": ["a"]}},
            "x",
            r"`retrievers\.x\.of` must be a list of 2 or more items",
        ),
        (
            {"a": {"type": "bm25"}, "x": {"type": "rrf", "of": ["a", "a"]}},
            "x",
            r"`retrievers\.x\.of` must be .*no repeats",
        ),
        (
            {"a": {"type": "bm25"}, "x": {"type": "rrf", "of": ["a", "nope"]}},
            "x",
            r"retriever 'nope' is not configured",
        ),
        (
            {"a": {"type": "bm25"}, "b": {"type": "bm25"}, "x": {"type": "rrf", "of": ["a", "b"], "k": 0}},
            "x",
            r"`retrievers\.x\.k` must be a number > 0",
        ),
        ({"x": {"type": "rrf", "of": ["y", "x"]}, "y": {"type": "bm25"}}, "x", r"cycle: x -> x"),
        (
            {
                "x": {"type": "rerank", "first_stage": "y", "model": "m"},
                "y": {"type": "rerank", "first_stage": "x", "model": "m"},
            },
            "x",
            r"cycle: x -> y -> x",
        ),
        (
            {"x": {"type": "rerank", "backend": "colbert", "first_stage": "y"}},
            "x",
            r"`retrievers\.x\.backend` must be one of 'cross-encoder', 'llm-yes', 'simulated', "
            r"'transformers', 'http-rerank', got 'colbert'",
        ),
        ({"x": {"type": "rerank", "model": "m"}}, "x", r"`retrievers\.x\.first_stage` is required"),
        (
            {"y": {"type": "bm25"}, "x": {"type": "rerank", "first_stage": "y"}},
            "x",
            r"`retrievers\.x\.model` is required",
        ),
        (
            {"y": {"type": "bm25"}, "x": {"type": "rerank", "first_stage": "y", "model": "m", "depth": 0}},
            "x",
            r"`retrievers\.x\.depth` must be an integer >= 1",
        ),
        ({}, "ghost", r"retriever 'ghost' is not configured"),
    ],
)
def test_config_errors_name_the_retriever_and_the_fix(tmp_path, configs, name, message):
    with pytest.raises(HarnessError, match=message):
        RetrieverContext(tmp_path, configs).get(name)


def test_datasets_option_is_accepted_and_checked(tmp_path):
    assert isinstance(
        RetrieverContext(tmp_path, {"b": {"type": "bm25", "datasets": ["papers"]}}).get("b"), BM25Retriever
    )
    with pytest.raises(
        HarnessError, match=r"`retrievers\.b\.datasets` must be a non-empty list .*got 'papers'"
    ):
        RetrieverContext(tmp_path, {"b": {"type": "bm25", "datasets": "papers"}}).get("b")
    assert isinstance(
        RetrieverContext(tmp_path, {"b": {"type": "bm25", "arms": ["E"]}}).get("b"), BM25Retriever
    )
    with pytest.raises(HarnessError, match=r"`retrievers\.b\.arms` must be a non-empty list .*got 'E'"):
        RetrieverContext(tmp_path, {"b": {"type": "bm25", "arms": "E"}}).get("b")


def test_llm_yes_needs_a_configured_model(tmp_path):
    pytest.importorskip(
        "harness.retrieval.rerank_llm", reason="the LLM layer's reranker is not in this checkout"
    )
    configs = {
        "b": {"type": "bm25"},
        "rr": {"type": "rerank", "first_stage": "b", "backend": "llm-yes", "model": "nope"},
    }
    with pytest.raises(
        HarnessError, match=r"retriever 'rr': `model: nope` must name an entry of the `models:` section"
    ):
        RetrieverContext(tmp_path, configs, {"embedded": {"backend": "llama.cpp"}}, tmp_path).get("rr")
