"""Per-question moderators of the enrichment gain, as the paper's Appendix defines them.

- Question terms: the question's word types (lowercase [a-z0-9]+), English stop words and one-character
  tokens removed.
- Gold chunks: the header-led (S) chunks in the question's scope that cover at least one evidence unit
  under the metric's matching rule (Qasper-like: the chunk alone retrieves the evidence string;
  FreshStack-like: the chunk is relevant, at least half its 5-grams in the gold 5-grams).
- Overlap: the share of question terms that occur in the gold evidence text.
- Bridged: some question term is absent from the gold chunks' S+T text but present in their E rendering;
  "missing, not bridged": some term is absent and the fields supply none; "no missing term" otherwise.
- Targeting: question terms in the gold chunks' generated fields minus the mean number in the fields of
  the other chunks of the same scope (paper or domain).

A question without a gold chunk, or whose gold chunks lack an S+T or E twin, gets no moderator; it is
counted by reason, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from harness.data.model import Chunk, Question
from harness.metrics.registry import get_metric_set
from harness.metrics.ngrams import GramCache
from harness.tokens import words

BRIDGED, NOT_BRIDGED, NO_MISSING = "bridged", "missing, not bridged", "no missing term"
BRIDGING_GROUPS = (BRIDGED, NOT_BRIDGED, NO_MISSING)
FIELD_NAMES = ("title", "summary", "keywords", "questions")  # what the E rendering indexes


def _stop_words() -> frozenset[str]:
    # scikit-learn's English list (installed with sentence-transformers); lower-case single words
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def question_terms(text: str, stop_words: frozenset[str] | None = None) -> frozenset[str]:
    stop = _stop_words() if stop_words is None else stop_words
    return frozenset(w for w in words(text) if len(w) > 1 and w not in stop)


def field_words(chunk: Chunk) -> frozenset[str]:
    g = chunk.generated or {}
    parts = []
    for name in FIELD_NAMES:
        value = g.get(name)
        parts += value if isinstance(value, list) else [value or ""]
    return frozenset(words(" ".join(map(str, parts))))


@dataclass(frozen=True)
class Moderators:
    qid: str
    bridging: str  # one of BRIDGING_GROUPS
    overlap: float
    targeting: float
    gold_chunks: int


@dataclass(frozen=True)
class ModeratorTable:
    by_qid: dict[str, Moderators]
    excluded: dict[str, int]  # reason -> questions without moderators


def gold_chunk_ids(
    question: Question, chunks: Sequence[Chunk], metric_set: str, grams: GramCache
) -> list[str]:
    """The chunks (of the question's scope, in corpus order) that cover an evidence unit on their own."""
    return get_metric_set(metric_set).gold_chunks(question, chunks, grams)


def moderators(
    questions: Sequence[Question], metric_set: str, s_chunks: Sequence[Chunk], st_chunks: Mapping[str, Chunk],
    e_chunks: Mapping[str, Chunk], stop_words: frozenset[str] | None = None,
) -> ModeratorTable:
    """`s_chunks` in corpus order; `st_chunks` / `e_chunks` by chunk_id (same header-led boundaries)."""
    stop = _stop_words() if stop_words is None else stop_words
    grams = GramCache()
    by_doc: dict[str, list[Chunk]] = {}
    for c in s_chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out: dict[str, Moderators] = {}
    excluded: dict[str, int] = {}

    def exclude(reason: str) -> None:
        excluded[reason] = excluded.get(reason, 0) + 1

    for q in questions:
        terms = question_terms(q.query, stop)
        scope = [c for d in q.scope for c in by_doc.get(d, [])]
        gold = gold_chunk_ids(q, scope, metric_set, grams)
        if not terms:
            exclude("no question term")
            continue
        if not gold:
            exclude("no gold chunk")
            continue
        if any(g not in st_chunks or g not in e_chunks for g in gold):
            exclude("gold chunk missing from the S+T or E chunk set")
            continue
        st_words = frozenset().union(*(words(st_chunks[g].indexed_text or st_chunks[g].text) for g in gold))
        e_words = frozenset().union(*(words(e_chunks[g].indexed_text) for g in gold))
        missing = terms - st_words
        group = NO_MISSING if not missing else BRIDGED if missing & e_words else NOT_BRIDGED
        evidence_words = frozenset(words(" ".join(e.text for e in q.evidence)))
        gold_set = set(gold)
        gold_fields = frozenset().union(*(field_words(e_chunks[g]) for g in gold))
        others = [len(terms & field_words(e_chunks[c.chunk_id])) for c in scope
                  if c.chunk_id not in gold_set and c.chunk_id in e_chunks]
        baseline = sum(others) / len(others) if others else 0.0
        out[q.qid] = Moderators(q.qid, group, len(terms & evidence_words) / len(terms),
                                len(terms & gold_fields) - baseline, len(gold))
    return ModeratorTable(out, excluded)


def terciles(values: Mapping[str, float]) -> dict[str, str]:
    """bottom / middle / top by value, ties broken by qid so the split is deterministic; sizes differ by <=
    1."""
    order = sorted(values, key=lambda q: (values[q], q))
    n = len(order)
    cuts = (round(n / 3), round(2 * n / 3))
    return {q: "bottom" if i < cuts[0] else "middle" if i < cuts[1] else "top" for i, q in enumerate(order)}
