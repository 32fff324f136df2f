"""Contextual headers, an option of every arm (issue 16): worked examples on an inline handbook.

The prefix is the heading paths of the provisions a chunk touches (each once, in document order), rendered
the way S+T renders its section path; source text, spans and chunk ids never change.
"""

from __future__ import annotations

import json

import pytest

from harness.arms.headers import add_contextual_headers
from harness.arms.builder import BuildInputs
from harness.arms.registry import build_chunks
from harness.config.arm_kinds import get_kind
from harness.chunking import chunk_document
from harness.chunking.provisions import segments, touched_paths
from harness.config import to_plain
from harness.config.arms import ARM
from harness.config.chunking import Chunking
from harness.config.fields import Where, replace
from harness.data.model import Document
from harness.errors import HarnessError

DOC = (
    "# Guide\n"
    "\n"
    "Intro text for every reader.\n"
    "\n"
    "## 1 Access\n"
    "\n"
    "General access rules apply.\n"
    "\n"
    "### 1.1 Keys\n"
    "Keys are issued by the office. Lost keys cost ten euros.\n"
    "\n"
    "### 1.2 Badges\n"
    "Badges expire every year. See Section 1.1 for keys.\n"
)
GUIDE, ACCESS = "Guide", "Guide > 1 Access"
KEYS, BADGES = "Guide > 1 Access > 1.1 Keys", "Guide > 1 Access > 1.2 Badges"
PLAIN = "Just a paragraph without any heading. It has two sentences."


def _span(text: str, first: str, last: str) -> tuple[int, int]:
    start = DOC.index(first)
    return start, DOC.index(last, start) + len(last)


# --- which paths a chunk touches ---


def test_paths_of_the_provisions_a_chunk_touches_in_document_order():
    segs = segments(DOC)
    assert [s.path for s in segs] == [GUIDE, ACCESS, KEYS, BADGES]
    assert touched_paths(segs, [_span(DOC, "Intro", "reader.")]) == [GUIDE]
    # from 1 Access's text across 1.1 into 1.2's heading: three provisions, in document order
    assert touched_paths(segs, [_span(DOC, "General", "### 1.2")]) == [ACCESS, KEYS, BADGES]
    # a chunk of two pieces given out of order (a merge): still document order, each path once
    pieces = [
        _span(DOC, "Badges expire", "year."),
        _span(DOC, "Keys are", "office."),
        _span(DOC, "Lost", "euros."),
    ]
    assert touched_paths(segs, pieces) == [KEYS, BADGES]


def test_a_repeated_heading_path_is_given_once():
    doc = "## Notes\nFirst note.\n\n## Notes\nSecond note.\n"
    segs = segments(doc)
    assert [s.path for s in segs] == ["Notes", "Notes"]
    assert touched_paths(segs, [(0, len(doc))]) == ["Notes"]


def test_text_without_headings_touches_no_path():
    assert touched_paths(segments(PLAIN), [(0, len(PLAIN))]) == []
    doc = "Preamble before any heading.\n\n## A\nBody.\n"
    assert touched_paths(segments(doc), [(0, 10)]) == []  # the preamble has no heading path
    assert touched_paths(segments(doc), [(0, len(doc))]) == ["A"]


# --- built through the arm registry ---


def _build(kind: str, docs, **options):
    chunking = replace(Chunking(), tau_min=1)  # header-led: one chunk per section
    header = {d.doc_id: chunk_document("header-led", d, tau_min=1, tau_max=Chunking().tau_max) for d in docs}
    arm_config = {"kind": kind, **options} if get_kind(kind).settings is not None else options
    return build_chunks(
        get_kind(kind), BuildInputs(docs, chunking, lambda: header, arm=kind, arm_config=arm_config)
    )


def test_sentence_windows_with_headers_worked_example():
    docs = [Document("hb", "", DOC), Document("plain", "", PLAIN)]
    without = _build("sentence", docs, L=60, overlap=0)
    built = _build("sentence", docs, L=60, overlap=0, contextual_headers=True)
    assert [(c.chunk_id, c.text, c.spans) for c in built.chunks] == [
        (c.chunk_id, c.text, c.spans) for c in without.chunks
    ]
    by_text = {c.text: c for c in built.chunks}
    keys = by_text["Keys are issued by the office. Lost keys cost ten euros."]
    assert keys.indexed_text == f"{KEYS}\n\nKeys are issued by the office. Lost keys cost ten euros."
    plain = [c for c in built.chunks if c.doc_id == "plain"]
    assert plain and all(c.indexed_text == c.text for c in plain)  # no headings: no prefix
    for c in built.chunks:
        segs = segments(DOC if c.doc_id == "hb" else PLAIN)
        paths = touched_paths(segs, c.spans)
        assert c.indexed_text == ("\n".join(paths) + "\n\n" + c.text if paths else c.text)
    counts = built.manifest["contextual_headers"]
    assert counts["documents_without_headings"] == 1 and counts["documents_without_headings_ids"] == ["plain"]
    assert counts["chunks_without_headers"] == len(plain)
    assert counts["chunks_with_headers"] + counts["chunks_without_headers"] == len(built.chunks)
    assert counts["chunks_with_several_paths"] == sum(len(touched_paths(segments(DOC), c.spans)) > 1
                                                      for c in built.chunks if c.doc_id == "hb")
    assert "contextual_headers" not in without.manifest


def test_s_with_headers_renders_a_one_section_chunk_exactly_as_s_plus_t():
    docs = [Document("hb", "", DOC)]
    s = _build("S", docs, contextual_headers=True).chunks
    st = _build("S+T", docs).chunks
    assert [c.text for c in s] == [c.text for c in st]
    one_section = [(a, b) for a, b in zip(s, st) if touched_paths(segments(DOC), a.spans) == [a.section_path]]
    assert one_section  # the worked example has such chunks
    assert all(a.indexed_text == b.indexed_text for a, b in one_section)


def test_headers_go_before_the_arms_own_rendering():
    docs = [Document("hb", "", DOC)]
    own = _build("provisions", docs, L=450).chunks
    both = _build("provisions", docs, L=450, contextual_headers=True).chunks
    badges = [(a, b) for a, b in zip(own, both) if a.text.startswith("### 1.2")]
    assert len(badges) == 1
    a, b = badges[0]
    assert "↳ Section 1.1 Keys:" in a.indexed_text  # the provision arm's resolved reference is kept
    assert b.indexed_text == f"{BADGES}\n\n{a.indexed_text}"


def test_a_chunk_of_an_unknown_document_is_an_error_naming_the_arm():
    chunks = _build("sentence", [Document("hb", "", DOC)], L=60, overlap=0).chunks
    with pytest.raises(HarnessError, match=r"arm `sw`: chunk hb#0000-\w+ belongs to document 'hb'"):
        add_contextual_headers(chunks, [Document("other", "", PLAIN)], arm="sw")


# --- the option in the config ---


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": "S"},
        {"kind": "F512c"},
        {"kind": "sentence", "L": 300},
        {"kind": "provisions"},
        {"kind": "E", "model": "m"},
        {"kind": "CR", "model": "m"},
        {"kind": "M", "of": "E"},
        {"kind": "E-no-title"},
    ],
)
def test_every_arm_schema_takes_the_option_and_leaves_it_out_when_unset(raw):
    on = ARM({**raw, "contextual_headers": True}, Where(None, ("arms", "x")))
    assert on.contextual_headers is True and to_plain(on)["contextual_headers"] is True
    off = ARM(raw, Where(None, ("arms", "x")))
    assert "contextual_headers" not in to_plain(off)  # an arm without it keeps its recorded config and hash


def test_the_option_is_refused_where_it_cannot_apply():
    with pytest.raises(
        HarnessError, match=r"arms\.x\.contextual_headers.*expanded at retrieval time.*its `of:` arm \(E\)"
    ):
        ARM({"kind": "E+KX", "of": "E", "contextual_headers": True}, Where(None, ("arms", "x")))
    with pytest.raises(HarnessError, match=r"arms\.x\.contextual_headers.*true or false"):
        ARM({"kind": "S", "contextual_headers": "yes"}, Where(None, ("arms", "x")))


def test_chunk_cli_takes_the_option(tmp_path, capsys):
    from harness.cli.main import main

    path = tmp_path / "hb.md"
    path.write_text(DOC, encoding="utf-8")
    assert main(["chunk", "--arm", "P", "--contextual-headers", str(path)]) == 0
    chunks = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # the paragraphs are short, so P packs the whole guide into one chunk: it touches all four headings
    assert [c["text"] for c in chunks] == [DOC.rstrip("\n")]
    assert chunks[0]["indexed_text"] == f"{GUIDE}\n{ACCESS}\n{KEYS}\n{BADGES}\n\n{DOC.rstrip()}"
    assert main(["chunk", "--arm", "P", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["indexed_text"] == DOC.rstrip("\n")  # off by default
