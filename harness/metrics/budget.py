"""Token-budget filling on source text (docs/design.md, Cells and budgets).

Chunks are taken in rank order; each chunk's *source* text (chunk.text, never indexed_text) is counted in
cl100k_base tokens, whole chunks are added while they fit, and the chunk that crosses the budget is cut at
a token boundary (its first `remaining` tokens decoded). Every retrieved chunk is its own unit.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import Iterable, Iterator, Sequence

import numpy as np

from harness.data.model import Chunk
from harness.errors import InputError
from harness.metrics.ngrams import GramCache, UnitGrams
from harness.tokens import cl100k


@dataclass(frozen=True)
class Unit:
    """One selected unit: a whole retrieved chunk or the truncated last one."""

    rank: int  # 1-based rank of the chunk it comes from
    chunk_id: str
    text: str  # the chunk's source text, or the decoding of its first n_tokens tokens
    n_tokens: int
    truncated: bool
    source: str = field(repr=False, default="")  # the chunk's whole source text


class TokenCache:
    """cl100k token ids per distinct source text, encoded once for a whole scoring run.

    Texts are encoded with `encode_ordinary`, so a source text that happens to contain a special-token
    string such as "<|endoftext|>" is counted as plain text instead of raising.
    """

    def __init__(self, encoding=None) -> None:
        self._enc = encoding if encoding is not None else cl100k()
        self._ids: dict[str, array] = {}
        self._ends: dict[str, array] = {}  # cumulative token byte lengths, for ASCII texts that were cut

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self, text: str) -> array:
        found = self._ids.get(text)
        if found is None:
            # array('I') holds 4 bytes per token instead of a list's ~36: corpora have millions of tokens
            found = self._ids[text] = array("I", self._enc.encode_ordinary(text))
        return found

    def count(self, text: str) -> int:
        return len(self.ids(text))

    def prefix(self, text: str, n_tokens: int) -> str:
        """The decoding of the first n_tokens tokens of text (a cut inside a UTF-8 sequence decodes to
        U+FFFD).

        An ASCII text's tokens all end on a character, so its prefix is a slice of the text itself, at the
        summed byte length of the kept tokens (which lets the 5-gram analysis reuse the whole text's).
        """
        if n_tokens <= 0:
            return ""
        if text.isascii():
            return text[: self._byte_ends(text)[n_tokens - 1]]
        return self._enc.decode(self.ids(text)[:n_tokens].tolist())

    def _byte_ends(self, text: str) -> array:
        ends = self._ends.get(text)
        if ends is None:
            ids = self.ids(text)
            table = self._token_lengths()
            if table is not None:
                ends = array("I", np.cumsum(table[np.frombuffer(ids, dtype=np.uint32)]).tolist())
            else:
                ends = array("I", accumulate(len(self._enc.decode_bytes([i])) for i in ids))
            self._ends[text] = ends
        return ends

    def _token_lengths(self):
        if hasattr(self._enc, "n_vocab") and hasattr(self._enc, "decode_single_token_bytes"):
            return token_byte_lengths(self._enc)
        return None


@lru_cache(maxsize=4)
def token_byte_lengths(encoding) -> np.ndarray:
    """Byte length of every token id of an encoding, built once per process from its vocabulary."""
    lengths = np.zeros(encoding.n_vocab, dtype=np.int64)
    for i in range(encoding.n_vocab):
        try:
            lengths[i] = len(encoding.decode_single_token_bytes(i))
        except KeyError:  # ids between the ordinary and the special tokens are unused
            pass
    return lengths


def check_budget(budget: object) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise InputError(f"budget must be a positive integer number of tokens, got {budget!r}")
    return budget


def fill_budget(ranked_chunks: Iterable[Chunk], budget: int, tokens: TokenCache) -> list[Unit]:
    """The units that fill `budget` tokens: whole chunks in rank order, the crossing one truncated.

    Stops as soon as the budget is exactly used, so a chunk after an exact fill is not selected; when
    everything retrieved fits, every chunk is selected whole. Reads only as many chunks as it needs.
    """
    remaining = check_budget(budget)
    units: list[Unit] = []
    for rank, chunk in enumerate(ranked_chunks, start=1):
        if remaining == 0:
            break
        n = tokens.count(chunk.text)
        if n <= remaining:
            units.append(Unit(rank, chunk.chunk_id, chunk.text, n, False, chunk.text))
            remaining -= n
        else:
            kept = tokens.prefix(chunk.text, remaining)
            units.append(Unit(rank, chunk.chunk_id, kept, remaining, True, chunk.text))
            remaining = 0
    return units


def budget_cuts(
    head: Sequence[Chunk], counts: Sequence[int], budgets: Sequence[int], tokens: TokenCache
) -> list[tuple[int, Unit | None]]:
    """fill_budget for several ascending budgets in one pass, as (number of whole chunks, cut unit or None).

    counts[i] is head[i]'s token count, for the chunks the largest budget reaches (needed_prefix). The
    whole chunks of a smaller budget are a prefix of those of a larger one, so metrics can grow one running
    selection instead of rebuilding it per budget: fill_budget(head, b) is head[:n] whole followed by the
    cut unit when present (a test checks it).
    """
    cuts: list[tuple[int, Unit | None]] = []
    n_whole, used = 0, 0
    for budget in budgets:
        while n_whole < len(counts) and used < budget and used + counts[n_whole] <= budget:
            used += counts[n_whole]
            n_whole += 1
        cut = None
        if used < budget and n_whole < len(counts):
            chunk = head[n_whole]
            remaining = budget - used
            cut = Unit(
                n_whole + 1, chunk.chunk_id, tokens.prefix(chunk.text, remaining), remaining, True, chunk.text
            )
        cuts.append((n_whole, cut))
    return cuts


def analyse_unit(unit: Unit, grams: GramCache) -> UnitGrams:
    """A unit's 5-gram analysis: a whole chunk's is cached for the run; an ASCII cut reuses its chunk's."""
    if not unit.truncated:
        return grams.get(unit.text)
    if unit.source.isascii():
        return grams.prefix(unit.source, len(unit.text))
    return grams.get_transient(unit.text)


def needed_prefix(
    ranked_chunks: Iterable[Chunk], max_budget: int, max_k: int, tokens: TokenCache
) -> tuple[list[Chunk], list[int]]:
    """The shortest rank prefix covering both the largest budget and the deepest cut-off k, with token counts.

    Metrics are computed on this prefix only, so a full ranking of a pooled corpus costs no more than its
    head. Counts cover the chunks up to the one that reaches the largest budget; chunks read only for k
    are never encoded.
    """
    head: list[Chunk] = []
    counts: list[int] = []
    used = 0
    it: Iterator[Chunk] = iter(ranked_chunks)
    while used < max_budget or len(head) < max_k:
        chunk = next(it, None)
        if chunk is None:
            break
        head.append(chunk)
        if used < max_budget:
            n = tokens.count(chunk.text)
            used += n
            counts.append(n)
    return head, counts
