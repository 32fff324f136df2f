"""Cutting embedder inputs to a token budget (`truncate_tokens`, `truncation_side` on dense retrievers).

The budget counts the tokens of the prefix and the text (no special tokens), each tokenized on its own;
the prefix (a query instruction) is always kept whole and the text is cut at a token boundary: `right`
keeps its head, `left` its tail. qwen3-embedding's registered setting cuts texts and queries longer than
3,000 Qwen3 tokens to 3,000 (the paper's Appendix J); Ollama cannot count tokens for us, so the model's
tokenizer is read from a local path or the local Hugging Face cache.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.errors import HarnessError


class TokenCut:
    def __init__(self, load_tokenizer: Callable[[], Any], *, limit: int, side: str, identity: str):
        self._load, self.limit, self.side, self.identity = load_tokenizer, limit, side, identity
        self._tokenizer = None

    def _offsets(self, text: str) -> list[tuple[int, int]]:
        if self._tokenizer is None:
            self._tokenizer = self._load()
        enc = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return [(int(a), int(b)) for a, b in enc["offset_mapping"]]

    def apply(self, prefix: str, text: str) -> tuple[str, bool]:
        """(the text cut so prefix + text fits the budget, whether it was cut)."""
        budget = self.limit - (len(self._offsets(prefix)) if prefix else 0)
        if budget < 1:
            raise HarnessError(
                f"truncate_tokens {self.limit} leaves no room for the text after the prefix {prefix!r}"
            )
        offsets = self._offsets(text)
        if len(offsets) <= budget:
            return text, False
        if self.side == "right":
            return text[: offsets[budget - 1][1]], True
        return text[offsets[len(offsets) - budget][0] :], True

    def describe(self) -> str:
        return (
            f"inputs cut to {self.limit} tokens ({self.side}; prefix kept whole), tokenizer {self.identity}"
        )
