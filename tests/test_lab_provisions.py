"""Provision detection and cross-reference resolution (issue 16)."""

import pytest

from chunking_support import doc
from harness.chunking.provisions import provision_chunks, reference_targets, segments
from harness.errors import InputError

LONG_BODY = " ".join(f"Rule {i} applies to every member of the club." for i in range(12))  # > 320 chars
TEXT = f"""# Guide

Intro text.

## 1 Terms

### 1.1 Dark window
A dark window lasts 90 minutes. It starts at dusk.

#### Notes
An unnumbered level-4 heading is a provision too.

## 2.1 Gate hours
The gate closes before the window in Section 1.1. See Section 1.1 again.
Section 9.9 does not exist. Section 2.1 is this provision.

## 3 Long
### 3.1 Many rules
{LONG_BODY}

## 4 Users
Refer to Section 3.1 for the rules.
"""


def test_provisions_are_level_3_plus_or_numbered_headings():
    segs = segments(TEXT)
    got = [(TEXT[s.start:s.end].splitlines()[0], s.pid, s.is_provision) for s in segs]
    assert got == [
        ("# Guide", None, False),
        ("## 1 Terms", None, False),
        ("### 1.1 Dark window", "1.1", True),
        ("#### Notes", None, True),
        ("## 2.1 Gate hours", "2.1", True),
        ("## 3 Long", None, False),
        ("### 3.1 Many rules", "3.1", True),
        ("## 4 Users", None, False),
    ]
    assert segs[2].path == "Guide > 1 Terms > 1.1 Dark window"


def by_heading(chunks, heading):
    return [c for c in chunks if c.text.startswith(heading)]


def test_chunks_are_exact_slices_with_the_heading_path_as_indexed_prefix():
    d = doc(TEXT)
    cs = provision_chunks(d)
    assert all(c.text == TEXT[s:e] for c in cs for s, e in c.spans)
    (dark,) = by_heading(cs, "### 1.1")
    assert dark.indexed_text == f"[Guide > 1 Terms > 1.1 Dark window] {dark.text}"
    assert dark.section_path == "Guide > 1 Terms > 1.1 Dark window"


def test_a_reference_appends_the_target_once_and_skips_unknown_and_self_references():
    (gate,) = by_heading(provision_chunks(doc(TEXT)), "## 2.1")
    appended = gate.indexed_text.split("\n↳ ")[1:]
    assert appended == ["Section 1.1 Dark window: A dark window lasts 90 minutes. It starts at dusk."]


def test_the_appended_excerpt_is_capped_at_320_characters():
    (users,) = by_heading(provision_chunks(doc(TEXT)), "## 4 Users")
    (line,) = users.indexed_text.split("\n↳ ")[1:]
    prefix = "Section 3.1 Many rules: "
    assert line.startswith(prefix) and len(LONG_BODY) > 320
    assert line[len(prefix):] == LONG_BODY[:320]
    assert (
        len(
            by_heading(provision_chunks(doc(TEXT), ref_chars=40), "## 4 Users")[0].indexed_text.split(
                ": ", 1
            )[1]
        )
        == 40
    )


def test_resolution_can_be_switched_off_and_never_changes_source_text():
    on, off = provision_chunks(doc(TEXT)), provision_chunks(doc(TEXT), resolve_refs=False)
    assert [c.text for c in on] == [c.text for c in off]
    assert not any("↳" in c.indexed_text for c in off)
    assert sum("↳" in c.indexed_text for c in on) == 2


def test_a_long_provision_is_split_on_sentences_without_crossing_its_boundary():
    cs = provision_chunks(doc(TEXT), L=120)
    seg = next(s for s in segments(TEXT) if s.pid == "3.1")
    inside = [c for c in cs if seg.start <= c.spans[0][0] < seg.end]
    assert len(inside) > 2
    assert all(c.spans[0][1] <= seg.end and len(c.text) <= 120 for c in inside)
    assert all(c.text.endswith(".") or c.text.endswith("rules") for c in inside)
    assert all(c.indexed_text.startswith("[Guide > 3 Long > 3.1 Many rules] ") for c in inside)


def test_the_reference_pattern_is_configurable_and_must_capture_an_id():
    text = "### 1.1 Term\nA term.\n\n### 1.2 Use\nSee §1.1 here.\n"
    (use,) = by_heading(provision_chunks(doc(text), ref_pattern=r"§(\d+\.\d+)"), "### 1.2")
    assert use.indexed_text.endswith("\n↳ Section 1.1 Term: A term.")
    with pytest.raises(InputError, match="needs a group"):
        provision_chunks(doc(text), ref_pattern=r"§\d+")


def test_reference_targets_link_any_chunk_to_the_chunks_overlapping_the_provision():
    text = "### 1.1 Term\nA term.\n\n### 1.2 Use\nSee Section 1.1 here.\n"
    spans = [(0, 20), (15, 30), (30, len(text))]
    # only the last chunk cites 1.1; provision 1.1 is [0, 22), which chunks 0 and 1 overlap
    assert reference_targets(text, spans) == [(2, 0), (2, 1)]
