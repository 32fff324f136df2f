"""Issue 23, case 8 (a server that accepts the connection but never answers) and the local
OpenAI-compatible server rule of case 9 (no API key demanded, a $0 cap does not refuse a $0 call)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from llm_fake_ollama import FakeOllama

from harness.llm.base import AuthError, BackendUnavailable
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger
from harness.llm.pool import HostPool
from harness.llm.registry import make_backend
from harness.llm.session import LlmSession


class SilentServer:
    """A loopback socket that accepts every connection and never writes a byte."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.sock.close()
        for conn in self.held:
            conn.close()


def ollama(url: str, **extra) -> dict:
    return {"backend": "ollama", "name": "fake", "host": url, "timeout_s": 30, **extra}


def openai(url: str, **extra) -> dict:
    return {"backend": "openai-compatible", "name": "org/model-7b", "base_url": url + "/v1", "timeout_s": 30,
            "api_key_env": "HARNESS_TEST_UNSET_KEY", **extra}


def _stalled(backend) -> tuple[BaseException, float]:
    start = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        backend.complete("hi", schema=None, seed=0)
    return caught.value, time.monotonic() - start


def test_issue23_case8_a_silent_ollama_server_fails_as_stalled_naming_the_host():
    with SilentServer() as silent:
        error, waited = _stalled(make_backend(ollama(silent.url, stall_s=0.3)))
    assert type(error).__name__ == "ServerStalled" and waited < 5
    assert str(error).startswith(
        f"ollama at {silent.url}: no answer in 0.3 s (while generating for model 'fake')"
    )
    assert "unreachable" not in str(error) and "ollama serve" not in str(error)


def test_issue23_case8_a_silent_openai_compatible_server_fails_as_stalled_naming_the_host(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_UNSET_KEY", "k")
    with SilentServer() as silent:
        error, waited = _stalled(make_backend(openai(silent.url, stall_s=0.3)))
    assert type(error).__name__ == "ServerStalled" and waited < 10
    assert str(error).startswith(f"{silent.url}/v1: no answer in 0.3 s (per attempt, 3 attempts)")
    assert "unreachable" not in str(error)


def test_stall_time_defaults_to_the_timeout():
    assert make_backend(ollama("http://127.0.0.1:1")).client.stall_s == 30
    assert make_backend(openai("http://127.0.0.1:1")).stall_s == 30


def test_issue23_case8_the_pool_moves_a_stalled_call_to_another_host():
    with SilentServer() as silent, FakeOllama() as good:
        pool = make_backend(
            {
                "backend": "ollama",
                "name": "fake",
                "stall_s": 0.3,
                "timeout_s": 30,
                "failover": {"backoff_s": 0.05, "max_backoff_s": 0.1, "failures_before_down": 3},
                "hosts": [{"url": silent.url, "concurrency": 1}, {"url": good.host, "concurrency": 1}],
            }
        )
        assert isinstance(pool, HostPool)
        # the silent server is checked at the first call, where it stalls: the digest comes from the live one
        done = pool.complete("hi", schema=None, seed=0)
    assert done.text
    stats = {s.url: s for s in pool.stats()}
    assert stats[good.host].served == 1 and stats[silent.url].served == 0 and stats[silent.url].failures >= 1
    assert f"ollama at {silent.url}: no answer in 0.3 s" in pool._servers[0].last_error


class LocalOpenAI:
    """A keyless local OpenAI-compatible server: answers every chat call, records the Authorization header."""

    def __init__(self):
        self.auth: list[str | None] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.auth.append(self.headers.get("Authorization"))
                data = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": "org/model-7b",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "{}"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_issue23_case9_a_local_server_needs_no_key_and_a_zero_cap_lets_its_zero_cost_call_through(
        tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_UNSET_KEY", raising=False)
    with LocalOpenAI() as local:
        backend = make_backend(openai(local.url))
        with GenerationCache(tmp_path / "g.jsonl") as cache:
            session = LlmSession(backend, cache, SpendLedger("E", 0.0))
            record = session.call("hi", schema=None, seed=0)
    assert record.text == "{}" and record.cost_usd == 0 and len(local.auth) == 1


@pytest.mark.parametrize(("url", "prices", "billed"), [
    ("http://localhost:8000", {}, False),
    ("http://[::1]:8000", {}, False),
    ("http://127.0.0.2:8000", {}, False),
    # a local proxy to a paid API declares its prices
    ("http://127.0.0.1:8000", {"price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0}, True),
    ("https://api.example.invalid", {}, True),
    ("https://api.example.invalid", {"price_in_per_mtok": 0, "price_out_per_mtok": 0}, False),
])
def test_which_openai_compatible_calls_are_billed(url, prices, billed):
    assert make_backend(openai(url, **prices)).billed is billed


def test_a_remote_server_still_needs_its_key(monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_UNSET_KEY", raising=False)
    backend = make_backend(openai("https://api.example.invalid"))
    with pytest.raises(
        AuthError, match=r"set the environment variable HARNESS_TEST_UNSET_KEY .*only a server on loopback"
    ):
        backend.complete("hi", schema=None, seed=0)
