"""Replay: answer only from the cache, under the identity of the backend that generated it.

An auditor re-scores released generations with no model installed: the cache keys are recomputed
from the configured backend's name, model and options plus a digest that is pinned (config or
frozen config) or, when the cache holds exactly one for that model, read from the cache.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.errors import HarnessError
from harness.llm.base import Backend, Completion, Message, ReplayMiss, as_messages
from harness.llm.cache import prompt_sha256


class ReplayBackend(Backend):
    name = "replay"

    def __init__(self, original: Backend, digest: str):
        super().__init__(original.model, original.options)
        self.original_name = original.name
        self._digest = digest
        self._limit = original.prompt_token_limit

    @classmethod
    def for_cache(
        cls, original: Backend, cached_digests: Sequence[str], pinned: str | None
    ) -> "ReplayBackend":
        if pinned:
            return cls(original, pinned)
        if len(cached_digests) == 1:
            return cls(original, cached_digests[0])
        where = f"{original.name} model {original.model!r}"
        if not cached_digests:
            raise HarnessError(f"replay: the generation cache holds no answers from {where}")
        raise HarnessError(
            f"replay: the generation cache holds answers from {where} under {len(cached_digests)} digests "
            f"({', '.join(cached_digests)}); pin one with `digest:` in the model's config"
        )

    @property
    def digest(self) -> str:
        return self._digest

    @property
    def prompt_token_limit(self) -> int | None:
        return self._limit

    def describe(self) -> dict[str, Any]:
        # the original backend's identity, so keys match the cache it wrote
        return {
            "backend": self.original_name,
            "model": self.model,
            "digest": self._digest,
            "options": dict(self.options),
        }

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        raise ReplayMiss(
            f"replay: no cached answer for prompt {prompt_sha256(as_messages(prompt))} "
            f"({self.original_name} model {self.model!r}, digest {self._digest}, seed {seed}); "
            "the prompt, model or options changed since the cache was written; run with the model to "
            "generate it"
        )
