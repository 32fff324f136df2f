"""LLM layer (docs/design.md, LLM calls): backends behind one interface, a content-addressed generation cache,
a spend ledger, and the session that routes every call through both."""

from harness.llm.base import (
    AuthError,
    Backend,
    BackendUnavailable,
    Completion,
    LlmError,
    ModelNotFound,
    ReplayMiss,
    SpendCapReached,
)
from harness.llm.cache import CacheRecord, GenerationCache, cache_key
from harness.llm.ledger import SpendLedger
from harness.llm.registry import BACKENDS, make_backend, resolve_digest
from harness.llm.session import LlmSession

__all__ = [
    "AuthError",
    "BACKENDS",
    "Backend",
    "BackendUnavailable",
    "CacheRecord",
    "Completion",
    "GenerationCache",
    "LlmError",
    "LlmSession",
    "ModelNotFound",
    "ReplayMiss",
    "SpendCapReached",
    "SpendLedger",
    "cache_key",
    "make_backend",
    "resolve_digest",
]
