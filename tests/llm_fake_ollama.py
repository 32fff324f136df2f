"""A small stand-in for an Ollama server on loopback: /api/chat, /api/embed, /api/show and /api/tags.

One fake serves both paths of harness.llm.ollama_client (chat models and embedding models).
Chat replies are computed from the prompt (so answers are deterministic and checkable); `mode` picks the
behaviour: "valid", "invalid-until-seed-2" (garbage on seeds 0 and 1), "invalid" (always garbage).
`delay_s` slows each chat answer; `go_down_after=N` closes the listening socket after N chat calls,
so later calls are refused. `fail_status=500` answers every endpoint with that HTTP status. `blob` is the
digest /api/tags lists (a pool of servers refuses servers whose digests differ).
Embeddings are `fake_vector` of the (whitespace-word) text; an input longer than `embed_context` words
is refused with HTTP 400 under truncate=false and cut to the window under truncate=true, like Ollama.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BLOB = "ab" * 32  # the manifest digest /api/tags lists (bare hex, as Ollama lists it)
DIGEST = "sha256:" + BLOB  # what the harness records
WEIGHTS_BLOB = "cd" * 32  # the weights blob in the Modelfile's FROM line: not the model digest
CHUNK_RE = re.compile(r"<<<\n(.*?)\n>>>", re.S)
CONTEXT_RE = re.compile(r"One passage cut from that document:\n=====\n(.*?)\n=====", re.S)


def first_word(text: str) -> str:
    words = re.findall(r"[a-z]+", text.lower())
    return words[0] if words else "empty"


def valid_reply(prompt: str) -> str:
    """An answer for whichever template the prompt came from, derived from the chunk text."""
    m = CHUNK_RE.search(prompt)
    if m:
        chunk = m.group(1)
        word = first_word(chunk)
        if '{"title": "..."}' in prompt:
            return json.dumps({"title": f"About {word}"})
        if '{"summary": "..."}' in prompt:
            return json.dumps({"summary": f"Summary of {word}."})
        if '{"keywords":' in prompt:
            return json.dumps({"keywords": [word, "alpha", "beta", "gamma", "delta"]})
        if '{"questions":' in prompt:
            return json.dumps({"questions": [f"What is {word}?", f"Why {word}?"]})
        return json.dumps(
            {
                "title": f"About {word}",
                "summary": f"Summary of {word}.",
                "keywords": [word, "alpha", "beta", "gamma", "delta"],
                "entities": [{"name": word.title(), "type": "concept"}],
                "questions": [f"What is {word}?", f"Why {word}?"],
                "key": f"  Topic {word.upper()} ",  # the harness must trim and lower-case it
                "related_keys": ["topic intro", "not in dictionary"],
            }
        )
    m = CONTEXT_RE.search(prompt)
    if m:
        return json.dumps({"context": f"Context for {first_word(m.group(1))}."})
    return json.dumps({"unexpected": True})


def fake_vector(text: str) -> list[float]:
    v = [0.0] * 8
    for w in text.lower().split():
        v[sum(map(ord, w)) % 8] += 1.0
    v[7] += 0.25
    return [2.0 * x for x in v]  # deliberately not unit length


class FakeOllama:
    def __init__(
        self,
        *,
        models=("fake",),
        mode: str = "valid",
        go_down_after: int | None = None,
        delay_s: float = 0.0,
        embed_context: int = 8,
        fail_status: int | None = None,
        blob: str = BLOB,
    ):
        self.blob = blob
        self.delay_s = delay_s
        self.embed_context = embed_context
        self.fail_status = fail_status
        self.models = {m if ":" in m else f"{m}:latest" for m in models}
        self.mode = mode
        self.go_down_after = go_down_after
        self.chat_calls: Counter = Counter()  # (prompt sha256, seed) -> count
        self.requests: list[dict] = []
        self.down = False
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOllama":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.go_down()

    def go_down(self) -> None:
        self.down = True
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    @property
    def total_chat_calls(self) -> int:
        return sum(self.chat_calls.values())

    def known(self, name: str) -> bool:
        return (name if ":" in name else f"{name}:latest") in self.models

    def reply(self, prompt: str, seed: int) -> str:
        if self.mode == "invalid" or (self.mode == "invalid-until-seed-2" and seed < 2):
            return '{"title": "unterminated'
        return valid_reply(prompt)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # one write per response: avoids Nagle / delayed-ACK stalls
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}")

            def do_GET(self):
                if fake.fail_status is not None:
                    self._send(fake.fail_status, {"error": "internal server error"})
                elif self.path == "/api/tags":
                    models = [
                        {"model": m, "name": m, "digest": fake.blob, "size": 1} for m in sorted(fake.models)
                    ]
                    self._send(200, {"models": models})
                else:
                    self._send(404, {"error": "no such endpoint"})

            def do_POST(self):
                body = self._body()
                if fake.down:  # a server going away: drop open keep-alive connections unanswered
                    self.close_connection = True
                    return
                with fake._lock:
                    fake.requests.append({"path": self.path, **body})
                if fake.fail_status is not None:
                    self._send(fake.fail_status, {"error": "internal server error"})
                    return
                if self.path == "/api/show":
                    if not fake.known(body.get("model", "")):
                        self._send(404, {"error": f"model '{body.get('model')}' not found"})
                    else:
                        self._send(
                            200,
                            {
                                "modelfile": f"# Modelfile\nFROM "
                                             f"/root/.ollama/models/blobs/sha256-{WEIGHTS_BLOB}\n",
                                "parameters": "",
                                "template": "",
                                "details": {"family": "fake"},
                                "model_info": {
                                    "fake.context_length": fake.embed_context,
                                    "general.architecture": "fake",
                                },
                            },
                        )
                    return
                if self.path == "/api/embed":
                    self._embed(body)
                    return
                if self.path != "/api/chat":
                    self._send(404, {"error": "no such endpoint"})
                    return
                if not fake.known(body.get("model", "")):
                    self._send(
                        404, {"error": f"model \"{body.get('model')}\" not found, try pulling it first"}
                    )
                    return
                prompt = body["messages"][-1]["content"]
                seed = int(body.get("options", {}).get("seed", -1))
                with fake._lock:
                    fake.chat_calls[(hashlib.sha256(prompt.encode()).hexdigest(), seed)] += 1
                    n = fake.total_chat_calls
                content = fake.reply(prompt, seed)
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                self._send(
                    200,
                    {
                        "model": body["model"],
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": content},
                        "done": True,
                        "done_reason": "stop",
                        "prompt_eval_count": len(prompt.split()),
                        "eval_count": len(content.split()),
                    },
                )
                if fake.go_down_after is not None and n >= fake.go_down_after:
                    self.close_connection = True
                    threading.Thread(target=fake.go_down, daemon=True).start()

            def _embed(self, body: dict) -> None:
                if not fake.known(body.get("model", "")):
                    self._send(
                        404, {"error": f"model \"{body.get('model')}\" not found, try pulling it first"}
                    )
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                window = body.get("options", {}).get("num_ctx", fake.embed_context)
                vectors = []
                for text in inputs:
                    words = text.split()
                    if len(words) > window:
                        if body.get("truncate") is False:
                            self._send(400, {"error": "the input length exceeds the context length"})
                            return
                        words = words[:window]
                    vectors.append(fake_vector(" ".join(words)))
                self._send(200, {"model": body["model"], "embeddings": vectors, "prompt_eval_count": 1})

        return Handler
