"""Hosted models behind an OpenAI-compatible chat API (e.g. OpenRouter), billed into the spend ledger.

Config keys (schema and defaults: harness.config.models.OpenAIModel): name, base_url, api_key_env,
temperature, max_tokens, reasoning_effort, provider (routing: e.g. {order: [x], allow_fallbacks: false,
data_collection: deny}), price_in_per_mtok / price_out_per_mtok (USD per million tokens, used when the
response carries no cost and for the pre-call cap estimate), context_tokens (the model's window, when known),
timeout_s and stall_s (no answer within stall_s: ServerStalled, "no answer in N s").

Local servers (the rule for the API key and the spend cap): a server whose base_url host is loopback
(localhost, 127.0.0.0/8, ::1) is local. A local server is asked without a key when the `api_key_env`
variable is unset (a self-hosted llama.cpp or vLLM server needs none; one that does answers 401, an
AuthError naming the variable); any other server needs the variable set before the first call. A call is
billed (the spend cap applies, even a $0 cap) unless the model declares both prices 0, or the server is
local and declares no prices; a local proxy to a paid API must declare its prices to be capped.
"""

from __future__ import annotations

import ipaddress
import os
import time
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from harness.config.models import OPENAI_API_KEY_ENV, OPENAI_OPTIONS, TIMEOUT_S, model_settings
from harness.llm.base import (
    AuthError, Backend, BackendUnavailable, Completion, LlmError, Message, ModelNotFound, ServerFailed,
    ServerStalled, as_messages,
)
from harness.files import canonical_json, sha256_text
from harness.tokens import prompt_tokens

DEFAULT_OPTIONS = OPENAI_OPTIONS  # written once, in the config schema


def is_loopback(url: str) -> bool:
    """Whether the URL's host is this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAICompatibleBackend(Backend):
    name = "openai-compatible"
    default_options = DEFAULT_OPTIONS

    def __init__(
        self,
        model: str,
        options: Mapping[str, Any],
        *,
        base_url: str,
        api_key_env: str = OPENAI_API_KEY_ENV,
        price_in_per_mtok: float | None = None,
        price_out_per_mtok: float | None = None,
        context_tokens: int | None = None,
        timeout_s: float = TIMEOUT_S,
        stall_s: float | None = None,
        revision: str | None = None,
        max_retries: int = 2,
    ):
        super().__init__(model, options)
        self.revision = revision
        self.max_retries = max_retries  # a pool member retries nothing itself: the pool fails over
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.price_in = price_in_per_mtok
        self.price_out = price_out_per_mtok
        self.context_tokens = context_tokens
        self.timeout_s = timeout_s
        self.stall_s = timeout_s if stall_s is None else stall_s
        self.local = is_loopback(base_url)
        prices = (price_in_per_mtok, price_out_per_mtok)
        declared_free = all(p is not None and p == 0 for p in prices)
        self.billed = not (declared_free or (self.local and all(p is None for p in prices)))
        self._client = None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "OpenAICompatibleBackend":
        cfg = model_settings(cfg)  # the schema requires base_url and fills the provider defaults
        options = cls.config_options(cfg, "reasoning_effort", "provider")
        return cls(
            cfg["name"],
            options,
            base_url=cfg["base_url"],
            api_key_env=cfg["api_key_env"],
            price_in_per_mtok=cfg.get("price_in_per_mtok"),
            price_out_per_mtok=cfg.get("price_out_per_mtok"),
            context_tokens=cfg.get("context_tokens"),
            timeout_s=float(cfg["timeout_s"]),
            stall_s=cfg.get("stall_s"),
            revision=cfg.get("revision"),
        )

    @property
    def digest(self) -> str:
        """Hosted weights cannot be hashed: pin what we control (endpoint, model id, routing)."""
        pinned = {"base_url": self.base_url, "model": self.model, "provider": self.options.get("provider")}
        return "provider-sha256:" + sha256_text(canonical_json(pinned))

    def host_report(self) -> str:
        """The server's /v1/models record for the configured id (vLLM: root and parent; llama.cpp: meta),
        without its per-server fields (creation time); a server not serving the id is ModelNotFound."""
        client = self._client_or_fail()
        try:
            listed = client.models.list()
        except Exception as e:  # noqa: BLE001 - mapped to the project's errors like a chat call
            raise self._error(e) from None
        for m in listed.data:
            if m.id == self.model:
                record = m.model_dump(mode="json")
                kept = {k: record[k] for k in ("id", "root", "parent", "meta") if record.get(k) is not None}
                return canonical_json(kept | {"revision": self.revision})
        raise ModelNotFound(f"{self.base_url} does not serve model {self.model!r} (its /v1/models lists "
                            f"{', '.join(sorted(m.id for m in listed.data)) or 'nothing'})")

    def pooled_digest(self, report: str) -> str:
        """Model id, revision, routing and the servers' common model record: no URL, so any pool size
        agrees."""
        pinned = {"model": self.model, "revision": self.revision, "provider": self.options.get("provider"),
                  "served": report}
        return "pool-sha256:" + sha256_text(canonical_json(pinned))

    @property
    def prompt_token_limit(self) -> int | None:
        if self.context_tokens is None:
            return None
        return int(self.context_tokens) - int(self.options["max_tokens"])

    def estimate_cost_usd(self, messages: Sequence[Message], options: Mapping[str, Any]) -> float:
        if self.price_in is None or self.price_out is None:
            return 0.0

        # cl100k plus per-message overhead, a close upper bound for most tokenizers on English text
        tokens_in = prompt_tokens(m["content"] for m in messages)
        tokens_out = int((self.options | dict(options)).get("max_tokens"))
        return (tokens_in * self.price_in + tokens_out * self.price_out) / 1e6

    def _client_or_fail(self):
        if self._client is None:
            from openai import OpenAI, Timeout

            key = os.environ.get(self.api_key_env)
            if not key and not self.local:
                raise AuthError(
                    f"set the environment variable {self.api_key_env} to the API key for {self.base_url} "
                    "(only a server on loopback is asked without one)"
                )
            # the client needs a string; a local server without a key ignores it
            self._client = OpenAI(
                api_key=key or "no-key",
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=Timeout(self.timeout_s, read=self.stall_s),
            )
        return self._client

    def _error(self, e: BaseException) -> LlmError:
        import openai

        if isinstance(e, (openai.AuthenticationError, openai.PermissionDeniedError)):
            if not os.environ.get(self.api_key_env):
                return AuthError(
                    f"{self.base_url} refused a call without an API key: set {self.api_key_env}: {e}"
                )
            return AuthError(f"{self.base_url} refused the API key in {self.api_key_env}: {e}")
        if isinstance(e, openai.NotFoundError):
            return ModelNotFound(f"{self.base_url} has no model {self.model!r} (check `name`): {e}")
        # the client's own HTTP library: a connect timeout is "unreachable", a read timeout a stall
        if isinstance(e, openai.APITimeoutError) and type(e.__cause__).__name__ != "ConnectTimeout":
            return ServerStalled(
                f"{self.base_url}: no answer in {self.stall_s:g} s (per attempt, "
                f"{self.max_retries + 1} attempts) from a server that accepted the connection: it "
                "is hung or overloaded (restart it, or raise the model's `stall_s`); rerun to resume "
                "from the cache"
            )
        if isinstance(e, openai.APIConnectionError):  # refused or dropped
            return BackendUnavailable(f"{self.base_url} is unreachable ({e}); rerun to resume from the cache")
        if isinstance(e, openai.InternalServerError):
            return ServerFailed(f"{self.base_url} failed (HTTP 5xx): {e}")
        if isinstance(e, openai.APIError):
            return LlmError(f"{self.base_url} failed: {e}")
        raise e

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        import openai

        opts = self.options | dict(options or {})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": as_messages(prompt),
            "temperature": opts["temperature"],
            "max_tokens": opts["max_tokens"],
            "seed": seed,
            "extra_body": {"provider": opts["provider"], "usage": {"include": True}},
        }
        if "reasoning_effort" in opts:
            kwargs["reasoning_effort"] = opts["reasoning_effort"]
        if schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(schema), "strict": True},
            }
        client = self._client_or_fail()
        start = time.perf_counter()
        try:
            resp = client.chat.completions.create(**kwargs)
        except openai.APIError as e:
            raise self._error(e) from None
        wall = time.perf_counter() - start
        usage = resp.usage
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        billed = getattr(usage, "cost", None)  # providers such as OpenRouter report the charge
        if billed is None:
            billed = (tokens_in * (self.price_in or 0.0) + tokens_out * (self.price_out or 0.0)) / 1e6
        return Completion(
            text=resp.choices[0].message.content or "",
            prompt_tokens=tokens_in,
            completion_tokens=tokens_out,
            wall_s=wall,
            cost_usd=float(billed),
            model_digest=self.digest,
        )
