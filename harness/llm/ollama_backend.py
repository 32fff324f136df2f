"""Ollama native chat API (JSON output, temperature 0, seeded) through the shared OllamaClient.

The digest and every connection / HTTP error come from harness.llm.ollama_client, the same code the
Ollama embedding retriever uses.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from harness.config.models import OLLAMA_OPTIONS, TIMEOUT_S, model_settings
from harness.llm.base import Backend, Completion, Message, as_messages
from harness.llm.ollama_client import OllamaClient

DEFAULT_OPTIONS = OLLAMA_OPTIONS  # written once, in the config schema


class OllamaBackend(Backend):
    name = "ollama"
    default_options = DEFAULT_OPTIONS

    def __init__(
        self,
        model: str,
        options: Mapping[str, Any],
        *,
        host: str | None = None,
        timeout_s: float = TIMEOUT_S,
        stall_s: float | None = None,
        client: OllamaClient | None = None,
    ):
        super().__init__(model, options)
        self.client = (
            client if client is not None else OllamaClient(host, timeout_s=timeout_s, stall_s=stall_s)
        )
        self.host = self.client.host

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], *, client: OllamaClient | None = None) -> "OllamaBackend":
        cfg = model_settings(cfg)
        return cls(
            str(cfg["name"]),
            cls.config_options(cfg),
            host=cfg.get("host"),
            timeout_s=float(cfg["timeout_s"]),
            stall_s=cfg.get("stall_s"),
            client=client,
        )

    @property
    def prompt_token_limit(self) -> int | None:
        return int(self.options["num_ctx"]) - int(self.options["num_predict"])

    @property
    def digest(self) -> str:
        """The server's digest for the model (harness.llm.ollama_client.model_digest); never a guess."""
        return self.client.digest(self.model)

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        opts = self.options | dict(options or {}) | {"seed": seed}
        start = time.perf_counter()
        resp = self.client.chat(
            self.model,
            messages=as_messages(prompt),
            format=dict(schema) if schema is not None else None,
            options=opts,
            stream=False,
        )
        wall = time.perf_counter() - start
        return Completion(
            text=resp.message.content or "",
            prompt_tokens=int(resp.prompt_eval_count or 0),
            completion_tokens=int(resp.eval_count or 0),
            wall_s=wall,
            cost_usd=0.0,
            model_digest=self.digest,
        )
