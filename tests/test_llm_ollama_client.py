"""Chat and embeddings share one Ollama client: one digest, one error mapping (issue 12)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.config.retrievers import retriever_settings
from llm_fake_ollama import DIGEST, FakeOllama

from harness.llm import ollama_client
from harness.llm.base import BackendUnavailable, LlmError, ModelNotFound, ServerFailed
from harness.llm.ollama_backend import OllamaBackend
from harness.llm.ollama_client import OllamaClient, model_digest
from harness.llm.registry import make_backend, resolve_digest
from harness.provenance import frozen_record
from harness.retrieval.dense import OllamaEmbedder
from harness.retrieval.registry import RetrieverContext

MODEL = "nomic-embed-text"


def chat_backend(host: str, model: str = MODEL) -> OllamaBackend:
    return make_backend({"backend": "ollama", "name": model, "host": host})


def closed_port_host() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    return f"http://127.0.0.1:{port}"


def test_chat_and_embeddings_use_the_same_client_class_and_can_share_one_instance():
    with FakeOllama(models=(MODEL,)) as fake:
        assert isinstance(chat_backend(fake.host).client, OllamaClient)
        assert isinstance(OllamaEmbedder(MODEL, host=fake.host).client, OllamaClient)
        shared = OllamaClient(fake.host)
        chat = OllamaBackend(MODEL, {}, client=shared)
        embedder = OllamaEmbedder(MODEL, client=shared)
        assert chat.client is embedder.client is shared
        assert chat.digest == embedder.digest == DIGEST
        chat.complete("hello", schema=None, seed=0)
        vectors, truncated = embedder.embed(["a b", "c"])
        assert vectors.shape == (2, 8) and not truncated.any()
    # one shared client reads each model's digest (and /api/show) once for both paths
    assert [r["path"] for r in fake.requests].count("/api/show") == 1
    assert {r["path"] for r in fake.requests} == {"/api/show", "/api/chat", "/api/embed"}


def test_every_path_reads_the_digest_through_model_digest(monkeypatch):
    calls = []
    real = ollama_client.model_digest

    def spy(client, model):
        calls.append(model)
        return real(client, model)

    monkeypatch.setattr(ollama_client, "model_digest", spy)
    with FakeOllama(models=(MODEL,)) as fake:
        chat = chat_backend(fake.host).digest
        embed = OllamaEmbedder(MODEL, host=fake.host).digest
        frozen_model = resolve_digest({"backend": "ollama", "name": MODEL, "host": fake.host})
        nomic = retriever_settings(
            "nomic", {"type": "dense", "backend": "ollama", "model": MODEL, "host": fake.host}
        )
        context = RetrieverContext(Path("unused-cache"), {"nomic": nomic})
        frozen_retriever = frozen_record._retriever_model_identity(context, "nomic", nomic)
    assert chat == embed == frozen_model == frozen_retriever == DIGEST
    assert calls == [MODEL] * 4


def test_digest_is_the_tags_manifest_digest_not_the_weights_blob():
    with FakeOllama(models=(MODEL,)) as fake:
        client = OllamaClient(fake.host)
        assert "FROM" in client.show(MODEL)["modelfile"]  # names another blob, which must not be used
        assert model_digest(client, MODEL) == DIGEST
        assert model_digest(client, MODEL + ":latest") == DIGEST  # untagged means :latest, both ways


@pytest.mark.parametrize("doing", ["digest", "call"])
def test_missing_model_is_the_same_error_in_both_paths(doing):
    with FakeOllama(models=("other",)) as fake:
        chat, embedder = chat_backend(fake.host), OllamaEmbedder(MODEL, host=fake.host, num_ctx=8)
        if doing == "digest":
            errors = [_raised(lambda: chat.digest), _raised(lambda: embedder.digest)]
        else:
            errors = [
                _raised(lambda: chat.complete("x", schema=None, seed=0)),
                _raised(lambda: embedder.embed(["x"])),
            ]
    for e in errors:
        assert type(e) is ModelNotFound
        assert f"ollama at {fake.host} does not have model '{MODEL}'" in str(e)
        assert str(e).endswith(f"run `ollama pull {MODEL}` and rerun")
    if doing == "digest":
        assert str(errors[0]) == str(errors[1])
    else:
        assert "while generating" in str(errors[0]) and "while embedding" in str(errors[1])


def test_unreachable_host_is_the_same_error_in_both_paths():
    host = closed_port_host()
    chat, embedder = chat_backend(host), OllamaEmbedder(MODEL, host=host, num_ctx=8)
    digest_errors = [_raised(lambda: chat.digest), _raised(lambda: embedder.digest)]
    call_errors = [
        _raised(lambda: chat.complete("x", schema=None, seed=0)),
        _raised(lambda: embedder.embed(["x"])),
    ]
    assert str(digest_errors[0]) == str(digest_errors[1])
    for e in digest_errors + call_errors:
        assert type(e) is BackendUnavailable
        assert str(e).startswith(f"ollama at {host} is unreachable (while ")
        assert "`ollama serve`" in str(e) and "rerun" in str(e)


def test_server_error_is_the_same_error_in_both_paths():
    with FakeOllama(models=(MODEL,), fail_status=500) as fake:
        chat, embedder = chat_backend(fake.host), OllamaEmbedder(MODEL, host=fake.host, num_ctx=8)
        digest_errors = [_raised(lambda: chat.digest), _raised(lambda: embedder.digest)]
        call_errors = [
            _raised(lambda: chat.complete("x", schema=None, seed=0)),
            _raised(lambda: embedder.embed(["x"])),
        ]
    assert str(digest_errors[0]) == str(digest_errors[1])
    for e in digest_errors + call_errors:
        assert type(e) is ServerFailed  # not a missing model, not an outage: the server answered 500
        assert isinstance(e, LlmError)
        assert f"ollama at {fake.host} failed for model '{MODEL}' while " in str(e)
        assert "HTTP 500: internal server error" in str(e)


def test_a_digest_that_is_not_sha256_is_refused():
    class Listing:
        models = [type("M", (), {"model": f"{MODEL}:latest", "digest": "latest"})()]

    class Stub:
        def show(self, model):
            return type("S", (), {"model_dump": lambda self, **kw: {}})()

        def list(self):
            return Listing()

    with pytest.raises(LlmError, match=r"lists digest 'latest' for model 'nomic-embed-text': not a SHA-256"):
        model_digest(OllamaClient("http://h:1", client=Stub()), MODEL)


def _raised(fn) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value
