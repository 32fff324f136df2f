"""The one path every LLM call takes: cache lookup, spend check, backend call, cache append, ledger.

`call_json` adds the retry rule of docs/design.md, LLM calls: unparseable or mis-shaped output is retried with
the configured seeds (1, 2, 3), then given up on and reported as failed. At temperature 0 a new seed
changes nothing, so a model config may set `retry_temperature`: attempts after the first then sample at
that temperature, still seeded and cached, hence reproducible.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from harness.llm.base import Backend, LlmError, Message, as_messages
from harness.llm.cache import CacheRecord, GenerationCache, cache_key, prompt_sha256
from harness.llm.ledger import SpendLedger
from harness.timing import MODEL, waiting_on


class Cancelled(LlmError):
    """Another worker hit a stopping error; this one stops before its next fresh call."""


@dataclass(frozen=True)
class JsonResult:
    value: dict[str, Any] | None  # None when every attempt failed
    attempts: int
    truncated: bool  # any attempt's prompt had to be cut to fit


class LlmSession:
    def __init__(
        self,
        backend: Backend,
        cache: GenerationCache,
        ledger: SpendLedger,
        *,
        stop: threading.Event | None = None,
        retry_options: Mapping[str, Any] | None = None,
        repeat: int = 0,
    ):
        self.backend = backend
        self.cache = cache
        self.ledger = ledger
        self.stop = stop or threading.Event()
        self.retry_options = dict(retry_options or {})  # merged into the options of attempts 2, 3, ...
        self.repeat = repeat  # the generation run of a repeated arm; enters every cache key when > 0
        self._identity: dict[str, Any] | None = None
        self._identity_lock = threading.Lock()

    def for_repeat(self, repeat: int) -> "LlmSession":
        """The same backend, cache, ledger (one spend cap) and stop event, for generation run `repeat`."""
        session = LlmSession(
            self.backend,
            self.cache,
            self.ledger,
            stop=self.stop,
            retry_options=self.retry_options,
            repeat=repeat,
        )
        session._identity = self.identity  # resolved once per arm: for llama.cpp it hashes the model file
        return session

    @property
    def identity(self) -> dict[str, Any]:
        """Resolved once: for some backends the digest costs a server round trip or a file hash."""
        with self._identity_lock:
            if self._identity is None:
                self._identity = self.backend.describe()
            return self._identity

    def call(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> CacheRecord:
        messages = as_messages(prompt)
        identity = self.identity
        key = cache_key(identity, messages, schema=schema, seed=seed, options=options, repeat=self.repeat)
        hit = self.cache.get(key)
        if hit is not None:
            self.ledger.record(hit, fresh=False)
            return hit
        if self.stop.is_set():
            raise Cancelled("stopped because another worker hit an error")
        reservation = self.ledger.reserve(
            self.backend.estimate_cost_usd(messages, options or {}), billed=self.backend.billed
        )
        try:
            with waiting_on(MODEL):
                done = self.backend.complete(messages, schema=schema, seed=seed, options=options)
        except BaseException:
            self.ledger.release(reservation)
            raise
        record = CacheRecord(
            key=key,
            backend=identity["backend"],
            model=identity["model"],
            digest=identity["digest"],
            prompt_sha256=prompt_sha256(messages),
            seed=seed,
            text=done.text,
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            wall_s=done.wall_s,
            cost_usd=done.cost_usd,
            truncated=done.truncated,
        )
        try:
            self.cache.put(record)
        except BaseException:
            self.ledger.release(reservation)
            raise
        self.ledger.settle(reservation, record)  # the cost replaces the reservation in one step
        return record

    def call_json(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any],
        seeds: Sequence[int],
        validate: Callable[[Any], dict[str, Any] | None],
        options: Mapping[str, Any] | None = None,
    ) -> JsonResult:
        """Try each seed in order until `validate(parsed JSON)` returns an object (None = reject)."""
        if not seeds:
            raise ValueError("seeds must name at least one seed")
        truncated = False
        for attempt, seed in enumerate(seeds, start=1):
            opts = (
                options
                if attempt == 1 or not self.retry_options
                else dict(options or {}) | self.retry_options
            )
            record = self.call(prompt, schema=schema, seed=seed, options=opts)
            truncated = truncated or record.truncated
            try:
                # strict=False: a raw newline inside a string (llama.cpp's JSON grammar allows it) is
                # a formatting slip, not an unusable answer
                parsed = json.loads(record.text, strict=False)
            except json.JSONDecodeError:
                continue
            value = validate(parsed)
            if value is not None:
                return JsonResult(value, attempt, truncated)
        return JsonResult(None, len(seeds), truncated)
