"""Standard IR measures on chunk-level relevance: the relevance rule, the harness's ranks as the order, and
ir_measures' numbers cross-checked against pytrec_eval on the same runs."""

from __future__ import annotations

import random
import re

import pytest
import pytrec_eval

from harness.data.model import Chunk, Evidence, Question
from harness.errors import HarnessError
from harness.metrics.ir_measures_scores import chunk_qrels, ir_scores, parse_measure, qrels_lines, relevant


def _chunk(doc: str, start: int, end: int, n: int = 0) -> Chunk:
    return Chunk(doc, f"{doc}#{n}", "x" * (end - start), ((start, end),), "", 1, 1, ())


def _question(qid: str, *spans: tuple[str, int, int]) -> Question:
    evidence = tuple(Evidence(doc, "e", start, end) for doc, start, end in spans)
    return Question(qid, "d", "?", qid, "", tuple(sorted({s[0] for s in spans})), evidence)


def test_a_chunk_is_relevant_when_it_shares_half_of_the_shorter_span():
    assert relevant(_chunk("a", 100, 200), [(120, 130)])  # evidence inside the chunk
    assert relevant(_chunk("a", 100, 200), [(0, 1000)])  # chunk inside a long evidence span
    assert relevant(_chunk("a", 100, 200), [(150, 250)])  # half of each
    assert not relevant(_chunk("a", 100, 200), [(160, 260)])  # 40 of 100 characters
    assert not relevant(_chunk("a", 100, 200), [(200, 300)])  # touching is not overlapping


def test_qrels_hold_each_questions_relevant_chunks_in_its_evidence_documents():
    chunks = [_chunk("a", 0, 100, 0), _chunk("a", 100, 200, 1), _chunk("b", 0, 100, 0)]
    qrels = chunk_qrels([_question("q1", ("a", 50, 150)), _question("q2", ("b", 10, 20)),
                         _question("q3", ("c", 0, 5))], chunks)
    assert qrels == {"q1": {"a#0": 1, "a#1": 1}, "q2": {"b#0": 1}, "q3": {}}
    assert qrels_lines(qrels) == ["q1 0 a#0 1\n", "q1 0 a#1 1\n", "q2 0 b#0 1\n"]


def test_the_harness_ranks_decide_the_order_and_a_question_without_relevant_chunks_scores_zero():
    qrels = {"q1": {"z": 1}, "q2": {}}
    # trec_eval would sort equal scores by chunk id, putting "z" first; the harness ranked "a" first
    scores = ir_scores(["RR@10", "P@1"], qrels, {"q1": ["a", "z"], "q2": ["a"]})
    assert scores.values == {"q1": {"RR@10": 0.5, "P@1": 0.0}, "q2": {"RR@10": 0.0, "P@1": 0.0}}
    assert scores.without_relevant == ("q2",)


@pytest.mark.parametrize("name", ["MRR", "nDCG@0", "P", "R@x", "Judged@10"])
def test_a_measure_outside_the_supported_families_is_refused_by_name(name):
    with pytest.raises(HarnessError, match=re.escape(repr(name))):
        parse_measure(name)


def test_ir_measures_agrees_with_pytrec_eval_on_the_same_runs():
    rng = random.Random(7)
    chunks = [f"c{i:02d}" for i in range(40)]
    qrels = {f"q{q}": {c: 1 for c in rng.sample(chunks, rng.randint(1, 6))} for q in range(25)}
    rankings = {q: rng.sample(chunks, 20) for q in qrels}
    ours = ir_scores(["nDCG@10", "AP", "R@10", "P@10", "RR"], qrels, rankings).values
    run = {q: {c: float(len(r) - i) for i, c in enumerate(r)} for q, r in rankings.items()}  # no ties
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recall.10", "P.10", "recip_rank"})
    for qid, m in theirs.evaluate(run).items():
        assert ours[qid]["nDCG@10"] == pytest.approx(m["ndcg_cut_10"], abs=1e-12)
        assert ours[qid]["AP"] == pytest.approx(m["map"], abs=1e-12)
        assert ours[qid]["R@10"] == pytest.approx(m["recall_10"], abs=1e-12)
        assert ours[qid]["P@10"] == pytest.approx(m["P_10"], abs=1e-12)
        assert ours[qid]["RR"] == pytest.approx(m["recip_rank"], abs=1e-12)
