"""Standard IR measures (nDCG@k, RR@k, AP, R@k, P@k) on chunk-level relevance, computed by ir_measures.

Relevance (docs/design.md, Evidence metrics): a chunk is relevant to a question, grade 1, when it overlaps
one of the question's located gold evidence spans in the same document by at least MIN_SHARE of the shorter
of the two (in characters): a chunk inside a long evidence span, an evidence span inside a long chunk, and
each half of an evidence span cut in two all count. Every located evidence span therefore has a relevant
chunk wherever the chunks cover the source text.

The harness's ranks are what is evaluated: each chunk is handed to ir_measures with the score -rank, so
trec_eval's own tie-break (by chunk id) never reorders chunks the harness ranked apart. A question with no
relevant chunk scores 0 on every measure, as trec_eval -c counts it, and is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ir_measures

from harness.config.ir_measures import ir_measure_problem
from harness.data.model import Chunk, Question
from harness.errors import HarnessError

MIN_SHARE = 0.5


@dataclass(frozen=True)
class IrScores:
    values: dict[str, dict[str, float]]  # qid -> measure name -> value in [0, 1]
    without_relevant: tuple[str, ...]  # qids with no relevant chunk (every measure 0), sorted


def parse_measure(name: str) -> Any:
    """An ir_measures measure from a configured name (harness.config.ir_measures says which are allowed)."""
    problem = ir_measure_problem(name)
    if problem is not None:
        raise HarnessError(f"IR measure {problem}")
    return ir_measures.parse_measure(name)


def relevant(chunk: Chunk, gold: Iterable[tuple[int, int]]) -> bool:
    for g_start, g_end in gold:
        for c_start, c_end in chunk.spans:
            shared = min(c_end, g_end) - max(c_start, g_start)
            if shared > 0 and shared >= MIN_SHARE * min(c_end - c_start, g_end - g_start):
                return True
    return False


def chunks_by_doc(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """A scope's chunks grouped by document, in their order: built once per scope, read per question."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    return by_doc


def question_qrels(question: Question, by_doc: Mapping[str, Sequence[Chunk]]) -> dict[str, int]:
    """{chunk_id: 1} for every chunk of `by_doc` (chunks_by_doc) relevant to the located evidence."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for e in question.evidence:
        if e.located and e.end is not None and e.start is not None and e.end > e.start:
            spans.setdefault(e.doc_id, []).append((e.start, e.end))
    return {c.chunk_id: 1 for doc, gold in sorted(spans.items()) for c in by_doc.get(doc, [])
            if relevant(c, gold)}


def chunk_qrels(questions: Sequence[Question], chunks: Sequence[Chunk]) -> dict[str, dict[str, int]]:
    """qid -> {chunk_id: 1} for every chunk of the question's scope relevant to its located evidence."""
    by_doc = chunks_by_doc(chunks)
    return {q.qid: question_qrels(q, by_doc) for q in questions}


def ir_scores(names: Sequence[str], qrels: Mapping[str, Mapping[str, int]],
              rankings: Mapping[str, Sequence[str]]) -> IrScores:
    """Every measure of `names` for every question of `qrels`, from its ranked chunk ids (best first)."""
    measures = {parse_measure(n): n for n in names}
    judged = {q: dict(r) for q, r in qrels.items() if r}
    run = {q: {c: float(-rank) for rank, c in enumerate(rankings.get(q, ()), 1)} for q in judged}
    values = {q: {n: 0.0 for n in names} for q in sorted(qrels)}
    for m in ir_measures.iter_calc(list(measures), judged, {q: r for q, r in run.items() if r}):
        values[m.query_id][measures[m.measure]] = float(m.value)
    return IrScores(values, tuple(sorted(q for q, r in qrels.items() if not r)))


def qrels_lines(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """TREC qrels lines (`qid 0 chunk_id grade`), sorted, for results/qrels/ and any other evaluator."""
    return [f"{q} 0 {c} {g}\n" for q in sorted(qrels) for c, g in sorted(qrels[q].items())]
