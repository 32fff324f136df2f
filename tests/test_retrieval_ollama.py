"""Ollama embedding models through the `ollama` client, against a loopback server speaking /api/embed
and /api/show: prefixes, digest, context window, deliberate counted truncation, cache, missing model."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.retrieval.registry import RetrieverContext
from retrieval_support import chunks_of

BLOB = "ab" * 32
CONTEXT = 8  # tokens (whitespace-separated words) the fake model accepts


def fake_vector(text: str) -> list[float]:
    v = [0.0] * 8
    for w in text.lower().split():
        v[sum(map(ord, w)) % 8] += 1.0
    v[7] += 0.25
    return [2.0 * x for x in v]  # deliberately not unit length


class FakeOllama(BaseHTTPRequestHandler):
    models = {"nomic-embed-text": "nomic-bert", "mxbai-embed-large": "bert"}
    log: list[dict] = []

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _reply(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.log.append({"path": self.path, **request})
        model = request.get("model", "").removesuffix(":latest")
        if model not in self.models:
            return self._reply(404, {"error": f"model '{request.get('model')}' not found"})
        if self.path == "/api/show":
            return self._reply(200, {
                "modelfile": f"# Modelfile\nFROM /root/.ollama/models/blobs/sha256-{BLOB}\nPARAMETER num_ctx {CONTEXT}\n",
                "details": {"family": self.models[model]},
                "model_info": {f"{self.models[model]}.context_length": CONTEXT, "general.architecture": self.models[model]},
            })
        if self.path == "/api/embed":
            inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
            window = request.get("options", {}).get("num_ctx", CONTEXT)
            vectors = []
            for text in inputs:
                words = text.split()
                if len(words) > window:
                    if request.get("truncate") is False:
                        return self._reply(400, {"error": "the input length exceeds the context length"})
                    words = words[:window]
                vectors.append(fake_vector(" ".join(words)))
            return self._reply(200, {"model": request["model"], "embeddings": vectors, "prompt_eval_count": 1})
        self._reply(404, {"error": "unknown endpoint"})


@pytest.fixture
def server():
    FakeOllama.log = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def embed_requests():
    return [r for r in FakeOllama.log if r["path"] == "/api/embed"]


DOCS = ["redis cache driver", "blade component slots", "one two three four five six seven eight"]


def build(tmp_path, host, model="nomic-embed-text", **extra):
    cfg = {"type": "dense", "backend": "ollama", "model": model, "host": host, **extra}
    return RetrieverContext(tmp_path, {"nomic": cfg}).get("nomic")


def test_prefixes_digest_window_and_cosine_ranking(tmp_path, server):
    retriever = build(tmp_path, server)
    ranking = retriever.index("s", chunks_of(DOCS)).search("redis cache")
    described = retriever.describe()
    assert described["digest"] == f"sha256:{BLOB}" and described["max_tokens"] == CONTEXT
    assert (described["query_prefix"], described["document_prefix"]) == ("search_query: ", "search_document: ")
    sent = [text for r in embed_requests() for text in r["input"]]
    assert sent[:2] == ["search_document: redis cache driver", "search_document: blade component slots"]
    assert sent[-1] == "search_query: redis cache"
    assert all(r["options"] == {"num_ctx": CONTEXT} for r in embed_requests())
    docs = np.array([fake_vector("search_document: " + d) for d in DOCS[:2]] + [fake_vector(" ".join(("search_document: " + DOCS[2]).split()[:CONTEXT]))])
    query = np.array(fake_vector("search_query: redis cache"))
    expected = (docs / np.linalg.norm(docs, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    assert ranking.order.tolist() == np.lexsort((np.arange(3), -expected)).tolist() and ranking.order[0] == 0
    np.testing.assert_allclose(ranking.scores, expected[ranking.order], rtol=1e-6)


def test_only_inputs_over_the_window_are_truncated_and_counted(tmp_path, server):
    retriever = build(tmp_path, server)
    index = retriever.index("s", chunks_of(DOCS))
    assert index.n_truncated == 1 and retriever.stats()["truncated_documents"] == 1
    calls = [(len(r["input"]), r["truncate"]) for r in embed_requests()]
    # the batch is refused, retried text by text, and only the long text is re-sent with truncate=true
    assert calls == [(3, False), (1, False), (1, False), (1, False), (1, True)]


def test_rerun_hits_the_cache_for_every_text(tmp_path, server):
    build(tmp_path, server).index("s", chunks_of(DOCS)).search("redis cache")
    FakeOllama.log = []
    rerun = build(tmp_path, server)
    rerun.index("s", chunks_of(DOCS)).search("redis cache")
    assert embed_requests() == []
    assert rerun.stats() == {"truncated_documents": 1, "truncated_queries": 0, "cache_hits": 4, "cache_misses": 0}


def test_config_overrides_window_and_prefixes(tmp_path, server):
    retriever = build(tmp_path, server, model="mxbai-embed-large", max_tokens=4, query_prefix="Q> ")
    retriever.index("s", chunks_of(["a b c d e f"])).search("x")
    assert retriever.describe()["max_tokens"] == 4 and retriever.stats()["truncated_documents"] == 1
    assert embed_requests()[-1]["input"] == ["Q> x"]


def test_missing_model_says_ollama_pull(tmp_path, server):
    retriever = build(tmp_path, server, model="qwen3-embedding:8b")
    with pytest.raises(HarnessError, match=r"'qwen3-embedding:8b' is not available at .*: run `ollama pull qwen3-embedding:8b`"):
        retriever.index("s", chunks_of(DOCS))


def test_unreachable_server_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    retriever = build(tmp_path, f"http://127.0.0.1:{port}")
    with pytest.raises(HarnessError, match=r"cannot reach Ollama at http://127.0.0.1:\d+ .*ollama serve"):
        retriever.index("s", chunks_of(DOCS))


def test_ollama_model_is_required(tmp_path):
    with pytest.raises(HarnessError, match=r"`retrievers\.nomic\.model` is required for backend 'ollama'"):
        RetrieverContext(tmp_path, {"nomic": {"type": "dense", "backend": "ollama"}}).get("nomic")
