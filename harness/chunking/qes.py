"""Supervised QES chunkers (QESChunker, docs/chunking-lab.md): exact DP and overlapping greedy, on sentence
units.

Both see only training question-evidence pairs: `training` is a sequence of questions, each a tuple of
evidence character spans. Callers pass `training_spans(...)` of the training split, so no held-out
question can reach a chunk boundary (a test checks it).

An evidence span is inside a chunk of units [j, i) when the units holding its first and last characters
are both in [j, i). Spans are counted once however many questions share them.

- DP (non-overlapping): maximise sum over chunks of u(j, i) = evidence spans inside + multi-evidence
  questions with all evidence inside - mu. A chunk's slice is at most L characters (a single longer unit
  is allowed alone). The inner loop runs j downwards and stops once the window exceeds L.
- Greedy (overlapping): candidate windows of at least floor x L and at most L characters; cost-benefit
  greedy on gain per character under an index budget of budget_factor x document length; gain = newly
  covered spans + newly completed multi-evidence questions + alpha per newly covered unit. Units left
  uncovered are packed into gap chunks (up to L) so every unit stays searchable.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from harness.chunking.locate import chunks_from_slices
from harness.chunking.sentences import LAB_L, SentenceUnit, sentence_units
from harness.chunking.windows import _positive
from harness.data.model import Chunk, Document
from harness.errors import InputError

from harness.config.lab import QES_ALPHA as ALPHA, QES_BUDGET_FACTOR as BUDGET_FACTOR  # noqa: E402
from harness.config.lab import QES_FLOOR as FLOOR, QES_MU as MU  # noqa: E402 (defaults written once, in the config)

Span = tuple[int, int]


def training_spans(items: Iterable[tuple[str, Sequence[Span]]]) -> list[tuple[Span, ...]]:
    """The evidence spans of the training questions only, from (split, spans) pairs."""
    return [tuple(spans) for split, spans in items if split == "train"]


@dataclass(frozen=True)
class UtilityItems:
    """Unit ranges [first, last] of what the utility counts: distinct spans, then multi-evidence hulls."""

    spans: tuple[tuple[int, int], ...]
    questions: tuple[tuple[tuple[int, int], ...], ...]  # per multi-evidence question, its spans' unit ranges

    def all_ranges(self) -> list[tuple[int, int]]:
        return list(self.spans) + [(min(a for a, _ in q), max(b for _, b in q)) for q in self.questions]


def unit_items(units: Sequence[SentenceUnit], training: Sequence[Sequence[Span]]) -> UtilityItems:
    starts = [u.start for u in units]

    def unit_at(pos: int) -> int:
        return max(0, bisect_right(starts, pos) - 1)

    def unit_range(span: Span) -> tuple[int, int]:
        s, e = span
        if not (isinstance(s, int) and isinstance(e, int) and 0 <= s < e):
            raise InputError(f"evidence span must be a non-empty (start, end) pair, got {span!r}")
        return unit_at(s), unit_at(e - 1)

    distinct = sorted({tuple(sp) for q in training for sp in q})
    multi = tuple(
        tuple(unit_range(sp) for sp in sorted(set(map(tuple, q))))
        for q in training
        if len(set(map(tuple, q))) > 1
    )
    return UtilityItems(tuple(unit_range(sp) for sp in distinct), multi)


def _window_chars(units: Sequence[SentenceUnit], j: int, i: int) -> int:
    return units[i - 1].end - units[j].start


def dp_ranges(units: Sequence[SentenceUnit], items: UtilityItems, L: int,
              mu: float = MU) -> tuple[list[tuple[int, int]], float]:
    """The optimal segmentation as [j, i) unit ranges, and its objective value."""
    n = len(units)
    by_first: list[list[int]] = [[] for _ in range(n)]
    for first, last in items.all_ranges():
        by_first[first].append(last)
    best = [0.0] + [float("-inf")] * n
    arg = [0] * (n + 1)
    for i in range(1, n + 1):
        inside = 0
        for j in range(i - 1, -1, -1):
            if _window_chars(units, j, i) > L and j < i - 1:
                break
            inside += sum(1 for last in by_first[j] if last < i)
            value = best[j] + inside - mu
            if value > best[i]:  # strict: among equal optima the shortest last chunk wins
                best[i], arg[i] = value, j
    ranges, i = [], n
    while i > 0:
        ranges.append((arg[i], i))
        i = arg[i]
    return ranges[::-1], best[n]


def greedy_ranges(
    units: Sequence[SentenceUnit],
    items: UtilityItems,
    L: int,
    *,
    doc_chars: int,
    alpha: float = ALPHA,
    floor: float = FLOOR,
    budget_factor: float = BUDGET_FACTOR,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(chosen windows, gap chunks) as [j, i) unit ranges, each list in document order."""
    n = len(units)
    cands = [
        (j, i)
        for j in range(n)
        for i in range(j + 1, n + 1)
        if floor * L <= _window_chars(units, j, i) <= L
    ]
    budget = budget_factor * doc_chars
    unit_done = np.zeros(n, dtype=bool)
    chosen: list[tuple[int, int]] = []
    spent = 0
    if cands:
        # what each candidate would cover, computed once; each round then only counts what is still open
        first = np.array([j for j, _ in cands])
        stop = np.array([i for _, i in cands])
        cost = np.array([_window_chars(units, j, i) for j, i in cands])
        spans_in = _inside(first, stop, [[sp] for sp in items.spans])
        questions_in = _inside(first, stop, items.questions)
        span_open = np.ones(len(items.spans), dtype=np.int64)
        question_open = np.ones(len(items.questions), dtype=np.int64)
        while True:
            open_units = np.concatenate(([0], np.cumsum(~unit_done)))
            # the same sums in the same order as gain = spans + questions + alpha * units (exact integers
            # first), so rates, and the earliest candidate among equal rates, match a plain loop's
            gain = (spans_in @ span_open + questions_in @ question_open).astype(np.float64)
            gain = gain + alpha * (open_units[stop] - open_units[first])
            fits = (spent + cost <= budget) & (gain > 0)
            if not fits.any():
                break
            rate = np.where(fits, gain / cost, -np.inf)
            best = int(np.argmax(rate))  # first maximum: ties keep the earliest candidate
            j, i = cands[best]
            chosen.append((j, i))
            spent += int(cost[best])
            span_open[spans_in[best]] = 0
            question_open[questions_in[best]] = 0
            unit_done[j:i] = True
    gaps: list[tuple[int, int]] = []
    u = 0
    while u < n:
        if unit_done[u]:
            u += 1
            continue
        run_end = u
        while run_end < n and not unit_done[run_end]:
            run_end += 1
        gaps.extend(_pack_range(units, u, run_end, L))
        u = run_end
    return sorted(chosen), gaps


def _inside(first: np.ndarray, stop: np.ndarray, groups: Sequence[Sequence[tuple[int, int]]]) -> np.ndarray:
    """candidates x groups: whether every unit range of a group lies in the candidate's [first, stop)."""
    out = np.ones((len(first), len(groups)), dtype=bool)
    for k, group in enumerate(groups):
        for a, b in group:
            out[:, k] &= (first <= a) & (b < stop)
    return out


def _pack_range(units: Sequence[SentenceUnit], first: int, stop: int, L: int) -> list[tuple[int, int]]:
    """pack_units over units[first:stop], as unit ranges."""
    out, a = [], first
    for k in range(first + 1, stop):
        if units[k].end - units[a].start > L:
            out.append((a, k))
            a = k
    out.append((a, stop))
    return out


def _check(L: int, training: Sequence[Sequence[Span]]) -> None:
    _positive("L", L)
    if isinstance(training, (str, bytes)) or not all(isinstance(q, (tuple, list)) for q in training):
        raise InputError("training must be a sequence of questions, each a sequence of (start, end) spans")


def qes_dp_chunks(
    doc: Document, training: Sequence[Sequence[Span]], *, L: int = LAB_L, mu: float = MU
) -> list[Chunk]:
    _check(L, training)
    units = sentence_units(doc.text)
    ranges, _ = dp_ranges(units, unit_items(units, training), L, mu)
    return chunks_from_slices(doc.doc_id, doc.text, [(units[j].start, units[i - 1].end) for j, i in ranges])


def qes_greedy_chunks(
    doc: Document,
    training: Sequence[Sequence[Span]],
    *,
    L: int = LAB_L,
    alpha: float = ALPHA,
    floor: float = FLOOR,
    budget_factor: float = BUDGET_FACTOR,
) -> list[Chunk]:
    _check(L, training)
    units = sentence_units(doc.text)
    chosen, gaps = greedy_ranges(
        units,
        unit_items(units, training),
        L,
        doc_chars=len(doc.text),
        alpha=alpha,
        floor=floor,
        budget_factor=budget_factor,
    )
    slices = sorted((units[j].start, units[i - 1].end) for j, i in chosen + gaps)
    return chunks_from_slices(doc.doc_id, doc.text, slices)
