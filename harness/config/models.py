"""`models:` one entry per LLM, its schema chosen by `backend:` (docs/design.md, LLM calls).

The backends' option defaults are the dicts below (harness.llm.*_backend import them); only options
that change an answer are in them, because they key the generation cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.config.fields import (
    Flag, Int, ListOf, Number, OneOf, Optional, Nested, Text, Variants, Where, setting, to_plain,
)

OLLAMA_OPTIONS = {"temperature": 0.0, "num_ctx": 8192, "num_predict": 512}
LLAMACPP_OPTIONS = {
    "temperature": 0.0,
    "n_ctx": 8192,
    "max_tokens": 512,
    "chat_format": "gemma",
    "repeat_penalty": 1.0,
}
OPENAI_OPTIONS = {"temperature": 0.0, "max_tokens": 1024}
SIMULATED_OPTIONS = {"temperature": 0.0, "max_tokens": 512, "malformed_rate": 0.0}
TIMEOUT_S = 600.0  # per call, for server backends
# `stall_s`: the longest a server that took the call may stay silent before the call fails as stalled
# (harness.llm.base.ServerStalled; a pool moves the call to another server). Calls are not streamed, so
# the server's first byte is its whole answer: unset, it is the model's `timeout_s`.
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
FIRST_SEED = 0  # the seed of a model's first attempt; retries take `llm.retry_seeds`
HOST_CONCURRENCY = 4  # calls one pooled server runs at once (`hosts: [{url, concurrency}]`)
FAILOVER_BACKOFF_S = 1.0  # first wait before a failed host is tried again; doubles per failure
FAILOVER_MAX_BACKOFF_S = 60.0
FAILOVER_FAILURES = 5  # consecutive failures after which a host counts as down (all down: the build stops)

_TEMPERATURE = Number(0)
_POSITIVE = Int(1)
_NAMES = Optional(ListOf(Text(non_empty=True)))


@dataclass(frozen=True)
class ServerHost:
    """One server of a pool (harness.llm.pool): its URL and how many calls it takes at once."""

    url: str = setting(check=Text(non_empty=True))
    concurrency: int = setting(HOST_CONCURRENCY, _POSITIVE)


@dataclass(frozen=True)
class Failover:
    """How a pool treats a failing host (refused, timed out, HTTP 5xx): back off, then retry it."""

    backoff_s: float = setting(FAILOVER_BACKOFF_S, Number(0))
    max_backoff_s: float = setting(FAILOVER_MAX_BACKOFF_S, Number(0))
    failures_before_down: int = setting(FAILOVER_FAILURES, _POSITIVE)


_HOSTS = Optional(ListOf(Nested(ServerHost), min_len=1))
_FAILOVER = Optional(Nested(Failover))


def pool_checked(model: Any, single: str, where: Where) -> Any:
    """`hosts:` replaces the single-server key; the pool's URLs must be distinct."""
    if model.hosts is None:
        if model.failover is not None:
            raise where.child("failover").fail("applies only to a pool of servers (`hosts:`)")
        return model
    if getattr(model, single) is not None:
        raise where.child("hosts").fail(
            f"give either `{single}:` (one server) or `hosts:` (a pool), not both"
        )
    urls = [h.url.rstrip("/") for h in model.hosts]
    repeated = sorted({u for u in urls if urls.count(u) > 1})
    if repeated:
        raise where.child("hosts").fail(f"lists {repeated[0]} more than once")
    return model


@dataclass(frozen=True)
class _Model:
    """Settings every backend has."""

    backend: str = setting(check=Text())
    seed: int = setting(FIRST_SEED, Int())
    retry_temperature: float | None = setting(
        None, Optional(_TEMPERATURE)
    )  # retries sample at this temperature
    digest: str | None = setting(
        None, Optional(Text(non_empty=True))
    )  # pins the weights for replay-only audits


@dataclass(frozen=True)
class OllamaModel(_Model):
    name: str = setting(check=Text(non_empty=True))
    host: str | None = setting(None, Optional(Text(non_empty=True)))  # default: $OLLAMA_HOST or localhost
    hosts: tuple[ServerHost, ...] | None = setting(None, _HOSTS)  # a pool of servers instead of `host:`
    failover: Failover | None = setting(None, _FAILOVER)  # None: Failover's defaults
    timeout_s: float = setting(TIMEOUT_S, Number(0, above=True))
    stall_s: float | None = setting(None, Optional(Number(0, above=True)))  # None: timeout_s
    temperature: float = setting(OLLAMA_OPTIONS["temperature"], _TEMPERATURE)
    num_ctx: int = setting(OLLAMA_OPTIONS["num_ctx"], _POSITIVE)
    num_predict: int = setting(OLLAMA_OPTIONS["num_predict"], _POSITIVE)

    def completed(self, where: Where) -> "OllamaModel":
        return pool_checked(self, "host", where)


@dataclass(frozen=True)
class LlamaCppModel(_Model):
    package: str | None = setting(None, Optional(Text(non_empty=True)))  # a pip package shipping the GGUF
    model_path: str | None = setting(None, Optional(Text(non_empty=True)))
    name: str | None = setting(None, Optional(Text(non_empty=True)))  # default: the package or file name
    chat_format: str = setting(LLAMACPP_OPTIONS["chat_format"], Text(non_empty=True))
    temperature: float = setting(LLAMACPP_OPTIONS["temperature"], _TEMPERATURE)
    n_ctx: int = setting(LLAMACPP_OPTIONS["n_ctx"], _POSITIVE)
    max_tokens: int = setting(LLAMACPP_OPTIONS["max_tokens"], _POSITIVE)
    repeat_penalty: float = setting(LLAMACPP_OPTIONS["repeat_penalty"], Number(0, above=True))

    def completed(self, where: Where) -> "LlamaCppModel":
        if (self.package is None) == (self.model_path is None):
            raise where.fail("needs exactly one of `package:` (an installed GGUF package) or `model_path:`")
        return self


@dataclass(frozen=True)
class Provider:
    """OpenRouter routing: one pinned provider, no fallbacks, no training on our prompts by default."""

    order: tuple[str, ...] | None = setting(None, _NAMES)
    only: tuple[str, ...] | None = setting(None, _NAMES)
    ignore: tuple[str, ...] | None = setting(None, _NAMES)
    allow_fallbacks: bool = setting(False, Flag())
    data_collection: str = setting("deny", OneOf(("deny", "allow")))
    require_parameters: bool | None = setting(None, Optional(Flag()))
    quantizations: tuple[str, ...] | None = setting(None, _NAMES)
    sort: str | None = setting(None, Optional(OneOf(("price", "throughput", "latency"))))



@dataclass(frozen=True)
class OpenAIModel(_Model):
    name: str = setting(check=Text(non_empty=True))
    base_url: str | None = setting(None, Optional(Text(non_empty=True)))  # one server; or `hosts:`
    hosts: tuple[ServerHost, ...] | None = setting(
        None, _HOSTS
    )  # self-hosted servers (vLLM, llama.cpp server)
    failover: Failover | None = setting(None, _FAILOVER)
    revision: str | None = setting(
        None, Optional(Text(non_empty=True))
    )  # the weights' revision, pinned in a pool
    api_key_env: str = setting(OPENAI_API_KEY_ENV, Text(non_empty=True))
    timeout_s: float = setting(TIMEOUT_S, Number(0, above=True))
    stall_s: float | None = setting(None, Optional(Number(0, above=True)))  # None: timeout_s
    temperature: float = setting(OPENAI_OPTIONS["temperature"], _TEMPERATURE)
    max_tokens: int = setting(OPENAI_OPTIONS["max_tokens"], _POSITIVE)
    reasoning_effort: str | None = setting(
        None, Optional(OneOf(("none", "minimal", "low", "medium", "high")))
    )
    provider: Provider = setting(check=Nested(Provider), factory=Provider)
    price_in_per_mtok: float | None = setting(None, Optional(Number(0)))  # USD per million prompt tokens
    price_out_per_mtok: float | None = setting(None, Optional(Number(0)))
    context_tokens: int | None = setting(None, Optional(_POSITIVE))  # the model's window, when known

    def completed(self, where: Where) -> "OpenAIModel":
        if self.base_url is None and self.hosts is None:
            raise where.child("base_url").fail("is required (or list the servers under `hosts:`)")
        return pool_checked(self, "base_url", where)


@dataclass(frozen=True)
class SimulatedModel(_Model):
    """A deterministic stand-in (harness.llm.simulated_backend) for rehearsals: answers derived from the
    prompt by hashing, shaped by the call's JSON schema, with token counts; nothing is loaded or contacted."""

    name: str = setting(check=Text(non_empty=True))  # the model it stands in for (keys the cache)
    temperature: float = setting(SIMULATED_OPTIONS["temperature"], _TEMPERATURE)
    max_tokens: int = setting(SIMULATED_OPTIONS["max_tokens"], _POSITIVE)
    # the share of calls answered with broken JSON, so retries and `llm_failed` run their real code
    malformed_rate: float = setting(SIMULATED_OPTIONS["malformed_rate"], Number(0, 1))
    price_in_per_mtok: float | None = setting(
        None, Optional(Number(0))
    )  # priced: billed, the spend cap applies
    price_out_per_mtok: float | None = setting(None, Optional(Number(0)))
    context_tokens: int | None = setting(None, Optional(_POSITIVE))

    def completed(self, where: Where) -> "SimulatedModel":
        if (self.price_in_per_mtok is None) != (self.price_out_per_mtok is None):
            raise where.child("price_in_per_mtok").fail(
                "and `price_out_per_mtok` go together (give both or neither)"
            )
        return self


MODEL_SCHEMAS: dict[str, type] = {
    "ollama": OllamaModel,
    "llama.cpp": LlamaCppModel,
    "openai-compatible": OpenAIModel,
    "simulated": SimulatedModel,
}
MODEL = Variants(
    "backend",
    lambda raw: MODEL_SCHEMAS.get(raw.get("backend")) if isinstance(raw.get("backend"), str) else None,
    tuple(MODEL_SCHEMAS),
)
ModelConfig = OllamaModel | LlamaCppModel | OpenAIModel | SimulatedModel


def model_settings(cfg: Any, name: str = "model") -> dict[str, Any]:
    """A `models:` entry (typed, or a mapping checked here) as the plain mapping backends read."""
    if not isinstance(cfg, _Model):
        cfg = MODEL(cfg, Where(None, (name,)))
    return to_plain(cfg)
