"""Qasper conversion: both file layouts, Markdown rules, evidence filtering and location, counts on real
data."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from data_support import SHARED_DATA, assert_counts_add_up

from harness.data import qasper
from harness.data.common import InputReader
from harness.data.load import load_dataset
from harness.errors import HarnessError, InputError
from harness.study import Study

DATA = SHARED_DATA / "qasper-train10"
ORIGINAL = DATA / "qasper-train10.original-schema.json"
HF_EXPORT = DATA / "qasper-original-sample.hf.json"
needs_data = pytest.mark.skipif(not ORIGINAL.is_file(), reason="../shared/data/qasper-train10 is absent")


def annotation(evidence, *, unanswerable=False, free="", spans=(), yes_no=None):
    return {"answer": {"unanswerable": unanswerable, "extractive_spans": list(spans), "yes_no": yes_no,
                       "free_form_answer": free, "evidence": list(evidence), "highlighted_evidence": []},
            "annotation_id": "a", "worker_id": "w"}


def paper(qas, sections=None):
    return {
        "title": "Tide Tables",
        "abstract": "We study tides.",
        "full_text": sections
        if sections is not None
        else [
            {
                "section_name": "Intro",
                "paragraphs": ["First   paragraph\nof intro.", "", "Second paragraph."],
            },
            {"section_name": "Intro ::: Scope", "paragraphs": ["Scoped text."]},
            {"section_name": "Intro ::: Scope ::: Detail", "paragraphs": ["Deep text."]},
            {"section_name": " ::: ", "paragraphs": ["Orphan text."]},
        ],
        "qas": qas,
    }


def question(qid, *annotations):
    return {"question": f"Question {qid}?", "question_id": qid, "answers": list(annotations)}


# --- Markdown -----------------------------------------------------------------------------------------


def test_markdown_headers_follow_nesting_and_paragraphs_are_blank_line_separated():
    text, spans, counts = qasper.paper_to_markdown("p1", paper([]))
    assert text == (
        "# Tide Tables\n\n## Abstract\n\nWe study tides.\n\n## Intro\n\nFirst   paragraph\nof intro.\n\n"
        "Second paragraph.\n\n### Scope\n\nScoped text.\n\n#### Detail\n\nDeep text.\n\nOrphan text.\n"
    )
    assert [text[a:b] for a, b in spans] == [
        "We study tides.",
        "First   paragraph\nof intro.",
        "Second paragraph.",
        "Scoped text.",
        "Deep text.",
        "Orphan text.",
    ]
    assert counts["paragraphs_empty"] == 1 and counts["sections_untitled"] == 1 and counts["sections"] == 4


# --- evidence --------------------------------------------------------------------------------------------


def test_evidence_filters_union_annotators_and_answers():
    qas = [
        question("q1",
                 annotation(["Scoped text.", "FLOAT SELECTED: Table 1", "Intro ::: Scope"], free="tides"),
                 annotation(["Scoped text.", "Deep text."], spans=["deep", "text"]),
                 annotation(["Second paragraph."], unanswerable=True)),
        question("q2", annotation(["FLOAT SELECTED: Figure 2"], yes_no=True)),
        question("q3", annotation([], yes_no=False)),
        question("q4", annotation([], unanswerable=True), annotation(["Deep text."], unanswerable=True)),
    ]
    conv = qasper.convert_paper("p1", paper(qas), dataset="qasper")
    assert [q.qid for q in conv.questions] == ["q1"]
    (q1,) = conv.questions
    assert [(e.text, e.annotators) for e in q1.evidence] == [("Scoped text.", (0, 1)), ("Deep text.", (1,))]
    assert q1.answers == ("tides", "deep, text")
    # answer F1's gold keeps every annotator, the unanswerable one included (the official evaluator's
    # references)
    assert q1.gold_answers == (
        ("tides", "abstractive"),
        ("deep, text", "extractive"),
        ("Unanswerable", "none"),
    )
    assert type(q1).from_json(q1.to_json()) == q1
    assert q1.cluster == "qasper/p1" and q1.scope == ("qasper/p1",) and q1.stratum == ""
    for e in q1.evidence:
        assert conv.document.text[e.start:e.end] == e.text
    c = conv.counts
    assert (c["evidence_strings_total"], c["evidence_float_selected"], c["evidence_section_names"]) == (
        6,
        2,
        1,
    )
    assert (c["questions_in_input"], c["questions_dropped_no_evidence"], c["questions_dropped_unanswerable"],
            c["annotations_unanswerable"]) == (4, 2, 1, 3)
    assert c["evidence_in_unanswerable"] == 2


def test_evidence_prefers_whole_paragraph_over_earlier_partial_repeat():
    sections = [{"section_name": "A", "paragraphs": ["Intro mentions Tidal flats. and more", "Tidal flats."]}]
    conv = qasper.convert_paper("p1", paper([question("q", annotation(["Tidal flats."]))], sections))
    (e,) = conv.questions[0].evidence
    assert (e.start, e.end) == conv.paragraph_spans[-1]


def test_evidence_located_after_whitespace_normalisation_maps_to_original_offsets():
    qas = [question("q", annotation(["First paragraph of intro.", "Not in the paper at all."]))]
    conv = qasper.convert_paper("p1", paper(qas))
    located, missing = conv.questions[0].evidence
    assert conv.document.text[located.start:located.end] == "First   paragraph\nof intro."
    assert missing.start is None and not missing.located
    assert conv.counts["evidence_located_normalised"] == 1 and conv.counts["evidence_unlocated"] == 1


def test_empty_question_is_refused_with_file_and_record(tmp_path):
    f = tmp_path / "empty.json"
    f.write_text(json.dumps({"p1": paper([question("q1", annotation(["Deep text."]))]),
                             "p2": paper([{"question": "  ", "question_id": "q2",
                                           "answers": [annotation(["Deep text."])]}])}))
    study = _study(tmp_path, [str(f)])
    with pytest.raises(InputError, match=r"empty\.json \(record p2 question q2\): field `question` is empty"):
        load_dataset(
            study, "qasper", selection={"datasets": {"qasper": {"adapter": "qasper", "selected": ["p1"]}}}
        )


# --- malformed records -----------------------------------------------------------------------------------


def test_missing_field_names_file_and_paper(tmp_path):
    bad = {"p9": {"title": "T", "abstract": "A", "qas": []}}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"bad\.json \(record p9\): missing field `full_text`"):
        qasper.convert_paper("p9", qasper.read_qasper_file(f)["p9"], path=f)


def test_wrong_type_and_unequal_hf_lists_are_reported(tmp_path):
    with pytest.raises(InputError, match=r"record p1 question q\).*`answers` must be list"):
        qasper.convert_paper(
            "p1", paper([{"question": "?", "question_id": "q", "answers": {}}]), path="x.json"
        )
    rec = {"id": "p2", "title": "T", "abstract": "A",
           "full_text": {"section_name": ["S1", "S2"], "paragraphs": [["x"]]},
           "qas": {"question": [], "question_id": [], "answers": []}}
    f = tmp_path / "hf.json"
    f.write_text(json.dumps(rec))
    with pytest.raises(InputError, match=r"hf\.json \(record p2\): `full_text` lists have different lengths"):
        qasper.read_qasper_file(f)


def test_bad_json_and_duplicate_ids(tmp_path):
    f = tmp_path / "broken.json"
    f.write_text('{"p1": {"title": ')
    with pytest.raises(InputError, match=r"broken\.json.*not valid JSON"):
        qasper.read_qasper_file(f)
    g = tmp_path / "dup.json"
    g.write_text(json.dumps({"p1": paper([])}) + "\n" + json.dumps({"p1": paper([])}))
    with pytest.raises(InputError, match=r"dup\.json \(record p1\): paper id appears twice"):
        qasper.read_qasper_file(g)


def test_hub_failure_is_a_clear_error(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(
        HarnessError, match=r"cannot load allenai/qasper split validation .*list them under `files:`"
    ):
        qasper.read_hub("allenai/qasper", ["validation"], InputReader(Path(".")))


# --- the real sample ------------------------------------------------------------------------------------


@needs_data
def test_both_layouts_convert_to_identical_documents_and_questions():
    original = qasper.read_qasper_file(ORIGINAL)
    exported = qasper.read_qasper_file(HF_EXPORT)
    assert list(original) == list(exported)
    for pid in original:
        a, b = qasper.convert_paper(pid, original[pid]), qasper.convert_paper(pid, exported[pid])
        assert a.document == b.document and a.questions == b.questions and a.counts == b.counts


def _study(tmp_path: Path, files) -> Study:
    (tmp_path / "configs").mkdir()
    config = {
        "study": "t",
        "datasets": {
            "qasper": {
                "adapter": "qasper",
                "metric_set": "qasper",
                "files": files,
                "selection": {"seed": 1, "n_clusters": "all"},
            }
        },
        "arms": {"S": {"kind": "S"}},
        "retrievers": {"bm25": {"type": "bm25"}},
    }
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(tmp_path)


@needs_data
@pytest.mark.parametrize("source", [ORIGINAL, HF_EXPORT], ids=["original", "hf-export"])
def test_sample_counts_and_first_and_last_records(tmp_path, source):
    loaded = load_dataset(_study(tmp_path, [str(source)]), "qasper", selection=None)
    c = loaded.counts
    # the data README: 10 papers, 51 questions, 68 answers, 89 evidence strings, 11 FLOAT SELECTED
    assert (c["papers"], c["questions_in_input"], c["annotations_total"]) == (10, 51, 68)
    assert (c["evidence_strings_total"], c["evidence_float_selected"], c["evidence_section_names"]) == (
        89,
        11,
        1,
    )
    assert (c["sections"], c["paragraphs"], c["sections_untitled"]) == (138, 1115, 3)
    assert (c["questions_dropped_unanswerable"] + c["questions_dropped_no_evidence"], c["questions"],
            c["documents"]) == (8, 43, 10)
    assert (c["evidence_unique"], c["evidence_located_verbatim"], c["evidence_unlocated"]) == (67, 67, 0)
    assert c["annotations_unanswerable"] == 11
    assert_counts_add_up(c)
    assert_counts_add_up(c, "documents")
    first, last = loaded.questions[0], loaded.questions[-1]
    assert first.qid == "003f884d3893532f8c302431c9f70be6f64d9be8" and first.cluster == "qasper/1705.09665"
    assert last.qid == "eea089baedc0ce80731c8fdcb064b82f584f483a" and last.cluster == "qasper/1705.09665"
    assert (
        loaded.documents[0].doc_id == "qasper/1705.09665"
        and loaded.documents[-1].doc_id == "qasper/2003.07723"
    )
    assert loaded.documents[0].text.startswith("# Community Identity and User Engagement in a Multi-")
    by_id = {d.doc_id: d.text for d in loaded.documents}
    for q in loaded.questions:
        for e in q.evidence:
            assert by_id[e.doc_id][e.start:e.end] == e.text


@needs_data
def test_sample_paragraph_spans_slice_back_to_paragraphs():
    papers = qasper.read_qasper_file(ORIGINAL)
    for pid, record in papers.items():
        conv = qasper.convert_paper(pid, record)
        written = [record["abstract"]] + [
            p for s in record["full_text"] for p in s["paragraphs"] if p.strip()
        ]
        assert [conv.document.text[a:b] for a, b in conv.paragraph_spans] == written


@needs_data
def test_selection_restricts_papers(tmp_path):
    study = _study(tmp_path, [str(ORIGINAL)])
    entry = {"adapter": "qasper", "selected": ["1909.00694", "2003.07723"]}
    loaded = load_dataset(study, "qasper", selection={"datasets": {"qasper": entry}})
    assert [d.doc_id for d in loaded.documents] == ["qasper/1909.00694", "qasper/2003.07723"]
    # 1909.00694 has 9 questions; c029de... cites only a FLOAT SELECTED table and is dropped
    assert Counter(q.cluster for q in loaded.questions) == {"qasper/1909.00694": 8, "qasper/2003.07723": 3}
    assert not any(q.qid.startswith("c029de") for q in loaded.questions)
    c = loaded.counts  # counted from the file, not from the two selected papers
    assert (
        c["questions_in_input"],
        c["questions"],
        c["documents_in_input"],
        c["documents_dropped_not_selected"],
    ) == (51, 11, 10, 8)
    assert c["questions_dropped_not_selected"] == 43 - 11
    assert_counts_add_up(c)
    assert_counts_add_up(c, "documents")
    bad = copy.deepcopy(entry) | {"selected": ["0000.00000"]}
    with pytest.raises(HarnessError, match=r"selected papers not in the input files: \['0000.00000'\]"):
        load_dataset(study, "qasper", selection={"datasets": {"qasper": bad}})


def test_drops_are_counted_from_the_file_after_selecting_every_eligible_paper(tmp_path):
    """The reported hole: papers whose only question is dropped are not eligible, so a load restricted to the
    selection used to start counting from the selected papers (questions_total = kept, 0 dropped)."""
    papers = {
        "p1": paper([question("q1", annotation(["Deep text."]))]),
        "p2": paper([question("q2", annotation(["Scoped text."]))]),
        "p3": paper([question("q3", annotation([], unanswerable=True))]),
        "p4": paper([question("q4", annotation(["FLOAT SELECTED: Table 1"]))]),
    }
    f = tmp_path / "four.json"
    f.write_text(json.dumps(papers))
    study = _study(tmp_path, [str(f)])
    entry = qasper.select(study, "qasper", study.config.datasets["qasper"],
                          lambda: load_dataset(study, "qasper", selection=None))
    assert sorted(entry["selected"]) == ["p1", "p2"]
    c = load_dataset(study, "qasper", selection={"datasets": {"qasper": entry}}).counts
    assert (c["questions_in_input"], c["questions"], c["questions_dropped_unanswerable"],
            c["questions_dropped_no_evidence"], c["questions_dropped_not_selected"]) == (4, 2, 1, 1, 0)
    assert (c["documents_in_input"], c["documents"], c["documents_dropped_not_selected"]) == (4, 2, 2)
    assert_counts_add_up(c)
    assert_counts_add_up(c, "documents")
