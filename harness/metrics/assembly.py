"""Assembler options beside budget.py (docs/chunking-lab.md): budget unit, overflow rule and a novelty filter.

Chunks are offered in rank order and measured on their source text (never indexed_text):
- unit "tokens" counts cl100k tokens (budget.py); "words" counts lowercase [a-z0-9]+ words;
- overflow "cut" truncates the first chunk that crosses the budget and stops (today's behaviour; with
  tokens and no novelty filter it is exactly budget.fill_budget); "skip" leaves out a chunk that does
  not fit and keeps offering lower-ranked ones, so a smaller chunk can take the space;
- novelty (e.g. 0.3): once something is picked, a chunk whose words are less than that share new (not
  in the words picked so far; repeats counted) is skipped, before the budget is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from harness.config.lab import OVERFLOWS, UNITS
from harness.data.model import Chunk
from harness.errors import InputError
from harness.metrics.budget import TokenCache, check_budget, fill_budget
from harness.tokens import WORD_RE, words


@dataclass(frozen=True)
class Picked:
    """One chunk in the context: whole, or the cut prefix of the crossing chunk."""

    rank: int  # 1-based rank in the offered order
    chunk_id: str
    text: str  # source text, or its kept prefix
    size: int  # in the budget unit
    truncated: bool


def word_prefix(text: str, n_words: int) -> str:
    """The source text up to the end of its n_words-th word (a slice of text)."""
    if n_words <= 0:
        return ""
    for k, m in enumerate(WORD_RE.finditer(text.lower()), start=1):
        if k == n_words:
            return text[: m.end()]
    return text


def size_in_unit(text: str, unit: str, tokens: TokenCache | None = None) -> int:
    """A source text's length in a budget unit: cl100k tokens or lowercase words (what `assemble` charges)."""
    if unit == "words":
        return len(words(text))
    if unit != "tokens":
        raise InputError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return (tokens if tokens is not None else TokenCache()).count(text)  # an empty cache is falsy (len 0)


def novel_share(chunk_words: list[str], seen: set[str]) -> float:
    return sum(1 for w in chunk_words if w not in seen) / max(1, len(chunk_words))


def assemble(
    ranked_chunks: Iterable[Chunk],
    budget: int,
    *,
    unit: str = "tokens",
    overflow: str = "cut",
    novelty: float | None = None,
    tokens: TokenCache | None = None,
) -> list[Picked]:
    check_budget(budget)
    if unit not in UNITS:
        raise InputError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    if overflow not in OVERFLOWS:
        raise InputError(f"overflow must be one of {', '.join(OVERFLOWS)}, got {overflow!r}")
    if novelty is not None and not 0.0 <= novelty <= 1.0:
        raise InputError(f"novelty must be a share in [0, 1] or None, got {novelty!r}")
    if unit == "tokens" and tokens is None:
        tokens = TokenCache()
    if unit == "tokens" and overflow == "cut" and novelty is None:
        return [
            Picked(u.rank, u.chunk_id, u.text, u.n_tokens, u.truncated)
            for u in fill_budget(ranked_chunks, budget, tokens)
        ]
    picked: list[Picked] = []
    seen: set[str] = set()
    remaining = budget
    for rank, chunk in enumerate(ranked_chunks, start=1):
        if remaining == 0:
            break
        chunk_words = words(chunk.text)
        if novelty is not None and picked and novel_share(chunk_words, seen) < novelty:
            continue
        size = len(chunk_words) if unit == "words" else size_in_unit(chunk.text, unit, tokens)
        if size <= remaining:
            picked.append(Picked(rank, chunk.chunk_id, chunk.text, size, False))
            remaining -= size
        elif overflow == "cut":
            kept = (
                word_prefix(chunk.text, remaining)
                if unit == "words"
                else tokens.prefix(chunk.text, remaining)
            )
            picked.append(Picked(rank, chunk.chunk_id, kept, remaining, True))
            remaining = 0
        else:
            continue
        seen.update(chunk_words if not picked[-1].truncated else words(picked[-1].text))
    return picked
