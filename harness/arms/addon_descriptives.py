"""Descriptives the paper reports for the add-on arms (merging, keys, expansion, M-TP), as small records."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from harness.arms.consolidate import MappingOutcomes
from harness.arms.merge import by_document, chunk_key, merged_fragment_ids
from harness.data.model import Chunk
from harness.tokens import count_tokens

LONG_MERGED_TOKENS = 512


@dataclass(frozen=True)
class CountSummary:
    """A per-unit count: how many units, total, mean and the distribution (count -> units with it)."""

    units: int
    total: int
    mean: float
    distribution: dict[int, int]


def summarise_counts(counts: Iterable[int]) -> CountSummary:
    values = list(counts)
    return CountSummary(
        units=len(values),
        total=sum(values),
        mean=round(statistics.fmean(values), 6) if values else 0.0,
        distribution=dict(sorted(Counter(values).items())),
    )


def merges_per_document(merges: Mapping[str, int]) -> CountSummary:
    return summarise_counts(merges.values())


def key_reuse_rate(chunks: Sequence[Chunk]) -> float:
    """Pooled over chunks: the share of keyed chunks whose key an earlier chunk of its document already had.

    Equals (keyed chunks - distinct keys per document, summed) / keyed chunks; 0.0 with no keyed chunk.
    """
    keyed = reused = 0
    for doc_chunks in by_document(chunks).values():
        seen: set[str] = set()
        for chunk in doc_chunks:
            key = chunk_key(chunk)
            if key:
                keyed += 1
                reused += key in seen
                seen.add(key)
    return round(reused / keyed, 6) if keyed else 0.0


@dataclass(frozen=True)
class LongMerged:
    merged_chunks: int
    over_limit: int
    share: float  # over_limit / merged_chunks, 0.0 with no merged chunk
    limit_tokens: int


def long_merged_share(chunks: Sequence[Chunk], limit_tokens: int = LONG_MERGED_TOKENS) -> LongMerged:
    """Of the chunks merged from two or more fragments, how many exceed `limit_tokens` cl100k tokens."""
    merged = [c for c in chunks if len(merged_fragment_ids(c)) >= 2]
    over = sum(count_tokens(c.text) > limit_tokens for c in merged)
    return LongMerged(len(merged), over, round(over / len(merged), 6) if merged else 0.0, limit_tokens)


def inserted_per_expansion(per_question: Iterable[Mapping[str, int]]) -> CountSummary:
    """Chunks inserted after each retrieved chunk, pooled over questions (each Expansion.inserted)."""
    return summarise_counts(n for inserted in per_question for n in inserted.values())


@dataclass(frozen=True)
class ShortfallSummary:
    documents: int
    documents_short: int
    merges_short: int
    by_document: dict[str, int]  # only documents that fell short


def shortfall_summary(shortfall: Mapping[str, int]) -> ShortfallSummary:
    short = {doc_id: n for doc_id, n in sorted(shortfall.items()) if n > 0}
    return ShortfallSummary(len(shortfall), len(short), sum(short.values()), short)


def mapping_outcomes(per_document: Iterable[MappingOutcomes]) -> MappingOutcomes:
    return sum(per_document, MappingOutcomes())
