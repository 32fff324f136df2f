"""A deterministic stand-in model for rehearsals (`backend: simulated`): no weights, no server, no cost
unless priced.

Every answer is a JSON object shaped by the call's schema (every property, arrays within their item
bounds, enums chosen among their values), its strings contiguous runs of the prompt's own words. The
choices are drawn from a generator seeded by the SHA-256 of (model, messages, seed, options), so the same
call gives the same bytes in any process, on any executor, in any order. A share `malformed_rate` of calls
answers with cut-off JSON, so retries and `llm_failed` run their real code. Token counts are cl100k's, so
the cache, the ledger, the spend cap and the estimate see realistic numbers.
"""

from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

from harness.config.models import SIMULATED_OPTIONS, model_settings
from harness.files import canonical_json, sha256_text
from harness.llm.base import Backend, Completion, Message, as_messages
from harness.tokens import count_tokens_once, prompt_tokens, prompt_words

STRING_WORDS = (3, 14)  # shortest and longest generated string, in words
ARRAY_ITEMS = 3  # items of an array whose schema sets no maxItems
FALLBACK_WORDS = ("simulated", "answer", "text")  # a prompt with no words at all


class SimulatedBackend(Backend):
    name = "simulated"
    default_options = SIMULATED_OPTIONS

    def __init__(self, model: str, options: Mapping[str, Any], *, price_in_per_mtok: float | None = None,
                 price_out_per_mtok: float | None = None, context_tokens: int | None = None):
        super().__init__(model, options)
        self.price_in, self.price_out = price_in_per_mtok, price_out_per_mtok
        self.context_tokens = context_tokens
        self.billed = price_in_per_mtok is not None and price_out_per_mtok is not None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "SimulatedBackend":
        cfg = model_settings(cfg)
        return cls(str(cfg["name"]), cls.config_options(cfg), price_in_per_mtok=cfg.get("price_in_per_mtok"),
                   price_out_per_mtok=cfg.get("price_out_per_mtok"), context_tokens=cfg.get("context_tokens"))

    @property
    def digest(self) -> str:
        return "simulated-" + sha256_text(canonical_json({"backend": self.name, "model": self.model}))[:16]

    @property
    def prompt_token_limit(self) -> int | None:
        if self.context_tokens is None:
            return None
        return int(self.context_tokens) - int(self.options["max_tokens"])

    def complete(self, prompt: str | Sequence[Message], *, schema: Mapping[str, Any] | None, seed: int,
                 options: Mapping[str, Any] | None = None) -> Completion:
        messages = as_messages(prompt)
        opts = self.options | dict(options or {})
        key = canonical_json({"model": self.model, "messages": messages, "seed": seed, "options": opts})
        rng = random.Random(int(sha256_text(key)[:16], 16))
        vocabulary = prompt_words(m["content"] for m in messages) or list(FALLBACK_WORDS)
        answer = _value(schema or {"type": "string"}, rng, vocabulary)
        text = json.dumps(answer, ensure_ascii=False) if schema is not None else str(answer)
        if rng.random() < float(opts.get("malformed_rate", 0.0)):
            text = text[: max(1, len(text) // 2)]  # cut off mid-object, as a model stopped by its cap
        tokens_in = prompt_tokens(m["content"] for m in messages)
        tokens_out = count_tokens_once(text)  # a new text each call
        cost = 0.0
        if self.billed:
            cost = (tokens_in * self.price_in + tokens_out * self.price_out) / 1e6
        return Completion(text=text, prompt_tokens=tokens_in, completion_tokens=tokens_out, wall_s=0.0,
                          cost_usd=cost, model_digest=self.digest)

    def estimate_cost_usd(self, messages: Sequence[Message], options: Mapping[str, Any]) -> float:
        if not self.billed:
            return 0.0
        tokens_out = int((self.options | dict(options)).get("max_tokens"))
        return (
            prompt_tokens(m["content"] for m in messages) * self.price_in + tokens_out * self.price_out
        ) / 1e6


def _value(schema: Mapping[str, Any], rng: random.Random, vocabulary: list[str]) -> Any:
    """A value of the JSON schema's type (object, array, string with or without enum, number, boolean)."""
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    kind = schema.get("type", "string")
    if kind == "object":
        return {name: _value(sub, rng, vocabulary) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, ARRAY_ITEMS)))
        return [
            _value(schema.get("items", {"type": "string"}), rng, vocabulary)
            for _ in range(rng.randint(low, high))
        ]
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return rng.randint(0, 9)
    if kind == "number":
        return round(rng.random(), 6)
    length = min(len(vocabulary), rng.randint(*STRING_WORDS))
    start = rng.randrange(len(vocabulary) - length + 1)
    return " ".join(vocabulary[start:start + length])
