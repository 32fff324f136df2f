"""The one Ollama client: chat (harness.llm.ollama_backend) and embeddings (harness.retrieval.dense).

Both paths go through `OllamaClient`, so the two things that must not differ between them live here once:

- the model digest (`model_digest`): the manifest digest the server lists for the model in /api/tags
  (what `ollama list` shows as the ID; it pins the weights blob and the Modelfile), after /api/show has
  confirmed the model exists. Always "sha256:" + 64 hex digits; a server that lists none is an error,
  never a guess. `harness freeze`, the chat backend and the embedding retriever all read it this way.
- the error mapping (`ollama_error`): HTTP 404 -> ModelNotFound, 401/403 -> AuthError, a refused
  connection -> BackendUnavailable ("unreachable", with `ollama serve`), no answer within the stall time ->
  ServerStalled ("no answer in N s", no `ollama serve`: the server is there), a dropped connection ->
  BackendUnavailable, any other HTTP error (5xx) -> LlmError, each naming the host, the model and what was
  being done; a 5xx is ServerFailed, which a pool of servers retries elsewhere. An embedding input longer
  than the context window (HTTP 400, "context length") is InputTooLong, which the embedder handles by
  truncating and counting.

The host is the caller's `host:` setting, else $OLLAMA_HOST (the variable the Ollama CLI and the `ollama`
package read), else http://127.0.0.1:11434; it is resolved once, in `resolve_host`, and recorded.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Callable, Mapping, TypeVar

from harness.llm.base import (
    AuthError,
    BackendUnavailable,
    LlmError,
    ModelNotFound,
    ServerFailed,
    ServerStalled,
)

DEFAULT_HOST = "http://127.0.0.1:11434"
_DIGEST_RE = re.compile(r"(?:sha256[:-])?([0-9a-f]{64})")

T = TypeVar("T")


class InputTooLong(LlmError):
    """The server refused an embedding input longer than num_ctx (only with truncate=false)."""


def resolve_host(host: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The configured host, else $OLLAMA_HOST, else the local default."""
    env = os.environ if environ is None else environ
    return host or env.get("OLLAMA_HOST") or DEFAULT_HOST


def full_name(model: str) -> str:
    """Ollama's canonical name: an untagged model means its `latest` tag."""
    return model if ":" in model else f"{model}:latest"


def ollama_error(
    e: BaseException, *, host: str, model: str, doing: str, stall_s: float | None = None
) -> LlmError:
    """The project's error for a failure of the `ollama` client; the same for chat and embeddings."""
    import httpx
    import ollama

    if isinstance(e, ollama.ResponseError):
        status, message = e.status_code, str(e.error)
        if status == 404:
            return ModelNotFound(
                f"ollama at {host} does not have model {model!r} (while {doing}): run `ollama pull {model}` "
                "and rerun"
            )
        if status in (401, 403):
            return AuthError(
                f"ollama at {host} refused the request for model {model!r} (HTTP {status}, while {doing}): "
                "check OLLAMA_API_KEY or the proxy in front of the server"
            )
        if status == 400 and "context length" in message.lower():
            return InputTooLong(message)
        failed = ServerFailed if status >= 500 else LlmError  # a 5xx may pass: a pool retries another server
        return failed(f"ollama at {host} failed for model {model!r} while {doing}: HTTP {status}: {message}")
    if isinstance(e, (httpx.ReadTimeout, httpx.WriteTimeout)):  # connected: the server is there but silent
        waited = f"{stall_s:g} s" if stall_s is not None else "the stall time"
        return ServerStalled(
            f"ollama at {host}: no answer in {waited} (while {doing} for model {model!r}); the server "
            "accepted "
            "the connection but sent nothing: it is hung or overloaded (restart it, or raise the model's "
            "`stall_s` for a slow model); completed calls are cached and a rerun resumes"
        )
    if isinstance(e, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return BackendUnavailable(
            f"ollama at {host} dropped the call (while {doing} for model {model!r}; {type(e).__name__}: "
            f"{e}); "
            "completed calls are cached and a rerun resumes"
        )
    if isinstance(e, (ConnectionError, httpx.TransportError)):
        return BackendUnavailable(
            f"ollama at {host} is unreachable (while {doing} for model {model!r}; {type(e).__name__}): start "
            "it "
            "with `ollama serve` (or set OLLAMA_HOST / the `host:` setting) and rerun; completed calls are "
            "cached and a rerun resumes"
        )
    raise TypeError(f"not an ollama client failure: {type(e).__name__}: {e}")


class OllamaClient:
    """One server connection. /api/show answers and digests are remembered per model, so a client shared by
    the chat backend and an embedding retriever reads each model's digest once."""

    def __init__(self, host: str | None = None, *, timeout_s: float = 600, stall_s: float | None = None,
                 client: Any = None):
        self.host = resolve_host(host)
        self.stall_s = timeout_s if stall_s is None else stall_s
        if client is None:
            try:
                import httpx
                import ollama
            except ImportError:
                raise LlmError(
                    "the `ollama` package is not installed (pip install ollama; make .venv installs it)"
                ) from None
            # read: the longest silence from a server that took the call (no streaming: its whole answer)
            client = ollama.Client(host=self.host, timeout=httpx.Timeout(timeout_s, read=self.stall_s))
        self._client = client
        self._shown: dict[str, dict[str, Any]] = {}
        self._digests: dict[str, str] = {}
        self._lock = threading.Lock()

    def call(self, model: str, doing: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run one client call; every failure leaves as the project's error (`ollama_error`)."""
        import httpx
        import ollama

        try:
            return fn(*args, **kwargs)
        except (ollama.ResponseError, ConnectionError, httpx.TransportError) as e:
            raise ollama_error(e, host=self.host, model=model, doing=doing, stall_s=self.stall_s) from None

    def show(self, model: str) -> dict[str, Any]:
        """/api/show as plain JSON (Modelfile, parameters, model_info); a missing model is ModelNotFound."""
        with self._lock:
            cached = self._shown.get(model)
        if cached is None:
            response = self.call(model, "reading the model details", self._client.show, model)
            cached = response.model_dump(mode="json", exclude={"modified_at"}, by_alias=True)
            with self._lock:
                self._shown[model] = cached
        return cached

    def digest(self, model: str) -> str:
        with self._lock:
            cached = self._digests.get(model)
        if cached is None:
            cached = model_digest(self, model)
            with self._lock:
                self._digests[model] = cached
        return cached

    def context_length(self, model: str) -> int | None:
        """The model's trained context window from /api/show's model_info, when reported."""
        info = self.show(model).get("model_info") or {}
        lengths = [v for k, v in sorted(info.items()) if k.endswith(".context_length")]
        return int(lengths[0]) if lengths else None

    def chat(self, model: str, **kwargs: Any) -> Any:
        return self.call(model, "generating", self._client.chat, model=model, **kwargs)

    def embed(self, model: str, **kwargs: Any) -> Any:
        return self.call(model, "embedding", self._client.embed, model=model, **kwargs)


def model_digest(client: OllamaClient, model: str) -> str:
    """The one way a model digest is read (see the module docstring): "sha256:<64 hex>" from /api/tags."""
    client.show(model)  # a missing model fails here, with `ollama pull`, before anything is built
    listing = client.call(model, "reading the model digest", client._client.list)
    wanted = full_name(model)
    found = sorted(
        {str(m.digest) for m in listing.models if m.model and full_name(m.model) == wanted and m.digest}
    )
    if len(found) != 1:
        what = "no digest" if not found else f"{len(found)} digests ({', '.join(found)})"
        raise LlmError(
            f"ollama at {client.host} lists {what} for model {model!r}; run `ollama pull {model}` "
            "(the digest pins the weights)"
        )
    m = _DIGEST_RE.fullmatch(found[0].lower())
    if m is None:
        raise LlmError(
            f"ollama at {client.host} lists digest {found[0]!r} for model {model!r}: not a SHA-256"
        )
    return "sha256:" + m.group(1)
