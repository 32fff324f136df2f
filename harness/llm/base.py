"""One small interface every LLM backend implements (docs/design.md, LLM calls).

A backend knows its identity (backend name, model, digest, output-affecting options) without loading
anything, so a cache-warm build never touches the model; `complete` does the actual call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from harness.errors import HarnessError

Message = Mapping[str, str]  # {"role": "user" | "system" | "assistant", "content": str}


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    cost_usd: float
    model_digest: str
    truncated: bool = False  # the prompt was cut to fit the context window


class LlmError(HarnessError):
    """An LLM call cannot go on; the build stops and a rerun resumes from the cache."""


class ModelNotFound(LlmError):
    """The server does not have the model: nothing to retry, the user must install it."""


class AuthError(LlmError):
    """The provider refused the credentials."""


class BackendUnavailable(LlmError):
    """The server went away (refused or dropped connection)."""


class ServerStalled(BackendUnavailable):
    """The server took the call but sent nothing for the stall time (`stall_s`): it is reachable but hung
    or overloaded. A pool moves the call to another server."""


class ServerFailed(LlmError):
    """The server answered with an HTTP 5xx: it may recover, so a pool of servers retries elsewhere."""


class ModelMismatch(LlmError):
    """Two servers of one pool serve different weights (digest, or model id and revision)."""


class ReplayMiss(LlmError):
    """A replay-only build asked for a call that is not in the cache."""


class SpendCapReached(LlmError):
    """The next call could take the arm's spend past the configured cap."""


def as_messages(prompt: str | Sequence[Message]) -> list[dict[str, str]]:
    """A bare prompt string is one user message; message lists are copied as plain dicts."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out = []
    for i, m in enumerate(prompt):
        if not isinstance(m.get("content"), str) or m.get("role") not in ("system", "user", "assistant"):
            raise ValueError(
                f"messages[{i}] must have role system/user/assistant and string content, got {m!r}"
            )
        out.append({"role": m["role"], "content": m["content"]})
    return out


class Backend(ABC):
    """`name` is the registry name; `model` the model name as the backend knows it."""

    name: str = ""
    billed: bool = False  # True when calls cost money (the spend cap applies)
    # True for one in-process model behind a lock: concurrent documents would only interleave their prompts
    # and defeat the prompt-prefix (KV) reuse, which also makes a fresh rebuild depend on thread timing
    serial: bool = False
    default_options: Mapping[str, Any] = {}  # the backend's DEFAULT_OPTIONS; `options` override them

    def __init__(self, model: str, options: Mapping[str, Any]):
        self.model = model
        # only options that change the output (they key the cache)
        self.options = dict(self.default_options) | dict(options)

    @classmethod
    def config_options(cls, cfg: Mapping[str, Any], *extra: str) -> dict[str, Any]:
        """The options a model config sets: the keys of default_options, plus `extra` ones without a
        default."""
        return {k: cfg[k] for k in (*cls.default_options, *extra) if k in cfg}

    @property
    @abstractmethod
    def digest(self) -> str:
        """What pins the model's weights (server digest, file SHA-256, provider settings)."""

    @abstractmethod
    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One call. `schema` constrains output to a JSON object; `options` override the model's."""

    def describe(self) -> dict[str, Any]:
        """Provenance record: what went into every cache key for this backend."""
        return {
            "backend": self.name,
            "model": self.model,
            "digest": self.digest,
            "options": dict(self.options),
        }

    @property
    def prompt_token_limit(self) -> int | None:
        """Largest prompt (in tokens) that leaves room for the answer, when the context is known."""
        return None

    def host_report(self) -> str:
        """What this server says about the model it serves; the servers of a pool must all agree."""
        return self.digest

    def pooled_digest(self, report: str) -> str:
        """The digest a pool of servers records for the `host_report` they agree on: no server in it."""
        return report

    def estimate_cost_usd(self, messages: Sequence[Message], options: Mapping[str, Any]) -> float:
        """Upper-bound cost of one call, checked against the spend cap before calling."""
        return 0.0
