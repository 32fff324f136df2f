"""QES chunkers: the DP optimum against brute force, the greedy floor, coverage and gap chunks, and
training-only inputs (issue 16)."""

import json
from itertools import combinations
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from chunking_support import doc
from harness.chunking.qes import (
    ALPHA,
    BUDGET_FACTOR,
    FLOOR,
    MU,
    dp_ranges,
    greedy_ranges,
    qes_dp_chunks,
    qes_greedy_chunks,
    training_spans,
    unit_items,
)
from harness.chunking.sentences import SentenceUnit, sentence_units
from harness.data.question_evidence import lab_questions

FIXTURES = Path(__file__).parent / "fixtures" / "lab"


def sentences_text(lengths):
    """Sentences "S<i>xxx." of the given lengths (>= 4), one space apart."""
    return " ".join(f"S{i % 10}" + "x" * (n - 3) + "." for i, n in enumerate(lengths))


def brute_force(units, items, L, mu=MU):
    n = len(units)
    ranges = items.all_ranges()
    best = float("-inf")
    for k in range(n):
        for cuts in combinations(range(1, n), k):
            bounds = [0, *cuts, n]
            chunks = list(zip(bounds, bounds[1:]))
            if any(units[i - 1].end - units[j].start > L and i - j > 1 for j, i in chunks):
                continue
            value = sum(sum(1 for a, b in ranges if j <= a and b < i) - mu for j, i in chunks)
            best = max(best, value)
    return best


@st.composite
def small_documents(draw):
    lengths = draw(st.lists(st.integers(4, 40), min_size=1, max_size=8))
    text = sentences_text(lengths)
    units = sentence_units(text)
    n = len(units)
    questions = []
    for _ in range(draw(st.integers(0, 4))):
        spans = []
        for _ in range(draw(st.integers(1, 3))):
            a = draw(st.integers(0, n - 1))
            b = draw(st.integers(a, min(n - 1, a + 1)))
            spans.append((units[a].start, units[b].end))
        questions.append(tuple(spans))
    return text, units, questions, draw(st.integers(10, 120))


@settings(max_examples=200, deadline=None)
@given(small_documents())
def test_dp_reaches_the_brute_force_optimum(case):
    text, units, questions, L = case
    items = unit_items(units, questions)
    ranges, value = dp_ranges(units, items, L)
    assert abs(value - brute_force(units, items, L)) < 1e-9
    # the returned segmentation is feasible, tiles the units and scores its claimed value
    assert ranges[0][0] == 0 and ranges[-1][1] == len(units)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(units[i - 1].end - units[j].start <= L or i - j == 1 for j, i in ranges)
    rescored = sum(sum(1 for a, b in items.all_ranges() if j <= a and b < i) - MU for j, i in ranges)
    assert abs(rescored - value) < 1e-9


def test_dp_keeps_a_multi_evidence_question_together_when_it_fits():
    text = sentences_text([20] * 4)
    units = sentence_units(text)
    q = ((units[1].start, units[1].end), (units[2].start, units[2].end))
    ranges, value = dp_ranges(units, unit_items(units, [q]), L=45)
    assert ranges == [(0, 1), (1, 3), (3, 4)]
    assert abs(value - (3 - 3 * MU)) < 1e-12  # two spans and the question in one chunk


SIX = sentences_text([20] * 6)  # 125 characters; windows of two sentences are 41


def six_items():
    units = sentence_units(SIX)
    q = ((units[1].start, units[1].end), (units[2].start, units[2].end))
    return units, unit_items(units, [q])


def test_greedy_takes_the_evidence_window_first_and_covers_every_unit_within_budget():
    units, items = six_items()
    chosen, gaps = greedy_ranges(units, items, 50, doc_chars=len(SIX))
    # floor 25 chars: only two-sentence windows qualify; (1, 3) holds both spans and the question,
    # then the 0.02-per-unit term picks windows until 4 x 41 = 164 <= 1.35 x 125 is spent
    assert chosen == [(0, 2), (1, 3), (3, 5), (4, 6)]
    assert gaps == []


def test_greedy_packs_what_the_budget_leaves_uncovered_into_gap_chunks():
    units, items = six_items()
    chosen, gaps = greedy_ranges(units, items, 50, doc_chars=len(SIX), budget_factor=0.5)
    assert chosen == [(1, 3)]  # 41 of 62.5 characters; no second window fits
    assert gaps == [(0, 1), (3, 5), (5, 6)]


def test_greedy_windows_respect_the_half_L_floor():
    units, items = six_items()
    chosen, _ = greedy_ranges(units, items, 100, doc_chars=len(SIX))
    assert chosen and all(50 <= units[i - 1].end - units[j].start <= 100 for j, i in chosen)
    # no window reaches the floor: everything becomes gap chunks
    chosen, gaps = greedy_ranges(units, items, 50, doc_chars=len(SIX), floor=0.9)
    assert chosen == [] and gaps == [(0, 2), (2, 4), (4, 6)]


def fixture_items():
    text = (FIXTURES / "handbook.md").read_text(encoding="utf-8")
    return text, json.loads((FIXTURES / "qe.json").read_text(encoding="utf-8"))


def qes_chunk_sets(text, items):
    questions = lab_questions(text, items, doc_id="h")
    training = training_spans((q.split, q.spans) for q in questions)
    d = doc(text, "h")
    return [[c.spans for c in qes_dp_chunks(d, training)], [c.spans for c in qes_greedy_chunks(d, training)]]


def test_held_out_questions_cannot_change_qes_chunk_sets():
    text, items = fixture_items()
    before = qes_chunk_sets(text, items)
    changed = [dict(q) for q in items if q["split"] == "train"]
    changed.append(
        {
            "question": "x",
            "evidence": ["Quiet hours are the period", "It includes the soldering benches"],
            "split": "held-out",
        }
    )
    assert qes_chunk_sets(text, changed) == before
    # the same change made to the training split does move boundaries (the check can fail)
    changed[-1] = dict(changed[-1], split="train")
    assert qes_chunk_sets(text, changed) != before


def test_fixture_qes_chunks_are_exact_slices_and_cover_every_unit():
    text, items = fixture_items()
    questions = lab_questions(text, items, doc_id="h")
    training = training_spans((q.split, q.spans) for q in questions)
    for chunks in (qes_dp_chunks(doc(text), training), qes_greedy_chunks(doc(text), training)):
        assert all(c.text == text[s:e] for c in chunks for s, e in c.spans)
        for s, e in sentence_units(text):
            assert any(cs <= s and e <= ce for c in chunks for cs, ce in c.spans)


def _greedy_by_plain_loops(
    units, items, L, *, doc_chars, alpha=ALPHA, floor=FLOOR, budget_factor=BUDGET_FACTOR
):
    """The greedy of the issue written as plain loops (every gain recounted each round): the vectorised
    `greedy_ranges` must choose the same windows in the same order."""
    n = len(units)
    width = lambda j, i: units[i - 1].end - units[j].start  # noqa: E731
    cands = [(j, i) for j in range(n) for i in range(j + 1, n + 1) if floor * L <= width(j, i) <= L]
    span_done, q_done, unit_done = [False] * len(items.spans), [False] * len(items.questions), [False] * n
    chosen, spent = [], 0
    while True:
        best, best_rate = None, 0.0
        for j, i in cands:
            if spent + width(j, i) > budget_factor * doc_chars:
                continue
            gain = sum(1 for k, (a, b) in enumerate(items.spans) if not span_done[k] and j <= a and b < i)
            gain += sum(
                1
                for k, q in enumerate(items.questions)
                if not q_done[k] and all(j <= a and b < i for a, b in q)
            )
            gain += alpha * sum(1 for u in range(j, i) if not unit_done[u])
            if gain > 0 and gain / width(j, i) > best_rate:
                best, best_rate = (j, i), gain / width(j, i)
        if best is None:
            return chosen
        j, i = best
        chosen.append(best)
        spent += width(j, i)
        span_done = [d or (j <= a and b < i) for d, (a, b) in zip(span_done, items.spans)]
        q_done = [d or all(j <= a and b < i for a, b in q) for d, q in zip(q_done, items.questions)]
        unit_done[j:i] = [True] * (i - j)


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(5, 60), min_size=1, max_size=14),
       questions=st.lists(st.lists(st.integers(0, 13), min_size=1, max_size=3), max_size=6),
       L=st.integers(40, 200), equal=st.booleans())
def test_greedy_matches_plain_loops(lengths, questions, L, equal):
    if equal:  # equal sentences make equal rates common: the earliest candidate must win the tie
        lengths = [20] * len(lengths)
    starts = [sum(lengths[:k]) for k in range(len(lengths))]
    units = [SentenceUnit(s, s + w) for s, w in zip(starts, lengths)]
    n = len(units)
    spans = [tuple((units[k % n].start, units[k % n].end) for k in q) for q in questions]
    items = unit_items(units, spans)
    doc_chars = units[-1].end
    chosen, _ = greedy_ranges(units, items, L, doc_chars=doc_chars)
    assert chosen == sorted(_greedy_by_plain_loops(units, items, L, doc_chars=doc_chars))
