"""qwen3-embedding's registered settings on an Ollama dense retriever, against the loopback fake server:
num_ctx and num_batch sent with every request, inputs cut to `truncate_tokens` by a local tokenizer (the
query instruction kept whole) and counted, and the flagship config registering the paper's values."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_fake_ollama import FakeOllama

from harness.study import Study
from harness.retrieval.registry import RetrieverContext
from retrieval_support import chunks_of
from tiny_models import tiny_bert_sentence_transformer

ROOT = Path(__file__).resolve().parents[1]
LONG = " ".join(["redis cache worker retry"] * 10)  # 40 word-level tokens


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return tiny_bert_sentence_transformer(tmp_path_factory.mktemp("tok"))


def test_context_micro_batch_and_cut_reach_the_server(tmp_path, tokenizer_dir):
    with FakeOllama(models=("qwen3-embedding:0.6b",), embed_context=64) as fake:
        cfg = {"type": "dense", "backend": "ollama", "model": "qwen3-embedding:0.6b", "host": fake.host,
               "max_tokens": 8192, "num_batch": 8192, "truncate_tokens": 30, "tokenizer": str(tokenizer_dir)}
        retriever = RetrieverContext(tmp_path, {"qwen3": cfg}).get("qwen3")
        retriever.index("s", chunks_of(["redis cache", LONG])).search("what is the redis cache")
    embeds = [r for r in fake.requests if r["path"] == "/api/embed"]
    assert all(r["options"] == {"num_ctx": 8192, "num_batch": 8192} for r in embeds)
    sent = [t for r in embeds for t in r["input"]]
    assert sent[:2] == [
        "redis cache",
        " ".join(["redis cache worker retry"] * 7) + " redis cache",
    ]  # 30 tokens
    assert sent[2].startswith("Instruct: Given a web search query") and sent[2].endswith(
        "Query:what is the redis cache"
    )
    assert retriever.stats()["truncated_documents"] == 1 and retriever.stats()["truncated_queries"] == 0
    assert "inputs cut to 30 tokens (right; prefix kept whole)" in retriever.describe()["truncation"]


def test_the_flagship_registers_the_papers_qwen3_settings():
    retrievers = Study.at(ROOT).config.retrievers
    qwen3 = retrievers["qwen3"]
    assert (qwen3.max_tokens, qwen3.num_batch, qwen3.truncate_tokens, qwen3.truncation_side) == (
        8192,
        8192,
        3000,
        "right",
    )
    assert qwen3.tokenizer == "Qwen/Qwen3-Embedding-0.6B"
    assert (
        qwen3.query_prefix
        == "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    )
    rerank = retrievers["rerank"]
    assert (rerank.backend, rerank.model, rerank.first_stage, rerank.depth) == (
        "transformers",
        "Qwen/Qwen3-Reranker-0.6B",
        "hybrid",
        30,
    )
