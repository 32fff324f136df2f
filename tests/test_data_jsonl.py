"""The generic JSONL adapter and the shared Markdown reading / evidence location helpers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from data_support import assert_counts_add_up

from harness.data.common import TextLocator, read_markdown
from harness.data.load import load_dataset
from harness.errors import HarnessError, InputError
from harness.study import Study

TIDES = "# Tides\n\nSpring tides follow the new moon.\n\n## Neaps\n\nNeap tides are weaker.\n"


def write_jsonl(path: Path, rows) -> None:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )


def make_study(tmp_path: Path, documents, questions, *, metric_set="qasper") -> Study:
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True, exist_ok=True)
    (data / "docs" / "tides.md").write_text(TIDES, encoding="utf-8")
    write_jsonl(data / "documents.jsonl", documents)
    write_jsonl(data / "questions.jsonl", questions)
    config = {"study": "j", "datasets": {"papers": {"adapter": "jsonl", "metric_set": metric_set,
                                                     "documents": "data/documents.jsonl",
                                                     "questions": "data/questions.jsonl",
                                                     "selection": {"seed": 3, "n_clusters": "all"}}},
              "arms": {"S": {"kind": "S"}}, "retrievers": {"bm25": {"type": "bm25"}}}
    (tmp_path / "configs").mkdir(exist_ok=True)
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(tmp_path)


DOCS = [
    {
        "doc_id": "p/tides",
        "domain": "papers",
        "path": "docs/tides.md",
        "provenance": {"licence": "CC BY 4.0"},
    },
    {"doc_id": "p/inline", "domain": "papers", "text": "Line one.\r\nLine two.\r\n"},
    {"doc_id": "d/empty", "domain": "ledger", "text": ""},
]


def q(qid, evidence, scope=None, cluster="doc", stratum="", **extra):
    return {"qid": qid, "query": f"About {qid}?", "scope": scope or {"doc": "p/tides"}, "cluster": cluster,
            "stratum": stratum, "evidence": evidence, **extra}


def test_documents_questions_clusters_and_strata(tmp_path):
    questions = [
        q("b", [{"doc_id": "p/tides", "text": "Neap tides are weaker."}], answers=["weaker"], nuggets=["n1"]),
        q("a", [{"doc_id": "p/inline", "start": 0, "end": 9}], scope={"domain": "papers"}, cluster="question",
          stratum="domain"),
        q("c", [{"doc_id": "p/tides", "text": "no such sentence"}]),
    ]
    loaded = load_dataset(make_study(tmp_path, DOCS, questions), "papers", selection=None)
    assert [d.doc_id for d in loaded.documents] == ["p/inline", "p/tides"]  # d/empty is in no scope
    a, b = loaded.questions
    assert (a.qid, a.cluster, a.stratum, a.scope) == ("a", "a", "papers", ("p/inline", "p/tides"))
    assert a.evidence[0].text == "Line one."
    assert (b.cluster, b.scope, b.answers, b.nuggets) == ("p/tides", ("p/tides",), ("weaker",), ("n1",))
    assert TIDES[b.evidence[0].start:b.evidence[0].end] == "Neap tides are weaker."
    c = loaded.counts
    assert (
        c["evidence_unlocated"] == 1
        and c["questions_dropped_no_located_evidence"] == 1
        and c["questions"] == 2
    )
    assert c["documents_crlf_normalised"] == 1 and c["documents_dropped_unscoped"] == 1
    assert loaded.documents[0].text == "Line one.\nLine two.\n"


def test_empty_document_is_kept_and_counted(tmp_path):
    questions = [q("e", [{"doc_id": "p/tides", "text": "Spring"}], scope={"docs": ["p/tides", "d/empty"]},
                   cluster="question")]
    loaded = load_dataset(make_study(tmp_path, DOCS, questions), "papers", selection=None)
    assert [d.doc_id for d in loaded.documents] == ["d/empty", "p/tides"]
    assert loaded.counts["documents_empty"] == 1


def test_text_and_span_together_must_agree(tmp_path):
    questions = [q("x", [{"doc_id": "p/tides", "start": 0, "end": 7, "text": "# Tides"},
                         {"doc_id": "p/tides", "start": 0, "end": 7, "text": "# Tidal"}])]
    loaded = load_dataset(make_study(tmp_path, DOCS, questions), "papers", selection=None)
    assert [e.located for e in loaded.questions[0].evidence] == [True, False]
    assert loaded.counts["evidence_span_text_mismatch"] == 1


@pytest.mark.parametrize(
    "documents, questions, message",
    [
        (DOCS + ['{"doc_id": "x", "domain": '], [], r"documents\.jsonl \(record line 4\): not valid JSON"),
        (
            [{"doc_id": "p/both", "domain": "papers", "path": "docs/tides.md", "text": "x"}],
            [],
            r"documents\.jsonl \(record line 1\): document 'p/both' needs exactly one of `path` or `text`",
        ),
        ([{"doc_id": "p/none", "domain": "papers"}], [], r"needs exactly one of `path` or `text`"),
        (
            [{"doc_id": "p/gone", "domain": "papers", "path": "docs/gone.md"}],
            [],
            r"documents\.jsonl \(record line 1\): document 'p/gone': file .*gone\.md not found",
        ),
        (DOCS + [DOCS[0]], [], r"documents\.jsonl \(record line 4\): doc_id 'p/tides' appears twice"),
        ([{"doc_id": "p/x", "domain": 3, "text": "x"}], [], r"field `domain` must be a string, got int"),
        (
            DOCS,
            [q("u", [{"doc_id": "p/unknown", "text": "x"}])],
            r"questions\.jsonl \(record line 1\): evidence names unknown doc_id 'p/unknown'",
        ),
        (DOCS, [q("o", [{"doc_id": "p/inline", "text": "Line"}])], r"evidence doc_id 'p/inline' is outside"),
        (
            DOCS,
            [q("s", [{"doc_id": "p/tides", "start": 5, "end": 500}])],
            r"evidence span \[5, 500\) is not within",
        ),
        (DOCS, [q("n", [])], r"`evidence` must be a non-empty list"),
        (
            DOCS,
            [q("k", [{"doc_id": "p/tides", "text": "x"}], scope={"domain": "nowhere"})],
            r"scope domain 'nowhere' has no documents",
        ),
        (
            DOCS,
            [q("k", [{"doc_id": "p/tides", "text": "x"}], scope={"domain": "papers"})],
            r'cluster "doc" needs a \{"doc": id\} scope',
        ),
        (
            DOCS,
            [
                q(
                    "m",
                    [{"doc_id": "p/tides", "text": "x"}],
                    scope={"docs": ["p/tides", "d/empty"]},
                    cluster="c",
                    stratum="domain",
                )
            ],
            r'stratum "domain" needs a scope within one domain',
        ),
        (
            DOCS,
            [q("d", [{"doc_id": "p/tides", "text": "x"}]), q("d", [{"doc_id": "p/tides", "text": "x"}])],
            r"questions\.jsonl \(record line 2\): qid 'd' is empty or appears twice",
        ),
        (
            DOCS,
            [{"qid": "z", "scope": {"doc": "p/tides"}, "cluster": "doc", "evidence": []}],
            r"questions\.jsonl \(record line 1\): missing field `query`",
        ),
        (
            DOCS,
            [
                q("a", [{"doc_id": "p/tides", "text": "Spring"}]),
                q("e", [{"doc_id": "p/tides", "text": "x"}], query=" \t"),
            ],
            r"questions\.jsonl \(record line 2\): field `query` is empty",
        ),
        (
            DOCS,
            [q("e", [{"doc_id": "p/tides", "text": "x"}], query="")],
            r"questions\.jsonl \(record line 1\): field `query` is empty",
        ),
    ],
)
def test_malformed_records_name_file_and_line(tmp_path, documents, questions, message):
    study = make_study(tmp_path, documents, questions)
    with pytest.raises(InputError, match=message):
        load_dataset(study, "papers", selection=None)


def test_missing_file_and_unknown_dataset(tmp_path):
    study = make_study(tmp_path, DOCS, [])
    (tmp_path / "data" / "questions.jsonl").unlink()
    with pytest.raises(InputError, match=r"questions\.jsonl: file not found"):
        load_dataset(study, "papers", selection=None)
    with pytest.raises(HarnessError, match=r"no dataset `nope` \(have: papers\)"):
        load_dataset(study, "nope", selection=None)


def test_selection_keeps_only_selected_clusters(tmp_path):
    questions = [q("a", [{"doc_id": "p/tides", "text": "Spring"}]),
                 q("b", [{"doc_id": "p/inline", "text": "Line two."}], scope={"doc": "p/inline"})]
    study = make_study(tmp_path, DOCS, questions)
    loaded = load_dataset(study, "papers", selection={"datasets": {"papers": {"adapter": "jsonl",
                                                                              "selected": ["p/inline"]}}})
    assert [q.qid for q in loaded.questions] == ["b"] and [d.doc_id for d in loaded.documents] == ["p/inline"]
    assert loaded.counts["questions_dropped_not_selected"] == 1
    with pytest.raises(HarnessError, match=r"no selection for dataset `papers`; rerun `harness select`"):
        load_dataset(study, "papers", selection={"datasets": {}})


def test_counts_add_up_from_the_files(tmp_path):
    """in the files = kept + dropped by reason, for questions and documents, with and without a selection."""
    questions = [q("a", [{"doc_id": "p/tides", "text": "Spring"}]),
                 q("b", [{"doc_id": "p/inline", "text": "Line two."}], scope={"doc": "p/inline"}),
                 q("c", [{"doc_id": "p/tides", "text": "no such sentence"}]),
                 q("d", [{"doc_id": "p/tides", "text": "Neap"}])]
    study = make_study(tmp_path, DOCS, questions)
    selection = {"datasets": {"papers": {"adapter": "jsonl", "selected": ["p/inline"]}}}
    for chosen, kept, not_selected in ((None, 3, 0), (selection, 1, 2)):
        c = load_dataset(study, "papers", selection=chosen).counts
        assert c["questions_in_input"] == 4 and c["documents_in_input"] == 3
        assert (c["questions"], c["questions_dropped_no_located_evidence"],
                c["questions_dropped_not_selected"]) == (kept, 1, not_selected)
        assert_counts_add_up(c)
        assert c["documents_in_input"] == c["documents"] + c["documents_dropped_unscoped"]


def test_input_files_are_every_file_read(tmp_path):
    study = make_study(tmp_path, DOCS, [q("a", [{"doc_id": "p/tides", "text": "Spring"}])])
    loaded = load_dataset(study, "papers", selection=None)
    assert [f.path for f in loaded.input_files] == ["data/docs/tides.md", "data/documents.jsonl",
                                                    "data/questions.jsonl"]
    assert loaded.input_files[0].sha256 == hashlib.sha256(TIDES.encode()).hexdigest()


# --- shared helpers ----------------------------------------------------------------------------------


def test_read_markdown_normalises_line_endings_and_rejects_non_utf8(tmp_path):
    f = tmp_path / "a.md"
    f.write_bytes(b"one\r\ntwo\rthree\n")
    assert read_markdown(f) == ("one\ntwo\nthree\n", True)
    g = tmp_path / "latin1.md"
    g.write_bytes("caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1\.md: not valid UTF-8 \(byte 3: b'\\xe9'\)"):
        read_markdown(g)
    with pytest.raises(InputError, match=r"absent\.md: Markdown file not found"):
        read_markdown(tmp_path / "absent.md")


def test_locator_verbatim_then_normalised_with_original_offsets():
    text = "Alpha  beta\n\tgamma delta.  Alpha beta gamma"
    loc = TextLocator(text)
    assert loc.locate("Alpha beta gamma") == (27, 43, "verbatim")  # the later, exact occurrence
    assert loc.locate("  beta gamma delta. ") == (7, 25, "normalised")
    assert text[7:25] == "beta\n\tgamma delta."
    assert loc.locate("epsilon") == (None, None, None)
    assert loc.locate("   ") == (None, None, None)


def test_issue23_case7_a_zero_byte_questions_file_is_a_clear_error_naming_it(tmp_path):
    study = make_study(tmp_path, DOCS, [])
    path = tmp_path / "data" / "questions.jsonl"
    assert path.read_bytes() == b""
    with pytest.raises(InputError, match=rf"{path}.*holds no questions \(the file is empty or blank\)"):
        load_dataset(study, "papers", selection=None)


def test_issue23_case7_a_byte_order_mark_is_stripped_and_counted(tmp_path):
    docs = [{"doc_id": "p/tides", "domain": "papers", "path": "docs/tides.md"},
            {"doc_id": "p/inline", "domain": "papers", "text": "\ufeffLine one.\n"}]
    questions = [q("a", [{"doc_id": "p/tides", "text": "Neap tides are weaker."}], scope={"domain": "papers"},
                   cluster="question")]
    study = make_study(tmp_path, docs, questions)
    plain = load_dataset(study, "papers", selection=None)
    (tmp_path / "data/docs/tides.md").write_bytes(b"\xef\xbb\xbf" + TIDES.encode())
    marked = load_dataset(Study.at(study.root), "papers", selection=None)  # a new command: loaded afresh
    texts = {d.doc_id: d.text for d in marked.documents}
    assert texts == {"p/inline": "Line one.\n", "p/tides": TIDES}  # the title is a heading again
    assert marked.counts["texts_bom_stripped"] == 2 and plain.counts["texts_bom_stripped"] == 1
    assert marked.questions == plain.questions


def test_issue23_case7_an_empty_body_is_counted_even_when_its_paper_drops_out(tmp_path):
    (tmp_path / "data/docs").mkdir(parents=True)
    (tmp_path / "data/docs/empty.md").write_bytes(b"")
    docs = [*DOCS[:1], {"doc_id": "p/zero", "domain": "papers", "path": "docs/empty.md"}]
    questions = [q("a", [{"doc_id": "p/tides", "text": "Neap tides are weaker."}]),
                 q("z", [{"doc_id": "p/zero", "text": "Anything at all."}], scope={"doc": "p/zero"})]
    loaded = load_dataset(make_study(tmp_path, docs, questions), "papers", selection=None)
    assert [d.doc_id for d in loaded.documents] == ["p/tides"]
    c = loaded.counts
    assert c["documents_empty"] == 1 and c["documents_dropped_unscoped"] == 1
    assert c["questions_dropped_no_located_evidence"] == 1
