"""The reader's acceptance controls (issue 29): a reader that answers "Yes" to everything fails the positive
control on the real Qasper sample, an oracle that answers from its evidence passes both, a plan with an
answer-level test and no reader thresholds is refused at freeze, stats keeps the answer rows of a failed
reader exploratory, and the report shows the Instruments section."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.data.load import load_dataset
from harness.errors import HarnessError
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache
from harness.pipeline.reader_controls import evidence_chunks, reader_controls, write_reader_acceptance
from harness.pipeline.reading import references
from harness.plan.load import load_plan
from harness.plan.model import ReaderAcceptance
from harness.stats.families import reader_passed, run_family
from harness.stats.rules import ruled
from harness.stats.io import load_reader_rates
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from data_support import SHARED_DATA  # noqa: E402
from test_answer_stage import ScriptedJudge  # noqa: E402

QASPER = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"
DEMO = ROOT / "examples" / "demo"
THRESHOLDS = ReaderAcceptance(positive_min=0.3, negative_max=0.15)  # the demo's and flagship's for answer F1


@pytest.fixture(scope="module")
def qasper(tmp_path_factory):
    if not QASPER.is_file():
        pytest.skip(f"the shared Qasper sample is absent: {QASPER}")
    root = tmp_path_factory.mktemp("qasper")
    (root / "configs").mkdir()
    config = {"study": "q", "datasets": {"qasper": {"adapter": "qasper", "metric_set": "qasper",
                                                     "files": [str(QASPER)]}},
              "arms": {"S": {"kind": "S"}}, "retrievers": {"bm25": {"type": "bm25"}}}
    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(root), load_dataset(Study.at(root), "qasper", selection=None)


def _controls(tmp_path, dataset, reply):
    session = LlmSession(
        ScriptedJudge(reply), GenerationCache(tmp_path / "reader.jsonl"), SpendLedger("reader", None)
    )
    return reader_controls(
        dataset,
        session,
        PromptTemplate.load(ROOT / "prompts", "reader.txt"),
        budget=512,
        tokens=TokenCache(),
        seeds=[0, 1],
        seed=0,
        f1=True,
        judge=None,
        judge_template=None,
        judge_seed=None,
    )


def _oracle(dataset):
    """Answers a question with its first gold answer when the passages hold its gold evidence, else
    "Unanswerable": a reader that reads."""
    by_query: dict[str, list] = {}
    for q in dataset.questions:
        by_query.setdefault(q.query, []).append(q)

    def reply(prompt: str) -> str:
        query = prompt.split("Question: ", 1)[1].split("\nRetrieved passages:", 1)[0].strip()
        context = prompt.split("=====\n", 1)[1]
        for q in by_query.get(query, []):
            units = evidence_chunks(q)
            if units and units[0].text[:200] in context and references(q):
                return json.dumps({"answer": references(q)[0].answer})
        return json.dumps({"answer": "Unanswerable"})

    return reply


def test_a_reader_that_answers_yes_fails_the_positive_control_on_the_qasper_sample(tmp_path, qasper):
    _, dataset = qasper
    entry = _controls(tmp_path, dataset, lambda prompt: '{"answer": "Yes"}')
    assert entry["positive_questions"] >= 10 and entry["negative_questions"] == entry["positive_questions"]
    assert entry["positive"] < THRESHOLDS.positive_min  # Yes is right only on the few yes/no questions
    assert not reader_passed(THRESHOLDS, entry)
    assert entry["metric"] == "answer_f1@512t" and entry["reader_failed"] == 0
    assert all(r["answer"] == "Yes" and r["context_tokens"] <= 512 for r in entry["questions"])


def test_an_oracle_reader_passes_both_controls_and_the_file_is_deterministic(tmp_path, qasper):
    study, dataset = qasper
    entry = _controls(tmp_path, dataset, _oracle(dataset))
    # from other papers it answers "Unanswerable", right only where an annotator also said so
    assert entry["positive"] >= 0.9 and entry["negative"] <= 0.1, (entry["positive"], entry["negative"])
    assert reader_passed(THRESHOLDS, entry)
    clusters = {q.qid: q.cluster for q in dataset.questions}
    negatives = [r for r in entry["questions"] if r["control"] == "negative"]
    assert negatives and all(
        r["evidence_of"] != clusters[r["qid"]] for r in negatives
    )  # another paper's evidence
    reader = {"model": "oracle", "prompt_sha256": "0" * 64}
    write_reader_acceptance(study, reader, {"qasper": entry}, frozen_hash="f" * 64)
    path = study.root / "results" / "answers" / "reader_acceptance.json"
    first = path.read_bytes()
    again = _controls(tmp_path, dataset, _oracle(dataset))  # cached: the same answers, the same bytes
    write_reader_acceptance(study, reader, {"qasper": again}, frozen_hash="f" * 64)
    assert path.read_bytes() == first
    assert load_reader_rates(study)["qasper"]["positive"] == entry["positive"]


def _demo_copy(tmp_path: Path) -> Path:
    for part in ("configs", "plan", "amendments", "prompts", "data", "selection"):
        shutil.copytree(DEMO / part, tmp_path / part)
    return tmp_path


def test_a_plan_with_answer_tests_and_no_reader_thresholds_is_refused_at_freeze(tmp_path):
    from harness.provenance.freeze import freeze

    root = _demo_copy(tmp_path)
    path = root / "plan" / "plan.yaml"
    plan = yaml.safe_load(path.read_text())
    del plan["datasets"]["papers"]["reader_acceptance"]
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    with pytest.raises(
        HarnessError,
        match=r"`datasets\.papers\.reader_acceptance` is missing: test 'A1-papers' "
        r"\(family answers, plan\.yaml\) is answer-level \(answer_f1@512t\)",
    ):
        freeze(Study.at(root))
    assert not (root / "frozen_config.json").exists()


def test_reader_thresholds_are_checked_like_the_judges(tmp_path):
    path = tmp_path / "plan" / "plan.yaml"
    path.parent.mkdir()
    plan = yaml.safe_load((DEMO / "plan" / "plan.yaml").read_text())
    plan["datasets"]["papers"]["reader_acceptance"] = {"positive_min": 0.1, "negative_max": 0.2}
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    with pytest.raises(HarnessError, match=r"datasets\.papers\.reader_acceptance: needs 0 <= negative_max < "
                                           r"positive_min <= 1; got 0.2 and 0.1"):
        load_plan(path)


def _answer_table() -> pd.DataFrame:
    rows = []
    for arm, shift in (("E", 0.0), ("S+T", 0.01)):
        for i in range(12):
            rows.append({"dataset": "papers", "arm": arm, "retriever": "hybrid", "qid": f"q{i}",
                         "cluster": f"p{i // 2}", "stratum": "", "metric": "answer_f1@512t",
                         "value": 0.3 + 0.02 * (i % 5) + shift})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("rates, tier, passed", [
    ({}, "exploratory", False),  # no reader_acceptance.json
    ({"papers": {"positive": 0.0, "negative": 0.0}}, "exploratory", False),  # the demo's "Yes" reader
    ({"papers": {"positive": 0.6, "negative": 0.3}}, "exploratory", False),  # answers without reading
    ({"papers": {"positive": 0.6, "negative": None}}, "exploratory", False),  # negative not computable
    ({"papers": {"positive": 0.6, "negative": 0.05}}, "secondary", True),
])
def test_stats_keeps_answer_rows_exploratory_until_the_reader_passed(rates, tier, passed):
    from harness.stats.tables import to_markdown

    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    family = plan.family("answers")
    result = run_family(plan, ruled(family), _answer_table(), reader_rates=rates)
    row = next(r.to_json() for r in result.rows if r.test == "A1-papers")
    assert (row["tier"], row["reader_acceptance"]["passed"]) == (tier, passed)
    assert (
        row["reader_acceptance"]["positive_min"] == 0.3 and row["reader_acceptance"]["negative_max"] == 0.15
    )
    md = to_markdown(result)
    if passed:
        assert "A1-papers: reader on papers" in md and ": accepted." in md
    else:
        assert "(exploratory: reader not accepted) |" in md
        assert "A1-papers: reader on papers, positive control (own gold evidence)" in md
        assert "not accepted, so the row is exploratory." in md
    retrieval = run_family(plan, ruled(plan.family("primary")), _answer_table(), reader_rates={})
    assert all(r.reader_acceptance is None for r in retrieval.rows)  # retrieval rows rest on no reader


def test_a_row_resting_on_a_failed_judge_and_reader_names_both():
    from harness.stats.decided import JUDGE, READER, DecidedRow, InstrumentControls
    from harness.stats.tables import exploratory_mark

    def row(passed: bool) -> DecidedRow:
        return DecidedRow(
            test="t", rule="tost", dataset="papers", a="A", b="B", retriever="r", metric="m", margin=5.0,
            tier="exploratory", source="plan", verdict="equiv.",
            acceptance=InstrumentControls(JUDGE, "nugget-judge", 0.85, 0.2, 0.9, 0.1, passed),
            reader_acceptance=InstrumentControls(READER, "papers", 0.3, 0.15, 0.0, 0.0, passed))

    assert exploratory_mark(row(False)) == " (exploratory: judge and reader not accepted)"
    assert exploratory_mark(row(True)) == ""


def test_the_report_shows_the_instruments_first_after_the_study_identity(tmp_path):
    from harness.report.build import SECTION_BUILDERS, render_markdown
    from harness.report.context import ReportContext
    from harness.report.html import render_page
    from harness.report.sections_inputs import identity
    from harness.report.sections_instruments import instruments

    assert SECTION_BUILDERS[1:3] == (identity, instruments)  # after the summary, which opens the page
    study = Study.at(_demo_copy(tmp_path))
    missing = instruments(ReportContext(study))
    assert [m.what for m in missing.missing] == [
        "the reader's controls (results/answers/reader_acceptance.json)",
        "the judge's controls (results/judges/acceptance.json)",
    ]
    entry = {"metric": "answer_f1@512t", "positive": 0.0, "negative": 0.0, "positive_questions": 6,
             "negative_questions": 6}
    write_reader_acceptance(study, {"model": "embedded"}, {"papers": entry}, frozen_hash=None)
    (study.root / "results" / "judges").mkdir(parents=True)
    (study.root / "results" / "judges" / "acceptance.json").write_text(json.dumps(
        {"nugget-judge": {"positive": 0.9, "negative": 0.0, "positive_questions": 6, "negative_questions": 6,
                          "spot_check": {"kappa": 0.72, "passed": True}}}))
    sec = instruments(ReportContext(study))
    assert sec.missing == []
    rows = {(r[0], r[1].split(":")[0]): r[2:] for r in sec.tables[0].rows}
    assert rows[("reader (papers)", "positive control")] == ("0.0%", ">= 30.0%", "FAIL", "A1-papers")
    assert rows[("reader (papers)", "negative control")] == ("0.0%", "<= 15.0%", "pass", "A1-papers")
    assert rows[("judge nugget-judge", "positive control")] == ("90.0%", ">= 85.0%", "pass", "N1-docs")
    assert rows[("judge nugget-judge", "human spot check")] == ("0.72", ">= 0.6", "pass", "N1-docs")
    assert rows[("embedder of minilm", "texts cut to the model window")][0] == "nothing embedded yet"
    page = render_page("t", "s", [sec])
    assert '<section id="instruments"><h2>Instruments</h2>' in page and "<td>FAIL</td>" in page
    assert "| reader (papers) |" in render_markdown("t", "s", [sec])


def test_the_summary_counts_the_readers_controls_among_its_instruments(tmp_path):
    """A reader that failed its controls is named on the report's first screen, and one that passed counts."""
    from harness.report.context import ReportContext
    from harness.report.sections_summary import INSTRUMENT_CHECKS, reader_acceptance, summary

    assert reader_acceptance in INSTRUMENT_CHECKS
    study = Study.at(_demo_copy(tmp_path))
    # no controls on file: answer rows rest on a reader that has passed nothing
    assert [(c.name, c.passed) for c in reader_acceptance(ReportContext(study))] == \
        [("reader on docs", False), ("reader on papers", False)]
    entry = {"metric": "answer_f1@512t", "positive": 0.6, "negative": 0.1, "positive_questions": 6,
             "negative_questions": 6}
    failing = entry | {"positive": 0.0}
    write_reader_acceptance(
        study, {"model": "embedded"}, {"papers": entry, "docs": failing}, frozen_hash=None
    )
    assert [(c.name, c.passed) for c in reader_acceptance(ReportContext(study))] == \
        [("reader on docs", False), ("reader on papers", True)]
    counts = summary(ReportContext(study)).paragraphs[1]  # after the paragraph answering the question
    assert "instruments passed 1 of 3 (failed: reader on docs, judge nugget-judge;" in counts
