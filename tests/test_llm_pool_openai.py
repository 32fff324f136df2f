"""A pool of OpenAI-compatible servers (vLLM- or llama.cpp-server-like) against fakes on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.llm.base import ModelMismatch, ModelNotFound
from harness.llm.registry import make_backend

KEY_ENV = "HARNESS_TEST_POOL_KEY"


class FakeOpenAI:
    """/v1/models lists `served` with vLLM's `root`; /v1/chat/completions echoes the prompt; a per-server
    `created` time (which the pool must ignore); `fail_status` answers every chat call with that status."""

    def __init__(
        self, served: str = "org/model-7b", root: str = "/models/org/model-7b@abc", fail_status=None
    ):
        self.served, self.root, self.fail_status, self.chats = served, root, fail_status, 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {
                                    "id": fake.served,
                                    "object": "model",
                                    "created": id(fake) % 100000,
                                    "owned_by": "vllm",
                                    "root": fake.root,
                                    "parent": None,
                                }
                            ],
                        },
                    )
                else:
                    self._send(404, {"error": {"message": "no such endpoint"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.chats += 1
                if fake.fail_status is not None:
                    self._send(fake.fail_status, {"error": {"message": "upstream failure"}})
                    return
                text = json.dumps({"echo": body["messages"][-1]["content"], "seed": body.get("seed")})
                self._send(
                    200,
                    {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def pool(*fakes, revision="abc") -> dict:
    return {
        "backend": "openai-compatible",
        "name": "org/model-7b",
        "api_key_env": KEY_ENV,
        "revision": revision,
        "timeout_s": 5,
        "failover": {"backoff_s": 0.01, "max_backoff_s": 0.05, "failures_before_down": 3},
        "hosts": [{"url": f.url, "concurrency": 2} for f in fakes],
    }


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key")


def test_servers_agreeing_give_one_digest_whatever_their_number():
    with FakeOpenAI() as a, FakeOpenAI() as b:
        one, two = make_backend(pool(a)), make_backend(pool(a, b))
        assert one.digest == two.digest and one.digest.startswith("pool-sha256:")
        answers = [two.complete(f"q{i}", schema=None, seed=0).text for i in range(6)]
        assert a.chats + b.chats == 6  # one call each, sequential calls all fit the first server's slots
    assert json.loads(answers[5]) == {"echo": "q5", "seed": 0}
    with FakeOpenAI() as c:
        assert make_backend(pool(c, revision="def")).digest != one.digest  # the revision is pinned


def test_a_server_serving_other_weights_is_refused_naming_both():
    with FakeOpenAI() as a, FakeOpenAI(root="/models/org/model-7b@other") as b:
        with pytest.raises(
            ModelMismatch, match=rf"server {b.url} serves .*@other.*but server {a.url} serves"
        ):
            make_backend(pool(a, b)).digest  # noqa: B018


def test_a_server_without_the_model_is_model_not_found():
    with FakeOpenAI(served="org/other") as a:
        with pytest.raises(
            ModelNotFound, match=r"does not serve model 'org/model-7b' \(its /v1/models lists org/other\)"
        ):
            make_backend(pool(a)).digest  # noqa: B018


def test_a_server_answering_500_fails_over_without_retrying_itself():
    with FakeOpenAI() as good, FakeOpenAI(fail_status=500) as bad:
        backend = make_backend(pool(bad, good))
        for i in range(4):
            assert json.loads(backend.complete(f"q{i}", schema=None, seed=0).text)["echo"] == f"q{i}"
        served = {s.url: s.served for s in backend.stats()}
    assert served == {bad.url: 0, good.url: 4} and good.chats == 4
    # one attempt per failure, each requeued to the good server (the client's own retries are off in a pool;
    # with them on, each of these would have been three requests)
    assert 1 <= bad.chats == backend.requeued <= 4
