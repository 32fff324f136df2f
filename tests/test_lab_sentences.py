"""Lab sentence units, the fixed character window and the sentence window (issue 16)."""

import pytest

from chunking_support import doc
from harness.chunking.sentences import (
    fixed_window_chunks,
    sentence_units,
    sentence_window_chunks,
    sentence_window_ranges,
)
from harness.errors import InputError


def texts(text):
    return [text[s:e] for s, e in sentence_units(text)]


def test_numbers_and_section_labels_stay_inside_sentences():
    text = "The 1.2-metre telescope is in Section 1.3 of the plan. It weighs 2.5 t! Why? Ask."
    assert texts(text) == [
        "The 1.2-metre telescope is in Section 1.3 of the plan.",
        "It weighs 2.5 t!",
        "Why?",
        "Ask.",
    ]


def test_a_label_ending_a_sentence_splits_after_its_final_period():
    assert texts("See Section 1.3. Then leave.") == ["See Section 1.3.", "Then leave."]


@pytest.mark.parametrize("abbrev", ["e.g.", "i.e.", "Dr.", "No.", "(e.g.", "Prof.", "vs."])
def test_abbreviations_do_not_end_a_sentence(abbrev):
    text = f"Bring tools {abbrev} Smith has them. Done."
    assert texts(text) == [f"Bring tools {abbrev} Smith has them.", "Done."]


def test_headers_are_units_and_units_are_exact_stripped_slices():
    text = "# Title\n\n### 1.3 Zone\nFirst one.  Second\none.\n\n\nThird"
    units = sentence_units(text)
    assert texts(text) == ["# Title", "### 1.3 Zone", "First one.", "Second\none.", "Third"]
    covered = "".join(text[s:e] for s, e in units)
    assert covered.replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    assert all(not text[s].isspace() and not text[e - 1].isspace() for s, e in units)


def test_fixed_window_steps_by_L_minus_50_and_ends_at_the_text_end():
    text = "x" * 1000
    cs = fixed_window_chunks(doc(text), L=450)
    assert [c.spans[0] for c in cs] == [(0, 450), (400, 850), (800, 1000)]
    assert all(c.text == text[s:e] for c in cs for s, e in c.spans)


def test_fixed_window_rejects_an_overlap_not_below_L():
    with pytest.raises(InputError, match="overlap must be an integer in \\[0, L\\)"):
        fixed_window_chunks(doc("abc"), L=50, overlap=50)


# sentences of 20, 10, 10 and 30 characters, one space apart
OVERLAP_TEXT = "Aaaaaaaaaaaaaaaaaaa. Bbbbbbbbb. Ccccccccc. Ddddddddddddddddddddddddddddd."


def test_sentence_window_carries_whole_end_sentences_within_the_overlap_budget():
    units = sentence_units(OVERLAP_TEXT)
    assert [e - s for s, e in units] == [20, 10, 10, 30]
    # L = 42 packs A B C (42 chars); the 21-char tail "Bbbbbbbbb. Ccccccccc." fits a 25-char budget,
    # but then B + C + D (52) exceeds L, so only C (10) is carried: C + D is 41 chars
    assert sentence_window_ranges(units, 42, 25) == [(0, 3), (2, 4)]
    # a budget of 5 carries nothing
    assert sentence_window_ranges(units, 42, 5) == [(0, 3), (3, 4)]
    # with room for B + C + D (52 chars), both end sentences are carried
    assert sentence_window_ranges(units, 53, 25) == [(0, 3), (1, 4)]
    # the whole text (73 chars) fits: one chunk, nothing to carry
    assert sentence_window_ranges(units, 73, 25) == [(0, 4)]


def test_sentence_window_chunks_are_exact_slices_and_a_long_sentence_stands_alone():
    text = "Short one. " + "L" * 80 + ". Tail here."
    cs = sentence_window_chunks(doc(text), L=40, overlap=0)
    assert [c.text for c in cs] == ["Short one.", "L" * 80 + ".", "Tail here."]
    assert all(c.text == text[s:e] for c in cs for s, e in c.spans)
