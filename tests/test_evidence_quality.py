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
    assert (
        lines[0] == "evidence strings found verbatim in several documents (any of them gives credit): 2 of 4"
    )
    assert "  q1: 'the river floods in spring every year' (2 documents)" in lines
    assert "evidence strings shorter than 5 words (no 5-gram to match): 1 of 4" in lines


def test_a_clean_dataset_has_nothing_to_say():
    assert evidence_quality(_dataset({"q3": "the old mill grind barley"})).lines() == []


def test_init_names_ambiguous_and_short_evidence(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    rows[0]["evidence"][0]["text"] = "keeps its amber records"  # four words, in one document
    rows[1]["evidence"][0]["text"] = (
        "inspections of season 0 and the keeper who signed them"  # every document
    )
    write_jsonl(questions, rows)
    assert (
        main(["init", str(tmp_path / "study"), "--documents", str(documents), "--questions", str(questions)])
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "note: evidence strings found verbatim in several documents (any of them gives credit): 1 of 20"
        in out
    )
    assert "(4 documents)" in out
    assert "note: evidence strings shorter than 5 words (no 5-gram to match): 1 of 20" in out


def _scoped(texts: dict[str, str], scopes: dict[str, tuple[str, ...]]) -> LoadedDataset:
    docs = tuple(Document(d, "d", t) for d, t in sorted(texts.items()))
    questions = tuple(Question(q, "s", "?", q, "", scope, ()) for q, scope in sorted(scopes.items()))
    return LoadedDataset("s", "qasper", docs, questions, {}, ())


def _sections(n: int, words: int) -> str:
    return "\n\n".join(f"# Part {i}\n\n" + " ".join(f"w{i}x{j}" for j in range(words)) for i in range(n))


def test_init_pools_the_documents_when_each_question_would_retrieve_its_whole_scope():
    from harness.config.datasets import DOCUMENT_SCOPE, POOLED_SCOPE
    from harness.pipeline.scope_choice import choose_scope

    small = {f"d{i}": _sections(2, 40) for i in range(6)}  # a few short chunks per document
    own = {f"q{i}": (f"d{i}",) for i in range(6)}
    choice = choose_scope(_scoped(small, own), 512)
    assert (choice.scope, choice.pooled_documents, choice.saturates) == (POOLED_SCOPE, 6, True)
    assert "one pooled index over 6 documents" in choice.reason
    large = {f"d{i}": _sections(30, 120) for i in range(6)}  # many chunks, many budgets' worth of tokens
    choice = choose_scope(_scoped(large, own), 512)
    assert choice.scope == DOCUMENT_SCOPE and not choice.saturates and choice.median_chunks > 10
    pair = {"d0": small["d0"], "d1": small["d1"]}
    shared = {"q0": ("d0", "d1"), "q1": ("d0", "d1")}  # pooling would change nothing
    choice = choose_scope(_scoped(pair, shared), 512)
    assert choice.scope == DOCUMENT_SCOPE and choice.saturates and "near their ceiling" in choice.reason


def test_init_writes_the_pooled_scope_it_chose(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    for row in rows:
        row["scope"] = {"doc": row["evidence"][0]["doc_id"]}  # each question searches one small document
    write_jsonl(questions, rows)
    assert (
        main(["init", str(tmp_path / "study"), "--documents", str(documents), "--questions", str(questions)])
        == 0
    )
    assert "retrieval scope: pooled (" in capsys.readouterr().out
    assert "retrieval_scope: pooled" in (tmp_path / "study" / "configs" / "study.yaml").read_text()
