"""`harness lab` on the fixture handbook (issue 16)."""

import json
from pathlib import Path

from harness.cli.main import main
from harness.data.model import Document
from harness.data.question_evidence import lab_questions
from harness.lab import LabSettings, run_lab

FIXTURES = Path(__file__).parent / "fixtures" / "lab"
DOC, QE = FIXTURES / "handbook.md", FIXTURES / "qe.json"
CHUNKERS = ["fixed", "sentence", "provisions", "provisions-noref", "qes-dp", "qes-greedy"]


def fixture_questions():
    text = DOC.read_text(encoding="utf-8")
    return Document("h", "", text), lab_questions(
        text, json.loads(QE.read_text(encoding="utf-8")), doc_id="h"
    )


def test_lab_prints_every_chunker_under_both_modes(capsys):
    assert main(["lab", str(DOC), str(QE), "--L", "450", "--budget", "120", "--unit", "words"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "train (5)" in lines[0] and "held-out (5)" in lines[0] and "ctx words" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert [(r[0], r[1]) for r in rows] == [(c, m) for c in CHUNKERS for m in ("flat", "graph")]
    assert all(len(r) == 9 for r in rows)


def test_lab_rows_respect_the_budget_and_report_each_split():
    d, questions = fixture_questions()
    rows = run_lab(d, questions, LabSettings(budget=60))
    assert len(rows) == len(CHUNKERS) * 2 * 2
    assert {r.questions for r in rows} == {5}
    assert all(0 <= r.partial <= 1 and r.complete <= r.partial for r in rows)
    assert all(r.mean_context_words <= 60 for r in rows)
    # at the lab's 120 words every training question of the fixture is complete under provision chunks
    rows = run_lab(d, questions, LabSettings())
    provisions = next(
        r for r in rows if r.chunker == "provisions" and r.mode == "flat" and r.split == "train"
    )
    assert provisions.chunks == 16 and provisions.complete == 1.0


def test_lab_names_a_missing_evidence_string(tmp_path, capsys):
    qe = tmp_path / "qe.json"
    qe.write_text(json.dumps([{"question": "q", "evidence": ["Not in the handbook."], "split": "train"}]))
    assert main(["lab", str(DOC), str(qe)]) == 1
    assert "evidence string not found in the document: 'Not in the handbook.'" in capsys.readouterr().err
