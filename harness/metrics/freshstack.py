"""FreshStack-like metrics (docs/design.md, Evidence metrics): prec@Bt, rec@Bt, hit@k, MRR@10.

N_G is the union of the 5-gram sets of the gold spans (Question.evidence texts), each span's 5-grams
taken within that span. N_B is the union of the 5-gram sets of the units selected under budget B.
prec@Bt = |N_B & N_G| / |N_B| (0 when N_B is empty), rec@Bt = |N_B & N_G| / |N_G|. A chunk (whole) is
relevant when at least half of its distinct 5-grams are in N_G; a chunk with no 5-grams is not relevant.
hit@k = a relevant chunk in the top k; MRR@10 = 1 / rank of the first relevant chunk in the top 10, else 0.
A question whose gold spans have no 5-gram at all makes rec undefined and is refused.
"""

from __future__ import annotations

from typing import Sequence

from harness.data.model import Chunk, Question
from harness.errors import InputError
from harness.metrics.budget import TokenCache, analyse_unit, budget_cuts, needed_prefix
from harness.metrics.ngrams import Gram, GramCache

BUDGETS = (512, 1024, 2048)
KS = (1, 3, 5, 10)
MRR_DEPTH = 10


def gold_grams(question: Question, grams: GramCache) -> frozenset[Gram]:
    texts = tuple(sorted({e.text for e in question.evidence}))
    gold = grams.union(texts) if texts else frozenset()
    if not gold:
        raise InputError(
            f"question {question.qid!r}: its gold spans have no word 5-gram, so FreshStack-like rec is "
            "undefined (the adapter drops and counts such questions)"
        )
    return gold


def is_relevant(chunk_grams: frozenset[Gram], gold_part: frozenset[Gram]) -> bool:
    """gold_part: the chunk's 5-grams that are in N_G."""
    return bool(chunk_grams) and 2 * len(gold_part) >= len(chunk_grams)


def score_freshstack(
    question: Question,
    ranked_chunks: Sequence[Chunk],
    budgets: Sequence[int],
    ks: Sequence[int],
    *,
    tokens: TokenCache,
    grams: GramCache,
) -> list[tuple[str, float]]:
    """prec@Bt, rec@Bt per budget (interleaved), then hit@k per k, then mrr@10."""
    gold = gold_grams(question, grams)
    depth = max(max(ks), MRR_DEPTH)
    head, counts = needed_prefix(ranked_chunks, max(budgets), depth, tokens)
    gold_parts: dict[int, frozenset[Gram]] = {}  # head index -> that chunk's gold 5-grams, computed once

    def gold_part(i: int) -> frozenset[Gram]:
        if i not in gold_parts:
            gold_parts[i] = grams.get(head[i].text).grams & gold
        return gold_parts[i]

    rows: list[tuple[str, float]] = []
    selected: set = set()  # running union of the whole chunks' 5-grams (N_B without the cut unit)
    selected_gold: set = set()  # its part in N_G
    added = 0
    for budget, (n_whole, cut) in zip(budgets, budget_cuts(head, counts, budgets, tokens)):
        for i in range(added, n_whole):
            selected |= grams.get(head[i].text).grams
            selected_gold |= gold_part(i)
        added = n_whole
        size, overlap = len(selected), len(selected_gold)
        if cut is not None:
            extra = set(analyse_unit(cut, grams).gram_seq)
            extra -= selected
            size += len(extra)
            overlap += len(gold.intersection(extra))
        rows.append((f"prec@{budget}t", overlap / size if size else 0.0))
        rows.append((f"rec@{budget}t", overlap / len(gold)))
    relevant = [is_relevant(grams.get(c.text).grams, gold_part(i)) for i, c in enumerate(head[:depth])]
    rows.extend((f"hit@{k}", float(any(relevant[:k]))) for k in ks)
    first = next((rank for rank, rel in enumerate(relevant[:MRR_DEPTH], start=1) if rel), None)
    rows.append((f"mrr@{MRR_DEPTH}", 1.0 / first if first else 0.0))
    return rows
