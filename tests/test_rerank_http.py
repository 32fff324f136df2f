"""`backend: http-rerank` against loopback /rerank servers (http.server in a thread): both body conventions,
the Qwen3 prompt wrapping, the model-id check at start, a server dying mid-run (failover to another, and
the run stopping when none is left, with the scores so far cached), and malformed answers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.errors import HarnessError
from harness.llm.base import BackendUnavailable, ModelMismatch
from harness.retrieval.registry import RetrieverContext
from harness.retrieval.rerank_qwen3 import PROMPT_HEAD, PROMPT_TAIL
from retrieval_support import chunks_of

MODEL = "Qwen/Qwen3-Reranker-0.6B"
TEXTS = [
    "redis cache",
    "queue worker retry",
    "a",
    "database index table",
    "which job",
    "late chunking window",
]


def relevance(document: str) -> float:
    """The fake model: longer documents are more relevant."""
    return len(document) / 1000


class FakeRerankServer:
    """A /rerank server; `api` cohere (vLLM, Infinity) or tei; `die_after`: requests it answers before it
    drops
    every connection; `bad`: answers a score list missing one document."""

    def __init__(self, served=MODEL, api="cohere", die_after=None, bad=False):
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/models" and api == "cohere":
                    return self._send({"object": "list", "data": [{"id": served, "object": "model"}]})
                if self.path == "/info" and api == "tei":
                    return self._send({"model_id": served, "model_type": {"reranker": {}}})
                self.send_error(404)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if fake.die_after is not None and len(fake.requests) >= fake.die_after:
                    self.close_connection = True  # dropped without an answer, as a killed server
                    return
                fake.requests.append(body)
                documents = body["texts"] if api == "tei" else body["documents"]
                rows = [{"index": i, "score" if api == "tei" else "relevance_score": relevance(d)}
                        for i, d in enumerate(documents)]
                rows.sort(key=lambda r: -list(r.values())[1])  # servers answer best first
                if bad:
                    rows = rows[:-1]
                self._send(rows if api == "tei" else {"id": "x", "model": served, "results": rows})

        self.die_after = die_after
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def configs(**rerank):
    entry = {"type": "rerank", "first_stage": "first", "depth": 6, "backend": "http-rerank", "model": MODEL,
             "batch_size": 2} | rerank
    return {"first": {"type": "bm25"}, "served": entry}


def expected_order(texts):
    return sorted(range(len(texts)), key=lambda i: (-relevance(texts[i]), i))


@pytest.mark.parametrize("api", ["cohere", "tei"])
def test_scores_come_back_by_index_and_rank_the_head(tmp_path, api):
    with FakeRerankServer(api=api, bad=False) as fake:
        retriever = RetrieverContext(tmp_path, configs(base_url=fake.url, api=api, qwen3_prompt=False)).get(
            "served"
        )
        ranking = retriever.index("s", chunks_of(TEXTS)).search("redis")
    assert ranking.order.tolist() == expected_order(TEXTS)
    assert len(fake.requests) == 3  # six documents, two per request
    assert all(r["query"] == "redis" for r in fake.requests)


def test_qwen3_prompt_wraps_the_query_and_documents(tmp_path):
    with FakeRerankServer() as fake:
        retriever = RetrieverContext(tmp_path, configs(base_url=fake.url, instruction="Find the fix")).get(
            "served"
        )
        retriever.index("s", chunks_of(TEXTS)).search("redis")
    first = fake.requests[0]
    assert first["model"] == MODEL
    assert first["query"] == PROMPT_HEAD + "<Instruct>: Find the fix\n<Query>: redis\n"
    assert all(d.startswith("<Document>: ") and d.endswith(PROMPT_TAIL) for d in first["documents"])


def test_a_server_reporting_another_model_id_is_refused_at_start(tmp_path):
    with FakeRerankServer(served="BAAI/bge-reranker-v2-m3") as fake:
        with pytest.raises(
            ModelMismatch,
            match=r"serves BAAI/bge-reranker-v2-m3, not the configured model 'Qwen/Qwen3-Reranker-0.6B'",
        ):
            RetrieverContext(tmp_path, configs(base_url=fake.url)).get("served")
    assert fake.requests == []


def test_a_server_dying_mid_run_fails_over_to_the_other(tmp_path):
    failover = {
        "backoff_s": 0.05,
        "max_backoff_s": 0.05,
        "failures_before_down": 2,
    }  # a rested server is passed over
    with FakeRerankServer(die_after=1) as dying, FakeRerankServer() as healthy:
        hosts = [{"url": dying.url, "concurrency": 1}, {"url": healthy.url, "concurrency": 1}]
        retriever = RetrieverContext(tmp_path, configs(hosts=hosts, failover=failover)).get("served")
        rankings = retriever.index("s", chunks_of(TEXTS)).search_many(["redis", "queue"])
    assert [r.order.tolist() for r in rankings] == [expected_order(TEXTS)] * 2
    assert (
        len(dying.requests) == 1 and len(healthy.requests) == 5
    )  # 2 queries x 3 requests, one on the dying server
    stats = {s.url: s for s in retriever.scorer.pool.stats()}
    assert stats[dying.url].failures >= 1


def test_the_only_server_dying_stops_the_run_and_a_rerun_resumes_from_the_cache(tmp_path):
    failover = {"backoff_s": 0, "max_backoff_s": 0, "failures_before_down": 2}
    with FakeRerankServer(die_after=3) as dying:
        retriever = RetrieverContext(tmp_path, configs(hosts=[{"url": dying.url}], failover=failover)).get(
            "served"
        )
        index = retriever.index("s", chunks_of(TEXTS))
        index.search("redis")  # three requests: answered and cached
        with pytest.raises(
            BackendUnavailable, match="every server of model 'Qwen/Qwen3-Reranker-0.6B' is down"
        ):
            index.search("queue")
    with FakeRerankServer() as restarted:
        again = RetrieverContext(tmp_path, configs(base_url=restarted.url)).get("served")
        again.index("s", chunks_of(TEXTS)).search("redis")
    assert restarted.requests == [] and again.stats() == {"cache_hits": 6, "cache_misses": 0}


def test_an_answer_missing_a_document_is_an_error(tmp_path):
    with FakeRerankServer(bad=True) as fake:
        pool = {"hosts": [{"url": fake.url}], "failover": {"backoff_s": 0, "failures_before_down": 1}}
        retriever = RetrieverContext(tmp_path, configs(**pool)).get("served")
        with pytest.raises(
            HarnessError,
            match="is down .*returned no finite `relevance_score` for every one of the 2 documents",
        ):
            retriever.index("s", chunks_of(TEXTS)).search("redis")


@pytest.mark.parametrize(
    "entry, message",
    [
        ({}, r"`retrievers\.served\.base_url` is required \(one server\), or `hosts:`"),
        ({"base_url": "http://a", "hosts": [{"url": "http://b"}]}, r"give either `base_url:` .* or `hosts:`"),
        (
            {"base_url": "http://a", "failover": {"backoff_s": 1}},
            r"`retrievers\.served\.failover` applies only to a pool",
        ),
        (
            {"base_url": "http://a", "api": "grpc"},
            r"`retrievers\.served\.api` must be one of 'cohere', 'tei'",
        ),
    ],
)
def test_config_errors_name_the_key(tmp_path, entry, message):
    with pytest.raises(HarnessError, match=message):
        RetrieverContext(tmp_path, configs(**entry)).get("served")
