"""Ollama native chat API through the `ollama` client (JSON output, temperature 0, seeded)."""

from __future__ import annotations

import os
import time
from typing import Any, Mapping, Sequence

from harness.config.models import OLLAMA_OPTIONS, TIMEOUT_S, model_settings
from harness.errors import HarnessError
from harness.llm.base import (
    AuthError,
    Backend,
    BackendUnavailable,
    Completion,
    LlmError,
    Message,
    ModelNotFound,
    as_messages,
)

DEFAULT_OPTIONS = OLLAMA_OPTIONS  # written once, in the config schema


def _full_name(model: str) -> str:
    return model if ":" in model else f"{model}:latest"


class OllamaBackend(Backend):
    name = "ollama"
    default_options = DEFAULT_OPTIONS

    def __init__(self, model: str, options: Mapping[str, Any], *, host: str | None = None, timeout_s: float = TIMEOUT_S):
        super().__init__(model, options)
        import ollama

        self._ollama = ollama
        self.host = host or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
        self._client = ollama.Client(host=self.host, timeout=timeout_s)
        self._digest: str | None = None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "OllamaBackend":
        cfg = model_settings(cfg)
        return cls(cfg["name"], cls.config_options(cfg), host=cfg.get("host"), timeout_s=float(cfg["timeout_s"]))

    @property
    def prompt_token_limit(self) -> int | None:
        return int(self.options["num_ctx"]) - int(self.options["num_predict"])

    def _stop_error(self, e: Exception, doing: str) -> LlmError:
        status = getattr(e, "status_code", None)
        if status == 404 or "not found" in str(e).lower():
            return ModelNotFound(
                f"ollama at {self.host} does not have model {self.model!r}: run `ollama pull {self.model}` "
                f"and rerun (while {doing})"
            )
        if status in (401, 403):
            return AuthError(f"ollama at {self.host} refused the request ({status}): check OLLAMA_API_KEY")
        return LlmError(f"ollama at {self.host} failed while {doing}: {status} {e}")

    def _unavailable(self, e: Exception, doing: str) -> BackendUnavailable:
        return BackendUnavailable(
            f"ollama at {self.host} is unreachable while {doing} ({type(e).__name__}: {e}); start it "
            "(`ollama serve`) and rerun: completed calls are cached and the build resumes"
        )

    @property
    def digest(self) -> str:
        """The server's digest for the model, from /api/tags; never a guess."""
        if self._digest is None:
            import httpx

            try:
                self._client.show(self.model)  # fails fast with "not found" before anything is built
                listing = self._client.list()
            except self._ollama.ResponseError as e:
                raise self._stop_error(e, "reading the model digest") from None
            except (ConnectionError, httpx.TransportError) as e:
                raise self._unavailable(e, "reading the model digest") from None
            wanted = _full_name(self.model)
            found = [m.digest for m in listing.models if m.model and _full_name(m.model) == wanted and m.digest]
            if not found:
                raise HarnessError(
                    f"ollama at {self.host} lists no digest for model {self.model!r}; "
                    f"run `ollama pull {self.model}` (the digest pins the weights)"
                )
            self._digest = found[0]
        return self._digest

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        import httpx

        opts = self.options | dict(options or {}) | {"seed": seed}
        start = time.perf_counter()
        try:
            resp = self._client.chat(
                model=self.model,
                messages=as_messages(prompt),
                format=dict(schema) if schema is not None else None,
                options=opts,
                stream=False,
            )
        except self._ollama.ResponseError as e:
            raise self._stop_error(e, "generating") from None
        except (ConnectionError, httpx.TransportError) as e:
            raise self._unavailable(e, "generating") from None
        wall = time.perf_counter() - start
        prompt_tokens = int(resp.prompt_eval_count or 0)
        return Completion(
            text=resp.message.content or "",
            prompt_tokens=prompt_tokens,
            completion_tokens=int(resp.eval_count or 0),
            wall_s=wall,
            cost_usd=0.0,
            model_digest=self.digest,
        )
