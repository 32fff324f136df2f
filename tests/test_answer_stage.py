"""The answer stage (issue 14): the reader's exact-B source context, judge parsing through a fake backend,
the acceptance controls and exploratory labelling, resume after kill -9, and the judge-family rule."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.data.common import LoadedDataset
from harness.data.model import Chunk, Evidence, Question
from harness.errors import HarnessError
from harness.files import read_json
from harness.llm.base import Backend, Completion
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache
from harness.metrics.nuggets import score_verdicts
from harness.pipeline.answer import _controls, _write_acceptance, check_judge_family, model_family
from harness.pipeline.reading import UNIT_SEPARATOR, ask_reader, judge_nuggets, reader_context
from harness.stats.families import judge_passed
from harness.stats.io import load_judge_rates
from harness.plan.model import Acceptance
from harness.tokens import cl100k

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "prompts"
sys.path.insert(0, str(ROOT / "tests"))
from llm_study import kill_after_lines, make_study  # noqa: E402
from harness.grid.paths import judges_dir, per_question_path, results_dir  # noqa: E402


class ScriptedJudge(Backend):
    """Replies from a function of the prompt; counts calls."""

    name = "fake"

    def __init__(self, reply, delay_s: float = 0.0):
        super().__init__("fake-model", {"temperature": 0.0})
        self.reply, self.delay_s, self.prompts = reply, delay_s, []

    @property
    def digest(self) -> str:
        return "d0"

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        text = prompt[-1]["content"] if not isinstance(prompt, str) else prompt
        self.prompts.append(text)
        time.sleep(self.delay_s)
        return Completion(self.reply(text), 10, 3, self.delay_s, 0.0, "d0")


def _chunk(i: int, text: str) -> Chunk:
    return Chunk("d", f"d#{i:04d}", text, ((0, len(text)),), "Sec", 1, 1, ("paragraph",),
                 indexed_text=f"RENDERED PREFIX {i}\n\n{text}")


def _session(tmp_path, backend, name="g.jsonl") -> LlmSession:
    return LlmSession(backend, GenerationCache(tmp_path / name), SpendLedger("reader", None))


# --- the reader's context ---


def test_reader_context_is_exactly_b_source_tokens_cut_at_a_token_boundary():
    enc = cl100k()
    first = "Tide gauges drift slowly. " * 5
    second = "The benchmark moves with the pier, so levelling misses it entirely. " * 6
    n1, n2 = len(enc.encode_ordinary(first)), len(enc.encode_ordinary(second))
    budget = n1 + 17
    assert n2 > 17
    ctx = reader_context(
        [_chunk(0, first), _chunk(1, second), _chunk(2, "never reached")], budget, TokenCache()
    )
    assert ctx.chunk_ids == ("d#0000", "d#0001") and ctx.cut_tokens == 17 and ctx.tokens == budget
    kept = enc.decode(enc.encode_ordinary(second)[:17])
    assert ctx.text == first + UNIT_SEPARATOR + kept
    assert len(enc.encode_ordinary(first)) + len(enc.encode_ordinary(kept)) == budget
    assert "RENDERED" not in ctx.text  # indexed (rendered) text never reaches the reader
    record = ctx.to_json()
    assert record["cut"] == {"chunk_id": "d#0001", "tokens": 17} and len(record["context_sha256"]) == 64


def test_reader_context_takes_whole_chunks_when_they_fit_and_records_no_cut():
    ctx = reader_context([_chunk(0, "short one"), _chunk(1, "short two")], 512, TokenCache())
    assert ctx.text == "short one" + UNIT_SEPARATOR + "short two" and ctx.cut_tokens is None
    assert ctx.to_json()["cut"] is None
    assert reader_context([], 512, TokenCache()).chunk_ids == ()


def test_reader_answer_goes_through_the_cache_and_a_failed_answer_is_flagged(tmp_path):
    template = PromptTemplate.load(PROMPTS, "reader.txt")
    ctx = reader_context([_chunk(0, "The answer is nine millimetres.")], 512, TokenCache())
    good = ScriptedJudge(lambda p: '{"answer": " 9 mm "}')
    session = _session(tmp_path, good)
    reply = ask_reader(session, template, "How much?", ctx, seeds=[0, 1])
    assert (reply.answer, reply.failed, reply.attempts) == ("9 mm", False, 1)
    assert "The answer is nine millimetres." in good.prompts[0] and "RENDERED" not in good.prompts[0]
    assert ask_reader(session, template, "How much?", ctx, seeds=[0, 1]).answer == "9 mm"
    assert len(good.prompts) == 1  # the second ask was a cache hit
    bad = ScriptedJudge(lambda p: "no json")
    failed = ask_reader(_session(tmp_path, bad, "h.jsonl"), template, "How much?", ctx, seeds=[0, 1, 2])
    assert (failed.answer, failed.failed, failed.attempts) == ("", True, 3)


# --- the judge ---


def test_judge_parses_valid_partial_and_unparseable_verdicts(tmp_path):
    replies = {"n-support": '{"verdict": "support"}', "n-partial": '{"verdict": "Partial_Support "}',
               "n-broken": "support, I think", "n-none": '{"verdict": "not_support"}'}

    def reply(prompt):
        return next(v for k, v in replies.items() if f"Required fact: {k}\n" in prompt)

    judge = ScriptedJudge(reply)
    verdicts = judge_nuggets(_session(tmp_path, judge), PromptTemplate.load(PROMPTS, "judge_nugget.txt"),
                             "q?", list(replies), "an answer", seed=0)
    assert [v.verdict for v in verdicts] == ["support", "partial_support", "unparseable", "not_support"]
    score = score_verdicts([v.verdict for v in verdicts])
    assert (score.supported, score.partial, score.unparseable, score.strict_recall) == (1, 1, 1, 0.25)


def _question(qid: str, nuggets: tuple[str, ...], reference: str) -> Question:
    return Question(qid, "docs", f"question {qid}", qid, "ledger", ("ledger/a.md",),
                    (Evidence("ledger/a.md", "x", 0, 1),), (reference,), nuggets, reference)


def _dataset(questions) -> LoadedDataset:
    return LoadedDataset("docs", "freshstack", (), tuple(questions), {}, {})


def _fact_judge(prompt: str) -> str:
    """Supports a nugget exactly when the answer contains it word for word."""
    nugget = prompt.split("Required fact: ", 1)[1].split("\n", 1)[0]
    answer = prompt.split("Answer to check:\n=====\n", 1)[1].split("\n=====", 1)[0]
    return '{"verdict": "%s"}' % ("support" if nugget in answer else "not_support")


def test_controls_pass_with_a_discerning_judge_and_fail_with_a_yes_man(tmp_path):
    study = make_study(tmp_path / "s", {}, {"S": {"kind": "S"}})
    questions = [
        _question(f"q{i}", (f"fact {i}a", f"fact {i}b"), f"fact {i}a and fact {i}b.") for i in range(4)
    ]
    questions.append(_question("q9", ("fact 9a",), ""))  # no reference answer: not in the controls
    template = PromptTemplate.load(PROMPTS, "judge_nugget.txt")
    acceptance = Acceptance("nugget-judge", 0.85, 0.05)

    controls = {"positive": {}, "negative": {}}
    rows = _controls(
        _dataset(questions),
        _session(tmp_path, ScriptedJudge(_fact_judge)),
        template,
        7,
        controls,
        judge_seed=0,
    )
    assert len(rows) == 4 * 2 * 2 and {r["control"] for r in rows} == {"positive", "negative"}
    assert all(r["answer_of"] != r["qid"] for r in rows if r["control"] == "negative")  # a derangement
    entry = _write_acceptance(study, "nugget-judge", controls)
    assert (entry["positive"], entry["negative"], entry["positive_questions"], entry["reasons"]) == (
        1.0,
        0.0,
        4,
        [],
    )
    rates = load_judge_rates(study)
    assert not judge_passed(acceptance, rates["nugget-judge"])  # no human spot check on file yet
    rates["nugget-judge"]["spot_check"] = {"kappa": 0.8, "passed": True}
    assert judge_passed(acceptance, rates["nugget-judge"])

    yes = {"positive": {}, "negative": {}}
    _controls(
        _dataset(questions),
        _session(tmp_path, ScriptedJudge(lambda p: '{"verdict": "support"}'), "y.jsonl"),
        template,
        7,
        yes,
        judge_seed=0,
    )
    entry = _write_acceptance(study, "nugget-judge", yes)
    assert entry["negative"] == 1.0 and entry["reasons"] == [
        "negative control failed: mean strict recall 1.000, required <= 0.05 (4 questions)"]
    rates = read_json(judges_dir(study) / "acceptance.json")["nugget-judge"] | {
        "spot_check": {"passed": True}
    }
    assert not judge_passed(acceptance, rates)  # a failed control keeps nugget recall exploratory


def test_controls_are_not_computable_without_reference_answers(tmp_path):
    study = make_study(tmp_path / "s", {}, {"S": {"kind": "S"}})
    controls = {"positive": {}, "negative": {}}
    rows = _controls(_dataset([_question("q1", ("a",), "")]), _session(tmp_path, ScriptedJudge(_fact_judge)),
                     PromptTemplate.load(PROMPTS, "judge_nugget.txt"), 7, controls, judge_seed=0)
    entry = _write_acceptance(study, "nugget-judge", controls)
    assert rows == [] and entry["positive"] is None and entry["negative"] is None
    assert entry["reasons"] == ["positive control not computable: no reference answers",
                                "negative control not computable: no reference answers"]
    assert not judge_passed(Acceptance("nugget-judge", 0.85, 0.05), load_judge_rates(study)["nugget-judge"])


# --- resume after kill -9 ---

ANSWER_SCRIPT = """
import sys, time
sys.path[:0] = [{root!r}, {tests!r}]
from test_answer_stage import ScriptedJudge, _chunk
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache
from harness.pipeline.reading import ask_reader, reader_context
session = LlmSession(ScriptedJudge(lambda p: '{{"answer": "x"}}', delay_s=0.05),
                     GenerationCache({cache!r}), SpendLedger("reader", None))
template = PromptTemplate.load({prompts!r}, "reader.txt")
for i in range(30):
    context = reader_context([_chunk(i, f"text {{i}}")], 512, TokenCache())
    ask_reader(session, template, f"question {{i}}?", context, seeds=[0])
print("finished")
"""


def test_killed_answering_resumes_without_repeating_a_completed_call(tmp_path):
    cache_file = tmp_path / "g.jsonl"
    script = tmp_path / "answer.py"
    script.write_text(textwrap.dedent(ANSWER_SCRIPT).format(root=str(ROOT), tests=str(ROOT / "tests"),
                                                            cache=str(cache_file), prompts=str(PROMPTS)))
    raw = kill_after_lines(script, cache_file, 8)
    done = raw[: raw.rfind(b"\n") + 1].decode().splitlines()
    assert 8 <= len(done) < 30

    backend = ScriptedJudge(lambda p: '{"answer": "x"}')
    session = LlmSession(backend, GenerationCache(cache_file), SpendLedger("reader", None))
    template = PromptTemplate.load(PROMPTS, "reader.txt")
    for i in range(30):
        ask_reader(
            session,
            template,
            f"question {i}?",
            reader_context([_chunk(i, f"text {i}")], 512, TokenCache()),
            seeds=[0],
        )
    assert len(backend.prompts) == 30 - len(done)  # only the calls the kill left unanswered
    asked = {p.split("Question: ", 1)[1].split("\n", 1)[0] for p in backend.prompts}
    assert len(asked) == len(backend.prompts)
    totals = session.ledger.totals()
    assert (totals.cache_hits, totals.fresh_calls) == (len(done), 30 - len(done))


# --- the judge-family rule ---


def _family_study(tmp_path, judge_name: str, require: bool):
    models = {"qwen7b": {"backend": "ollama", "name": "qwen2.5:7b"},
              "judge": {"backend": "ollama", "name": judge_name}}
    study = make_study(tmp_path, models, {"E": {"kind": "E", "model": "qwen7b"}})
    config = study.config_path
    import yaml

    raw = yaml.safe_load(config.read_text())
    raw["judge"] = {"model": "judge", "require_distinct_family": require}
    raw["reader"] = {"model": "qwen7b"}
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    from harness.study import Study

    return Study.at(study.root)


def test_judge_of_the_indexing_models_family_is_refused_when_required(tmp_path):
    study = _family_study(tmp_path / "a", "qwen2.5:14b", True)
    with pytest.raises(
        HarnessError,
        match=r"require_distinct_family` is true, but the judge model 'judge' is of "
        r"family 'qwen' like the reader model 'qwen7b', arm 'E'",
    ):
        check_judge_family(study)
    check_judge_family(_family_study(tmp_path / "b", "qwen2.5:14b", False))  # not required: allowed
    check_judge_family(_family_study(tmp_path / "c", "gemma3:12b", True))  # another family: allowed
    assert [model_family(study.models[m]) for m in ("qwen7b", "judge")] == ["qwen", "qwen"]


def test_answer_sections_must_name_configured_entries(tmp_path):
    study = make_study(tmp_path, {}, {"S": {"kind": "S"}})
    import yaml

    raw = yaml.safe_load(study.config_path.read_text())
    raw["reader"] = {"model": "nowhere", "cells": [{"dataset": "papers", "retriever": "bm25", "arms": ["S"]}]}
    study.config_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    from harness.study import Study

    with pytest.raises(
        HarnessError, match=r"`reader.model` is 'nowhere', which is not an entry of `models:`"
    ):
        Study.at(study.root).config


# --- answer rows, the question sample and the spot check ---


def test_the_table_holds_only_answer_rows_of_cells_answered_under_the_current_freeze(tmp_path):
    """Assembly takes an answer cell's part only when its marker names the current freeze (a stale answer is
    left out and said so), and status calls a cell answered only once the table holds its rows."""
    from harness.grid.cells import cell_of
    from harness.grid.paths import answer_part_path, answers_path, per_question_dir, per_question_sidecar
    from harness.grid.states import ANSWERED, MISSING, STALE, answer_state, mark_answer_done, mark_cell_done
    from harness.pipeline.parts import write_part
    from harness.grid.results import ResultRow, read_per_question
    from harness.pipeline.table import assemble_per_question
    from pipeline_support import edit_config

    study = make_study(tmp_path / "s", {}, {"S": {"kind": "S"}, "T": {"kind": "S+T"}})
    edit_config(
        study.root,
        lambda cfg: cfg.update(
            {
                "models": {"fake": {"backend": "ollama", "name": "fake-model"}},
                "reader": {
                    "model": "fake",
                    "cells": [{"dataset": "papers", "retriever": "bm25", "arms": ["S", "T"]}],
                },
            }
        ),
    )
    from harness.study import Study

    study = Study.at(study.root)
    per_q = per_question_dir(study)
    for arm in ("S", "T"):
        write_part(
            per_q, "papers", arm, "bm25", [ResultRow("papers", arm, "bm25", "q1", "c1", "", "rec@512t", 0.5)]
        )
        cell = cell_of(study, "papers", arm, "bm25")
        mark_cell_done(study, cell, frozen_hash="f" * 64, counts={"questions": 1})
        write_part(results_dir(study) / "answers", "papers", arm, "bm25",
                   [ResultRow("papers", arm, "bm25", "q1", "c1", "", "answer_f1@512t", 0.25)])
        answers_path(study, cell).write_text("{}\n")
        mark_answer_done(study, cell, frozen_hash="f" * 64 if arm == "S" else "0" * 64, counts={})
    assert (
        answer_part_path(study, cell_of(study, "papers", "S", "bm25"))
        == results_dir(study) / "answers/papers/S__bm25.parquet"
    )
    said = []
    assert assemble_per_question(study, "papers", "f" * 64, log=said.append) == 3
    table = read_per_question(per_question_path(study, "papers"))
    assert sorted(zip(table.arm, table.metric)) == [
        ("S", "answer_f1@512t"),
        ("S", "rec@512t"),
        ("T", "rec@512t"),
    ]
    assert said == [
        "papers: 1 answer cell(s) answered under another freeze left out of the per-question table "
        "until `harness answer` reruns: papers/T/bm25"
    ]
    assert read_json(per_question_sidecar(study, "papers"))["answer_cells"] == ["papers/S/bm25"]
    assert answer_state(study, cell_of(study, "papers", "S", "bm25"), "f" * 64) == ANSWERED
    assert answer_state(study, cell_of(study, "papers", "T", "bm25"), "f" * 64) == STALE
    answer_part_path(study, cell_of(study, "papers", "S", "bm25")).unlink()  # the rows are gone: not answered
    assert answer_state(study, cell_of(study, "papers", "S", "bm25"), "f" * 64) == MISSING


def test_question_sample_is_seeded_and_all_keeps_everything():
    from harness.pipeline.answer import sample_questions

    data = _dataset([_question(f"q{i}", ("a",), "a") for i in range(10)])
    first = [q.qid for q in sample_questions(data, 4, 3).questions]
    assert len(first) == 4 and first == [q.qid for q in sample_questions(data, 4, 3).questions]
    assert first != [q.qid for q in sample_questions(data, 4, 4).questions]
    assert sample_questions(data, "all", 3) is data and sample_questions(data, 10, 3) is data


def test_judge_sample_is_seeded_and_agreement_is_recorded_for_stats(tmp_path):
    import csv as csv_module

    from harness.metrics.judge_agreement import read_spot_check
    from harness.pipeline.judge_sample import record_agreement, sample_csv, verdict_rows

    study = make_study(tmp_path / "s", {}, {"S": {"kind": "S"}})
    folder = judges_dir(study) / "docs"
    folder.mkdir(parents=True)
    verdicts = ["support", "not_support", "partial_support", "support", "not_support", "support"]
    (folder / "S__bm25.jsonl").write_text("".join(
        json.dumps({"qid": f"q{i}", "nugget": 0, "text": f"n{i}", "answer": f"a{i}", "verdict": v}) + "\n"
        for i, v in enumerate(verdicts)))
    rows = verdict_rows(study)
    assert [r["arm"] for r in rows] == ["S"] * 6 and rows[0]["retriever"] == "bm25"
    text = sample_csv(rows, n=4, seed=1)
    assert text == sample_csv(rows, n=4, seed=1) and text.count("\n") == 5
    labelled = list(csv_module.DictReader(text.splitlines()))
    for row in labelled:  # a human who agrees everywhere but on one row
        row["human_verdict"] = row["judge_verdict"]
    labelled[0]["human_verdict"] = "support" if labelled[0]["judge_verdict"] != "support" else "not_support"
    path = tmp_path / "labelled.csv"
    with path.open("w", newline="") as handle:
        writer = csv_module.DictWriter(handle, fieldnames=list(labelled[0]))
        writer.writeheader()
        writer.writerows(labelled)
    (judges_dir(study) / "acceptance.json").write_text(
        json.dumps({"nugget-judge": {"positive": 0.9, "negative": 0.0}})
    )
    result = read_spot_check(path)
    record_agreement(study, result, path)
    entry = load_judge_rates(study)["nugget-judge"]
    assert (
        entry["spot_check"]["kappa"] == pytest.approx(result.kappa)
        and entry["spot_check"]["passed"] == result.passed
    )
    assert judge_passed(Acceptance("nugget-judge", 0.85, 0.05), entry) == result.passed


@pytest.mark.parametrize("root", [ROOT, ROOT / "examples" / "demo"], ids=["flagship", "demo"])
def test_every_answer_level_test_of_the_plan_is_runnable_once_answers_exist(root):
    from harness.pipeline.answer import uncovered_answer_tests
    from harness.plan.load import load_study_plan
    from harness.study import Study

    study = Study.at(root)
    plan = load_study_plan(study)
    answer_tests = [t.id for f in plan.families for t in f.tests
                    if t.metric.startswith(("answer_f1", "nugget_recall"))]
    assert len(answer_tests) == (
        4 if root == ROOT else 2
    )  # key secondary (2) + amendment 0001 nugget recall (2)
    assert uncovered_answer_tests(study, plan) == []


def test_an_answer_test_without_a_reader_cell_is_named(tmp_path):
    import shutil

    import yaml

    from harness.pipeline.answer import uncovered_answer_tests
    from harness.plan.load import load_study_plan
    from harness.study import Study

    demo = ROOT / "examples" / "demo"
    for part in ("configs", "plan", "amendments", "prompts", "data"):
        shutil.copytree(demo / part, tmp_path / part)
    path = tmp_path / "configs" / "study.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["reader"]["cells"] = [{"dataset": "papers", "retriever": "hybrid", "arms": ["E"]}]
    raw["judge"]["name"] = "another-judge"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    study = Study.at(tmp_path)
    assert uncovered_answer_tests(study, load_study_plan(study)) == [
        "answers/A1-papers: no reader cell papers/S+T/hybrid",
        "answers/N1-docs: no reader cell docs/S+T/hybrid; no reader cell docs/S/hybrid; no judge named "
        "'nugget-judge' with a model",
    ]


def _scored_study_with_answer_cells(tmp_path, monkeypatch):
    """An LLM-free study with a fake model as reader and judge on three answer cells, selected, frozen, built
    and scored; returns its root."""
    from harness.cli.main import main
    from pipeline_support import make_llm_free_study, with_fake_reader_and_judge
    from provenance_support import FakeDigests, install_fake_digests

    install_fake_digests(monkeypatch, FakeDigests({"fake-model": "sha256:fake"}))
    root = tmp_path / "s"
    make_llm_free_study(root, freeze=False)
    with_fake_reader_and_judge(root)
    for command in ("select", "freeze", "build-arms", "score"):
        assert (
            main(
                [
                    command,
                    "--study",
                    str(root),
                    *(["--no-progress"] if command in ("build-arms", "score") else []),
                ]
            )
            == 0
        )
    return root


def test_answer_stage_end_to_end_on_a_copy_of_the_demo_with_a_fake_model(tmp_path, monkeypatch):
    """select, freeze, build-arms, score (BM25, LLM-free arms), then `answer` with a scripted model: answer F1
    and nugget recall rows join the per-question table, controls come before the arms, and what the reader
    saw is recorded."""
    import harness.pipeline.answer as stage
    from harness.grid.results import read_per_question
    from harness.provenance.freeze import frozen_hash
    root = _scored_study_with_answer_cells(tmp_path, monkeypatch)
    from harness.study import Study

    study = Study.at(root)
    order = []

    def reply(prompt):
        if "Required fact:" in prompt:
            order.append("judge")
            return _fact_judge(prompt)
        order.append("reader")
        return '{"answer": "%s"}' % prompt.split("=====\n", 1)[1][:40].replace('"', "").replace("\n", " ")

    monkeypatch.setattr(stage, "make_backend", lambda cfg, replay_from=None: ScriptedJudge(reply))
    from harness.grid.states import ANSWERED, MISSING
    from harness.pipeline.status import grid_status

    before = grid_status(study)
    assert [(str(a.cell), a.state) for a in before.answer_cells] == [
        ("papers/S/bm25", MISSING), ("papers/S+T/bm25", MISSING), ("docs/S/bm25", MISSING)]
    assert before.next_step() == "make answer (3 answer cells missing)"
    summary = stage.answer_study(study, frozen_hash=frozen_hash(study), progress=False, log=lambda m: None)
    assert set(summary["cells"]) == {"papers/S/bm25", "papers/S+T/bm25", "docs/S/bm25"}
    after = grid_status(study)
    assert {a.state for a in after.answer_cells} == {ANSWERED}
    assert after.next_step() == "make stats (no statistics yet)"
    assert summary["cells"]["docs/S/bm25"]["questions"] == 3
    # the instruments first: the reader's controls on papers (3 questions x 2 reader calls), the judge's
    # controls on docs (judge only), the reader's on docs; only then any arm (S and S+T share source text,
    # so an identical context is a cache hit and not asked twice)
    first_judge = order.index("judge")
    control_calls = len((root / "results/judges/controls.jsonl").read_text().splitlines())
    assert 3 <= first_judge <= 6 and set(order[:first_judge]) == {"reader"} and control_calls > 0
    assert order[first_judge:first_judge + control_calls] == ["judge"] * control_calls
    assert order[first_judge + control_calls] == "reader"
    acceptance = read_json(judges_dir(study) / "acceptance.json")["nugget-judge"]
    assert acceptance["positive_questions"] == 3 and acceptance["positive"] is not None
    reader = read_json(root / "results/answers/reader_acceptance.json")["datasets"]
    assert {n: reader[n]["metric"] for n in reader} == {
        "papers": "answer_f1@512t",
        "docs": "nugget_recall@1024t",
    }
    assert all(r["score"] is not None for n in reader for r in reader[n]["questions"])

    papers = read_per_question(per_question_path(study, "papers"))
    f1 = papers[papers.metric == "answer_f1@512t"]
    assert sorted(set(f1.arm)) == ["S", "S+T"] and len(f1) == 6 and f1.value.between(0, 1).all()
    assert (papers.metric == "rec@512t").sum() > 0  # score's rows are kept
    docs = read_per_question(per_question_path(study, "docs"))
    assert len(docs[docs.metric == "nugget_recall@1024t"]) == 3
    records = [
        json.loads(line) for line in (root / "results/answers/papers/S__bm25.jsonl").read_text().splitlines()
    ]
    assert len(records) == 3 and all(r["context_tokens"] <= 512 and r["chunk_ids"] for r in records)

    calls = len(order)
    stage.answer_study(study, frozen_hash=frozen_hash(study), progress=False, log=lambda m: None)
    assert len(order) == calls  # a rerun is answered from the generation cache


def test_issue23_case5_a_rerun_of_score_keeps_the_answer_stages_rows(tmp_path, monkeypatch):
    """Issue 23, case 5: `score` with 0 cells to score rewrote papers.parquet without answer_f1 rows (and
    docs.csv without nugget_recall rows) while status still said "answered". Each stage now owns its part
    of the table: the rerun keeps the answer rows and the released files keep their exact bytes; with the
    answer rows gone, status no longer says answered."""
    import harness.pipeline.answer as stage
    from harness.cli.main import main
    from harness.grid.cells import answer_cells
    from harness.grid.states import ANSWERED, MISSING
    from harness.grid.results import read_per_question
    from harness.pipeline.status import grid_status
    from harness.provenance.freeze import frozen_hash
    from harness.study import Study

    root = _scored_study_with_answer_cells(tmp_path, monkeypatch)
    study = Study.at(root)
    monkeypatch.setattr(stage, "make_backend", lambda cfg, replay_from=None: ScriptedJudge(
        lambda p: _fact_judge(p) if "Required fact:" in p else '{"answer": "an answer"}'))
    stage.answer_study(study, frozen_hash=frozen_hash(study), progress=False, log=lambda m: None)
    released = {p.name: p.read_bytes() for p in sorted((root / "results/per_question").glob("*.*"))
                if p.suffix in (".parquet", ".csv")}
    assert sorted(released) == ["docs.csv", "docs.parquet", "papers-pooled.csv", "papers-pooled.parquet",
                                "papers.csv", "papers.parquet"]

    assert main(["score", "--study", str(root), "--no-progress"]) == 0  # 0 cells to score
    for name, data in released.items():
        assert (root / "results/per_question" / name).read_bytes() == data, name
    papers = read_per_question(per_question_path(study, "papers", "csv"))
    assert (papers.metric == "answer_f1@512t").sum() == 6
    docs = read_per_question(per_question_path(study, "docs", "csv"))
    assert (docs.metric == "nugget_recall@1024t").sum() == 3
    assert {a.state for a in grid_status(study).answer_cells} == {ANSWERED}

    from harness.grid.paths import answer_part_path

    answer_part_path(study, answer_cells(study)[0]).unlink()
    status = grid_status(study)
    assert [a.state for a in status.answer_cells] == [MISSING, ANSWERED, ANSWERED]
    assert status.next_step() == "make answer (1 answer cell missing)"


def _files(root: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.relative_to(root).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_rerun_of_answer_that_changes_nothing_writes_nothing(tmp_path, monkeypatch, capsys):
    """Every file of the study keeps its inode and modification time: the cells' done markers kept their
    completion time, and the answers, parts, tables, controls and results manifest their bytes, were
    rewritten all the same."""
    import harness.pipeline.answer as stage
    from harness.cli.main import main

    root = _scored_study_with_answer_cells(tmp_path, monkeypatch)
    monkeypatch.setattr(stage, "make_backend", lambda cfg, replay_from=None: ScriptedJudge(
        lambda p: _fact_judge(p) if "Required fact:" in p else '{"answer": "an answer"}'))
    assert main(["answer", "--study", str(root), "--no-progress"]) == 0
    before = _files(root)
    time.sleep(0.01)  # a rewrite would then carry another modification time even on a coarse clock
    assert main(["answer", "--study", str(root), "--no-progress"]) == 0
    after = _files(root)
    assert sorted(after) == sorted(before)
    assert [name for name in before if after[name] != before[name]] == []
