"""Ollama embedding models through the `ollama` client, against a loopback server speaking /api/embed
and /api/show: prefixes, digest, context window, deliberate counted truncation, cache, missing model."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from llm_fake_ollama import DIGEST, FakeOllama, fake_vector

from harness.errors import HarnessError
from harness.llm.base import BackendUnavailable, ModelNotFound
from harness.retrieval.dense import SCORE_DECIMALS
from harness.retrieval.registry import RetrieverContext
from retrieval_support import chunks_of

CONTEXT = 8  # tokens (whitespace-separated words) the fake model accepts


@pytest.fixture
def fake():
    with FakeOllama(models=("nomic-embed-text", "mxbai-embed-large"), embed_context=CONTEXT) as server:
        yield server


@pytest.fixture
def server(fake):
    return fake.host


def embed_requests(fake):
    return [r for r in fake.requests if r["path"] == "/api/embed"]


DOCS = ["redis cache driver", "blade component slots", "one two three four five six seven eight"]


def build(tmp_path, host, model="nomic-embed-text", **extra):
    cfg = {"type": "dense", "backend": "ollama", "model": model, "host": host, **extra}
    return RetrieverContext(tmp_path, {"nomic": cfg}).get("nomic")


def test_prefixes_digest_window_and_cosine_ranking(tmp_path, fake, server):
    retriever = build(tmp_path, server)
    ranking = retriever.index("s", chunks_of(DOCS)).search("redis cache")
    described = retriever.describe()
    assert described["digest"] == DIGEST and described["max_tokens"] == CONTEXT
    assert (described["query_prefix"], described["document_prefix"]) == (
        "search_query: ",
        "search_document: ",
    )
    sent = [text for r in embed_requests(fake) for text in r["input"]]
    assert sent[:2] == ["search_document: redis cache driver", "search_document: blade component slots"]
    assert sent[-1] == "search_query: redis cache"
    assert all(r["options"] == {"num_ctx": CONTEXT} for r in embed_requests(fake))
    docs = np.array(
        [fake_vector("search_document: " + d) for d in DOCS[:2]]
        + [fake_vector(" ".join(("search_document: " + DOCS[2]).split()[:CONTEXT]))]
    )
    query = np.array(fake_vector("search_query: redis cache"))
    expected = (docs / np.linalg.norm(docs, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    assert ranking.order.tolist() == np.lexsort((np.arange(3), -expected)).tolist() and ranking.order[0] == 0
    # cosine rounded to SCORE_DECIMALS places before ranking
    np.testing.assert_allclose(ranking.scores, expected[ranking.order], rtol=0,
                               atol=0.5 * 10.0 ** -SCORE_DECIMALS + 1e-12)


def test_only_inputs_over_the_window_are_truncated_and_counted(tmp_path, fake, server):
    retriever = build(tmp_path, server)
    index = retriever.index("s", chunks_of(DOCS))
    assert index.n_truncated == 1 and retriever.stats()["truncated_documents"] == 1
    calls = [(len(r["input"]), r["truncate"]) for r in embed_requests(fake)]
    # the batch is refused, retried text by text, and only the long text is re-sent with truncate=true
    assert calls == [(3, False), (1, False), (1, False), (1, False), (1, True)]


def test_rerun_hits_the_cache_for_every_text(tmp_path, fake, server):
    first = build(tmp_path, server)
    first.index("s", chunks_of(DOCS)).search("redis cache")
    first.flush()  # what the scoring loop does after each cell
    fake.requests.clear()
    rerun = build(tmp_path, server)
    rerun.index("s", chunks_of(DOCS)).search("redis cache")
    assert embed_requests(fake) == []
    assert rerun.stats() == {
        "truncated_documents": 1,
        "truncated_queries": 0,
        "cache_hits": 4,
        "cache_misses": 0,
    }


def test_config_overrides_window_and_prefixes(tmp_path, fake, server):
    retriever = build(tmp_path, server, model="mxbai-embed-large", max_tokens=4, query_prefix="Q> ")
    retriever.index("s", chunks_of(["a b c d e f"])).search("x")
    assert retriever.describe()["max_tokens"] == 4 and retriever.stats()["truncated_documents"] == 1
    assert embed_requests(fake)[-1]["input"] == ["Q> x"]


def test_missing_model_says_ollama_pull(tmp_path, fake, server):
    retriever = build(tmp_path, server, model="qwen3-embedding:8b")
    with pytest.raises(
        ModelNotFound,
        match=r"ollama at .* does not have model 'qwen3-embedding:8b'.*: "
        r"run `ollama pull qwen3-embedding:8b`",
    ):
        retriever.index("s", chunks_of(DOCS))


def test_unreachable_server_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    retriever = build(tmp_path, f"http://127.0.0.1:{port}")
    with pytest.raises(
        BackendUnavailable, match=r"ollama at http://127.0.0.1:\d+ is unreachable .*`ollama serve`"
    ):
        retriever.index("s", chunks_of(DOCS))


def test_ollama_model_is_required(tmp_path):
    with pytest.raises(HarnessError, match=r"`retrievers\.nomic\.model` is required for backend 'ollama'"):
        RetrieverContext(tmp_path, {"nomic": {"type": "dense", "backend": "ollama"}}).get("nomic")
