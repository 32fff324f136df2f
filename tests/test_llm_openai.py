"""openai-compatible backend: configuration errors, pinned identity and the pre-call cost bound."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.llm.base import AuthError
from harness.llm.registry import make_backend, resolve_digest
from harness.tokens import cl100k

HOSTED = {
    "backend": "openai-compatible",
    "name": "vendor/model-7b",
    "base_url": "https://api.example.invalid/v1",  # not loopback: a hosted server needs its key
    "api_key_env": "HARNESS_TEST_NO_SUCH_KEY",
    "price_in_per_mtok": 1.0,
    "price_out_per_mtok": 2.0,
    "max_tokens": 100,
    "provider": {"order": ["one-provider"]},
}


def test_missing_key_stops_before_any_request(monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_NO_SUCH_KEY", raising=False)
    backend = make_backend(HOSTED)
    with pytest.raises(AuthError, match="set the environment variable HARNESS_TEST_NO_SUCH_KEY"):
        backend.complete("hi", schema=None, seed=0)


def test_identity_pins_provider_routing_without_fallbacks():
    backend = make_backend(HOSTED)
    assert backend.billed is True
    assert backend.options["provider"] == {
        "order": ["one-provider"],
        "allow_fallbacks": False,
        "data_collection": "deny",
    }
    assert resolve_digest(HOSTED) == backend.digest
    assert resolve_digest(HOSTED | {"provider": {"order": ["another"]}}) != backend.digest
    # cost bound: prompt tokens (cl100k + 8 per message) at $1/M plus max_tokens at $2/M
    estimate = backend.estimate_cost_usd([{"role": "user", "content": "hello world"}], {})
    assert estimate == pytest.approx(((2 + 8) * 1.0 + 100 * 2.0) / 1e6)
    # a document that mentions a special token (tokenizer docs do) is priced as plain text, not refused
    special = backend.estimate_cost_usd([{"role": "user", "content": "ends with <|endoftext|>"}], {})
    assert special == pytest.approx((((len(cl100k().encode_ordinary("ends with <|endoftext|>"))) + 8) * 1.0
                                     + 100 * 2.0) / 1e6)
    with pytest.raises(HarnessError, match=r"`model\.base_url` is required"):
        make_backend({"backend": "openai-compatible", "name": "x"})
