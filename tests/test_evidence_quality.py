"""Evidence that cannot tell arms apart is counted and named: strings found in several documents, and strings
shorter than the metrics' 5-grams."""

from __future__ import annotations

import json

from harness.cli.main import main
from harness.data.common import LoadedDataset
from harness.data.model import Document, Evidence, Question
from harness.metrics.evidence_quality import evidence_quality

from test_init import corpus, write_jsonl


def _dataset(evidence: dict[str, str]) -> LoadedDataset:
    docs = (Document("a", "d", "Xthe river floods in spring every year. Boats wait."),
            Document("b", "d", "In the north the river floods in spring every year too."),
            Document("c", "d", "Only here does the old mill grind barley at night."))
    questions = tuple(Question(qid, "s", "?", qid, "", ("a", "b", "c"), (Evidence("a", text),))
                      for qid, text in sorted(evidence.items()))
    return LoadedDataset("s", "qasper", docs, questions, {}, ())


def test_ambiguous_and_short_evidence_are_counted_and_named():
    quality = evidence_quality(_dataset({
        "q1": "the river floods in spring every year",  # in a and b
        "q2": "he river floods in spring every",  # cut mid-word at the start: still in a and b
        "q3": "the old mill grind barley",  # in c only
        "q4": "barley at night",  # three words
    }))
    assert quality.strings == 4
    assert [(f.qid, f.detail) for f in quality.ambiguous] == [("q1", 2), ("q2", 2)]
    assert [(f.qid, f.detail) for f in quality.short] == [("q4", 3)]
    lines = quality.lines()
    assert lines[0] == "evidence strings found verbatim in several documents (any of them gives credit): 2 of 4"
    assert "  q1: 'the river floods in spring every year' (2 documents)" in lines
    assert "evidence strings shorter than 5 words (no 5-gram to match): 1 of 4" in lines


def test_a_clean_dataset_has_nothing_to_say():
    assert evidence_quality(_dataset({"q3": "the old mill grind barley"})).lines() == []


def test_init_names_ambiguous_and_short_evidence(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    rows[0]["evidence"][0]["text"] = "keeps its amber records"  # four words, in one document
    rows[1]["evidence"][0]["text"] = "inspections of season 0 and the keeper who signed them"  # every document
    write_jsonl(questions, rows)
    assert main(["init", str(tmp_path / "study"), "--documents", str(documents), "--questions", str(questions)]) == 0
    out = capsys.readouterr().out
    assert "note: evidence strings found verbatim in several documents (any of them gives credit): 1 of 20" in out
    assert "(4 documents)" in out
    assert "note: evidence strings shorter than 5 words (no 5-gram to match): 1 of 20" in out
