"""Qasper-like evidence metrics (docs/design.md, Evidence metrics): rec@Bt, complete@Bt, partial@Bt,
rec@k, hit@k.

Gold: the question's distinct evidence strings (Question.evidence texts; exact duplicates count once).
Unlocated evidence strings stay in the denominator and are matched by their words like located ones:
matching never uses the location, and dropping them would make a question look easier the less of its
gold the adapter could place (the adapter counts and reports them; docs/design.md, Integrity rules). A
string with no words at all can never be retrieved and still counts.

Retrieved: a string of >= 5 words when at least half of its distinct 5-grams occur in the union of the
units' 5-gram sets (each unit's 5-grams taken within the unit); a shorter string when its words occur as
a contiguous sequence inside one unit. hit@k is 1 when the top-k chunks (whole) retrieve at least one
evidence string, i.e. partial@k.
"""

from __future__ import annotations

from typing import Sequence

from harness.data.model import Chunk, Question
from harness.config.lab import UNIT_SUFFIX
from harness.errors import InputError
from harness.metrics.assembly import assemble
from harness.metrics.budget import TokenCache, analyse_unit, budget_cuts, needed_prefix
from harness.metrics.ngrams import N, GramCache, UnitGrams

BUDGETS = (256, 512, 1024)
KS = (1, 3, 5)


def gold_strings(question: Question, grams: GramCache) -> list[UnitGrams]:
    texts = sorted({e.text for e in question.evidence})
    if not texts:
        raise InputError(
            f"question {question.qid!r} has no evidence strings; Qasper-like metrics are undefined "
            "(the adapter drops and counts such questions)"
        )
    return [grams.get(t) for t in texts]


def retrieved_flags(gold: Sequence[UnitGrams], units: Sequence[UnitGrams]) -> list[bool]:
    """For each gold string, whether these units retrieve it (module docstring)."""
    matcher = EvidenceMatcher(gold)
    for unit in units:
        matcher.add(unit)
    return matcher.flags()


class EvidenceMatcher:
    """A running selection of units and which gold strings it retrieves; units are added in rank order.

    Only the 5-grams the gold strings contain are kept, so growing the selection costs a set intersection
    per unit rather than a union of every selected 5-gram.
    """

    def __init__(self, gold: Sequence[UnitGrams]) -> None:
        self.gold = gold
        self.long = [ev.n_words >= N for ev in gold]
        self.short_todo = [i for i, ev in enumerate(gold) if not self.long[i]]
        self.gold_grams = frozenset().union(*(ev.grams for ev, long in zip(gold, self.long) if long))
        self.hits: set = set()
        self.short_found = [False] * len(gold)

    def add(self, unit: UnitGrams) -> None:
        if self.gold_grams:
            self.hits |= unit.grams & self.gold_grams
        if self.short_todo:
            for i in [i for i in self.short_todo if unit.contains(self.gold[i])]:
                self.short_found[i] = True
                self.short_todo.remove(i)

    def flags(self, extra: UnitGrams | None = None) -> list[bool]:
        """Retrieved flags for the units added so far, plus `extra` (a cut unit) when given."""
        hits = self.hits
        if extra is not None and self.gold_grams:
            hits = hits | self.gold_grams.intersection(
                extra.gram_seq
            )  # a scan: no set of the cut unit is built
        flags = []
        for ev, long, found in zip(self.gold, self.long, self.short_found):
            if long:
                flags.append(2 * len(ev.grams & hits) >= len(ev.grams))
            else:
                flags.append(found or (extra is not None and extra.contains(ev)))
        return flags


def score_qasper(
    question: Question,
    ranked_chunks: Sequence[Chunk],
    budgets: Sequence[int],
    ks: Sequence[int],
    *,
    tokens: TokenCache,
    grams: GramCache,
) -> list[tuple[str, float]]:
    """rec@Bt, complete@Bt, partial@Bt for each (ascending) budget, then rec@k, hit@k for each k."""
    gold = gold_strings(question, grams)
    head, counts = needed_prefix(ranked_chunks, max(budgets), max(ks), tokens)
    rec, complete, partial = [], [], []
    matcher, added = EvidenceMatcher(gold), 0
    for budget, (n_whole, cut) in zip(budgets, budget_cuts(head, counts, budgets, tokens)):
        for chunk in head[added:n_whole]:
            matcher.add(grams.get(chunk.text))
        added = n_whole
        flags = matcher.flags(analyse_unit(cut, grams) if cut is not None else None)
        rec.append((f"rec@{budget}t", sum(flags) / len(flags)))
        complete.append((f"complete@{budget}t", float(all(flags))))
        partial.append((f"partial@{budget}t", float(any(flags))))
    return rec + complete + partial + _k_metrics(gold, head, ks, grams)


def _k_metrics(gold: Sequence[UnitGrams], head: Sequence[Chunk], ks: Sequence[int], grams: GramCache) -> list:
    rec_k, hit_k = [], []
    matcher, added = EvidenceMatcher(gold), 0
    for k in ks:
        for chunk in head[added:k]:
            matcher.add(grams.get(chunk.text))
        added = max(added, k)
        flags = matcher.flags()
        rec_k.append((f"rec@{k}", sum(flags) / len(flags)))
        hit_k.append((f"hit@{k}", float(any(flags))))
    return rec_k + hit_k


def score_qasper_assembled(
    question: Question,
    ranked_chunks: Sequence[Chunk],
    budgets: Sequence[int],
    ks: Sequence[int],
    *,
    tokens: TokenCache,
    grams: GramCache,
    unit: str,
    overflow: str,
    novelty: float | None,
) -> list[tuple[str, float]]:
    """score_qasper with another assembler (harness.metrics.assembly): each budget's metrics are measured on
    exactly the units that assembler puts in the context; names carry the unit (complete@120w for words)."""
    gold = gold_strings(question, grams)
    suffix = UNIT_SUFFIX[unit]
    rec, complete, partial = [], [], []
    for budget in budgets:
        picked = assemble(
            iter(ranked_chunks), budget, unit=unit, overflow=overflow, novelty=novelty, tokens=tokens
        )
        flags = retrieved_flags(
            gold, [grams.get_transient(p.text) if p.truncated else grams.get(p.text) for p in picked]
        )
        rec.append((f"rec@{budget}{suffix}", sum(flags) / len(flags)))
        complete.append((f"complete@{budget}{suffix}", float(all(flags))))
        partial.append((f"partial@{budget}{suffix}", float(any(flags))))
    head = [ranked_chunks[i] for i in range(min(max(ks), len(ranked_chunks)))]
    return rec + complete + partial + _k_metrics(gold, head, ks, grams)
