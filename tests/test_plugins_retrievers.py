"""Retrievers from outside the harness (docs/plugins.md): `type: python` (a function scoring or ranking a
scope's chunks) and `type: run-file` (a TREC run per arm, checked against the arm's chunks and the selected
questions). Both give full rankings, so they fuse in RRF hybrids and can be reranked."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.model import Evidence, Question
from harness.errors import HarnessError
from harness.retrieval.base import search_batch
from harness.retrieval.registry import RetrieverContext

from retrieval_support import chunks_of

CHUNKS = chunks_of(["the harbour keeps boats", "the glacier keeps ice", "the orchard keeps apples",
                    "the harbour keeps nets"])
IDS = [c.chunk_id for c in CHUNKS]
DOC = CHUNKS[0].doc_id


def question(qid: str, query: str, scope=(DOC,)) -> Question:
    return Question(qid, "d", query, qid, "", tuple(scope), (Evidence(DOC, "boats"),))


QUESTIONS = [question("q1", "harbour boats"), question("q2", "glacier ice")]


def context(tmp_path: Path, retrievers: dict) -> RetrieverContext:
    return RetrieverContext(tmp_path / "cache", retrievers, root=tmp_path)


def order(ranking) -> list[int]:
    return ranking.order.tolist()


def _plugin(root: Path, body: str) -> None:
    (root / "plugins").mkdir(exist_ok=True)
    (root / "plugins" / "rank.py").write_text(body, encoding="utf-8")


PLUGIN = '''
def overlap(query, chunks, weight=1.0):
    words = set(query.split())
    return [weight * len(words & set(c.indexed_text.split())) for c in chunks]

def by_ids(query, chunks):
    return [chunks[2].chunk_id, chunks[0].chunk_id]

def unknown(query, chunks):
    return ["nope"]

def short(query, chunks):
    return [1.0]
'''


def test_a_python_retriever_scores_or_ranks_a_scope(tmp_path):
    _plugin(tmp_path, PLUGIN)
    ctx = context(
        tmp_path,
        {
            "words": {"type": "python", "callable": "rank:overlap", "params": {"weight": 2.0}},
            "ids": {"type": "python", "callable": "rank:by_ids"},
        },
    )
    chunks = [c.__class__(**{**c.__dict__, "indexed_text": c.text}) for c in CHUNKS]
    ranking = ctx.get("words").index("scope", chunks).search("harbour nets")
    assert order(ranking) == [3, 0, 1, 2] and ranking.scores.tolist()[:2] == [4.0, 2.0]
    # chunk ids best first; the chunks it leaves out follow in corpus order
    assert order(ctx.get("ids").index("scope", chunks).search("anything")) == [2, 0, 1, 3]
    assert ctx.get("words").describe() == {
        "type": "python",
        "callable": "rank:overlap",
        "params": {"weight": 2.0},
    }


@pytest.mark.parametrize("function, message", [
    ("unknown", "ranked 1 chunk id.s. not in the scope .first: nope."),
    ("short", r"returned 1 values; expected one score \(a number\) per chunk \(4\)"),
])
def test_a_python_retriever_answer_of_another_shape_is_refused(tmp_path, function, message):
    _plugin(tmp_path, PLUGIN)
    ctx = context(tmp_path, {"r": {"type": "python", "callable": f"rank:{function}"}})
    expected = r"retriever `r` \(type python\): on scope s, rank:" + function + " " + message
    with pytest.raises(HarnessError, match=expected):
        ctx.get("r").index("s", CHUNKS).search("q")


def _run(tmp_path: Path, lines: list[str], name: str = "S.trec") -> None:
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_context(tmp_path: Path, **extra) -> RetrieverContext:
    ctx = context(tmp_path, {"ext": {"type": "run-file", "runs": {"S": "runs/S.trec"}}, **extra})
    ctx.rank_arm("d", "S", QUESTIONS, CHUNKS)
    return ctx


def test_a_run_file_ranks_each_question_by_its_lines(tmp_path):
    _run(tmp_path, [f"q1 Q0 {IDS[3]} 1 9.0 t", f"q1 Q0 {IDS[0]} 2 8.0 t",
                    f"q2 Q0 {IDS[1]} 1 3.5 t", "q9 Q0 unknown-but-not-selected 1 1.0 t"])
    ctx = run_context(tmp_path)
    index = ctx.get("ext").index("scope", CHUNKS)
    first, second = index.search("harbour boats"), index.search("glacier ice")
    assert order(first) == [3, 0, 1, 2] and first.scores.tolist() == [9.0, 8.0, 7.0, 7.0]
    assert order(second) == [1, 0, 2, 3]
    with pytest.raises(HarnessError, match="no question of the run asks 'other' in scope scope"):
        index.search("other")


def test_a_run_file_is_refused_with_every_problem_counted_and_its_first_lines_named(tmp_path):
    _run(tmp_path, [f"q1 Q0 {IDS[0]} 1 9.0 t", f"q1 Q0 {IDS[0]} 2 8.0 t", "q1 Q0 other#0000-00000000 3 7.0 t",
                    "q1 Q0 elsewhere#0001-abcdef12 4 6.0 t", f"q1 Q0 {IDS[2]} 5 9.5 t"])
    ctx = run_context(tmp_path)
    with pytest.raises(HarnessError) as refused:
        ctx.get("ext").index("scope", CHUNKS)
    message = str(refused.value)
    assert (
        f"{tmp_path / 'runs' / 'S.trec'}: retriever `ext` (type run-file), arm S on dataset d: refused:"
        in message
    )
    assert "1 duplicate lines (line 2 repeats line 1)" in message
    assert "2 unknown chunk ids (line 3: other#0000-00000000 is no chunk of arm S; line 4:" in message
    assert "1 questions without a line (q2)" in message
    assert "1 scores rising down the ranks (line 5: rank 5 scores 9.5, above line 1's 9.0)" in message


def test_a_run_line_outside_the_question_scope_is_refused(tmp_path):
    other = chunks_of(["another document"], doc_id="t/other.md")
    _run(tmp_path, [f"q1 Q0 {other[0].chunk_id} 1 1.0 t", f"q2 Q0 {IDS[1]} 1 1.0 t"])
    ctx = context(tmp_path, {"ext": {"type": "run-file", "runs": {"S": "runs/S.trec"}}})
    ctx.rank_arm("d", "S", QUESTIONS, CHUNKS + other)
    with pytest.raises(
        HarnessError, match=r"1 chunks outside the question's scope \(line 1: t/other.md#0000"
    ):
        ctx.get("ext").index("scope", CHUNKS)


def test_a_run_file_needs_the_arm_score_ranks_and_a_run_for_it(tmp_path):
    ctx = context(tmp_path, {"ext": {"type": "run-file", "runs": {"S": "runs/S.trec"}}})
    with pytest.raises(
        HarnessError, match=r"retriever `ext` \(type run-file\) ranks only the arm `harness score`"
    ):
        ctx.get("ext").index("scope", CHUNKS)
    ctx.rank_arm("d", "F512c", QUESTIONS, CHUNKS)
    with pytest.raises(HarnessError, match="has no run file for arm F512c"):
        ctx.get("ext").index("scope", CHUNKS)
    ctx.rank_arm("d", "S", QUESTIONS, CHUNKS)
    with pytest.raises(HarnessError, match="run file not found"):
        ctx.get("ext").index("scope", CHUNKS)


def test_the_schema_gives_a_run_file_the_arms_it_has_runs_for(tmp_path):
    from harness.config.retrievers import retriever_settings

    cfg = retriever_settings("ext", {"type": "run-file", "runs": {"S": "a.trec", "P": "b.trec"}})
    assert cfg.arms == ("S", "P")
    with pytest.raises(HarnessError, match=r"`retrievers.ext.arms` names arm `F512c`, which has no run file"):
        retriever_settings("ext", {"type": "run-file", "runs": {"S": "a.trec"}, "arms": ["F512c"]})


def test_run_files_and_functions_fuse_and_rerank(tmp_path):
    _plugin(tmp_path, PLUGIN)
    _run(tmp_path, [f"q1 Q0 {IDS[2]} 1 2.0 t", f"q2 Q0 {IDS[1]} 1 2.0 t"])
    ctx = run_context(tmp_path, words={"type": "python", "callable": "rank:overlap"},
                      fused={"type": "rrf", "of": ["ext", "words"]},
                      reranked={"type": "rerank", "first_stage": "ext", "backend": "simulated", "model": "m",
                                "depth": 2})
    chunks = [c.__class__(**{**c.__dict__, "indexed_text": c.text}) for c in CHUNKS]
    fused = search_batch(ctx.get("fused").index("scope", chunks), ["harbour boats", "glacier ice"])
    assert order(fused[0])[:2] == [0, 2]  # rank 1 of the run and rank 1 of the words tie, by position
    assert order(fused[1])[0] == 1
    reranked = ctx.get("reranked").index("scope", chunks).search("harbour boats")
    assert sorted(order(reranked)[:2]) == [0, 2]  # the run's first two, rescored


def test_the_rehearsal_twin_ranks_a_run_file_retriever_with_its_stand_in(tmp_path):
    from harness.rehearsal.twin import simulated_retriever

    entry = {"type": "run-file", "runs": {"S": "runs/S.trec"}}
    for real_encoders in (False, True):  # the twin's questions are in no run, whatever encoders it keeps
        twin = simulated_retriever(entry, real_encoders=real_encoders)
        assert twin == {**entry, "backend": "simulated", "model": "run file"}
    ctx = context(tmp_path, {"ext": twin})  # no run file, no ranked arm: BM25 ranks
    assert order(ctx.get("ext").index("scope", CHUNKS).search("glacier ice"))[0] == 1
