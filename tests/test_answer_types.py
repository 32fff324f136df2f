"""Answer types: the combination rule, the Qasper and JSONL adapters, and the `answer-type` analysis."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from data_support import SHARED_DATA
from test_data_jsonl import DOCS, make_study, q

from harness.analyses.run import Blocked, run_analyses
from harness.data.answer_types import ANSWER_TYPES, combined_answer_type
from harness.data.load import load_dataset
from harness.data.model import Question
from harness.errors import InputError
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table
from harness.study import Study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
TIES = 6  # kept questions whose annotators split evenly (e.g. one extractive, one unanswerable)
TRAIN10 = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"


@pytest.mark.parametrize("votes, expected", [
    (["abstractive", "extractive", "abstractive"], "abstractive"),  # majority
    (["unanswerable", "extractive"], "extractive"),                  # tie: extractive first
    (["yes-no", "abstractive"], "abstractive"),                      # tie: abstractive before yes-no
    (["unanswerable", "yes-no"], "yes-no"),                          # tie: yes-no before unanswerable
    (["unanswerable", "unanswerable", "yes-no"], "unanswerable"),
    ([], ""),                                                         # no vote: no type, never a guess
])
def test_majority_with_a_fixed_tie_order(votes, expected):
    assert combined_answer_type(votes) == expected
    assert combined_answer_type(reversed(votes)) == expected  # annotator order never matters


def test_unknown_vote_is_an_error():
    with pytest.raises(ValueError, match="'boolean' is not one of"):
        combined_answer_type(["boolean"])


def _vote(answer: dict) -> str | None:
    """Written from the Qasper schema, independently of the adapter."""
    if answer.get("unanswerable"):
        return "unanswerable"
    if answer.get("extractive_spans"):
        return "extractive"
    if answer.get("free_form_answer"):
        return "abstractive"
    if isinstance(answer.get("yes_no"), bool):
        return "yes-no"
    return None


@pytest.mark.skipif(not TRAIN10.is_file(), reason=f"real Qasper sample not found at {TRAIN10}")
def test_qasper_adapter_records_the_annotators_majority(tmp_path):
    import yaml

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "study.yaml").write_text(
        yaml.safe_dump(
            {
                "study": "q",
                "datasets": {
                    "qasper": {"adapter": "qasper", "metric_set": "qasper", "files": [str(TRAIN10)]}
                },
                "arms": {"S": {"kind": "S"}},
                "retrievers": {"bm25": {"type": "bm25"}},
            }
        )
    )
    loaded = load_dataset(Study.at(tmp_path), "qasper", selection=None)
    raw = json.loads(TRAIN10.read_text(encoding="utf-8"))
    votes = {qa["question_id"]: [v for v in (_vote(a["answer"]) for a in qa["answers"]) if v]
             for paper in raw.values() for qa in paper["qas"]}
    # 51 in the file: 6 dropped as unanswerable by every annotator, 2 without usable evidence
    assert len(loaded.questions) == 43
    types = Counter(question.answer_type for question in loaded.questions)
    assert types == {"extractive": 27, "abstractive": 12, "yes-no": 4}
    ties = 0
    for question in loaded.questions:
        counts = Counter(votes[question.qid]).most_common()
        top = [t for t, n in counts if n == counts[0][1]]
        ties += len(top) > 1
        assert question.answer_type == min(top, key=ANSWER_TYPES.index), question.qid
        assert question.to_json()["answer_type"] == question.answer_type
    assert ties == TIES  # the tie rule is exercised on real annotations
    first, last = loaded.questions[0], loaded.questions[-1]
    assert (first.qid[:8], first.answer_type) == ("003f884d", "yes-no")
    assert (last.qid[:8], last.answer_type) == ("eea089ba", "extractive")


def test_jsonl_reads_answer_type_and_keeps_old_files_valid(tmp_path):
    evidence = [{"doc_id": "p/tides", "text": "Neap tides are weaker."}]
    loaded = load_dataset(
        make_study(tmp_path, DOCS, [q("a", evidence, answer_type="yes-no"), q("b", evidence)]),
        "papers",
        selection=None,
    )
    by_qid = {x.qid: x for x in loaded.questions}
    assert (by_qid["a"].answer_type, by_qid["b"].answer_type) == ("yes-no", "")
    assert "answer_type" not in by_qid["b"].to_json()  # an old file's canonical form is unchanged
    assert Question.from_json(by_qid["a"].to_json()) == by_qid["a"]


def test_jsonl_rejects_an_unknown_answer_type_naming_file_and_line(tmp_path):
    evidence = [{"doc_id": "p/tides", "text": "Neap tides are weaker."}]
    study = make_study(tmp_path, DOCS, [q("a", evidence), q("b", evidence, answer_type="boolean")])
    with pytest.raises(InputError, match=r"questions\.jsonl.*line 2.*`answer_type` must be one of"):
        load_dataset(study, "papers", selection=None)


class _Inputs:
    """StudyInputs' interface over given questions."""

    def __init__(self, questions):
        self.questions = questions

    def dataset(self, name):
        return SimpleNamespace(name=name, questions=self.questions)

    def moderator_chunks(self, name, a, b):
        raise Blocked(f"chunk sets of {name}", "make build-arms")


def _table():
    return long_table(np.random.default_rng(5), [SyntheticDataset("papers", 40, 2.0)],
                      {"E": 0.03, "S+T": 0.0}, ["hybrid"], {"papers": ["rec@512t"]})


def _questions(table, types):
    qids = sorted(set(table.qid))
    return [SimpleNamespace(qid=qid, answer_type=types[i % len(types)]) for i, qid in enumerate(qids)]


def test_answer_type_split_groups_counts_the_untyped_and_contrasts():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    table = _table()
    questions = _questions(table, ["extractive", "abstractive", "yes-no", ""])
    record = {r["id"]: r for r in run_analyses(plan, table, _Inputs(questions))}["answer-type-papers"]
    assert record["status"] == "ran"
    rows = {row["group"]: row for row in record["rows"]}
    n = len(questions)
    assert [r["group"] for r in record["rows"]] == list(ANSWER_TYPES) + ["extractive minus yes-no"]
    assert rows["unanswerable"]["n_questions"] == 0 and rows["unanswerable"]["estimate"] is None
    assert sum(rows[t]["n_questions"] for t in ANSWER_TYPES) == n - n // 4
    assert record["excluded"] == {"no answer type recorded (hybrid)": n // 4}
    # the group mean is the mean paired difference over exactly that group's questions
    extractive = {x.qid for x in questions if x.answer_type == "extractive"}
    diffs = (
        table[(table.arm == "E")].set_index("qid").value - table[(table.arm == "S+T")].set_index("qid").value
    )
    assert rows["extractive"]["estimate"] == pytest.approx(100 * diffs[sorted(extractive)].mean())


def test_answer_type_blocks_when_no_question_has_a_type():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    table = _table()
    record = {r["id"]: r for r in run_analyses(plan, table, _Inputs(_questions(table, [""])))}[
        "answer-type-papers"
    ]
    assert record["status"] == "blocked" and record["rows"] == []
    assert record["missing"][0]["target"] == "make freeze"
    assert "answer_type" in record["missing"][0]["what"]
