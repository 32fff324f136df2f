"""Key-based merging (M) and M-TP consolidation: worked next-fit examples, merged fields, orphans, spans."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arms_support import doc_chunks, e_chunk, sized
from harness.arms.consolidate import (
    MappingOutcomes,
    apply_mapping,
    consolidate_and_merge,
    key_list_text,
    keys_in_first_use_order,
    parse_mapping_answer,
)
from harness.arms.merge import (
    TAU_MERGE,
    merge_by_keys,
    merge_document,
    merge_fragments,
    merged_fragment_ids,
    next_fit_bins,
)
from harness.arms.addon_descriptives import (
    key_reuse_rate,
    long_merged_share,
    mapping_outcomes,
    merges_per_document,
)
from harness.arms.render import render_enriched
from harness.chunking.header_led import header_led_chunks
from harness.data.model import Document, make_chunk_id
from harness.errors import InputError


def lengths(chunks):
    return [len(c.text) for c in chunks]


# --- next-fit worked examples -------------------------------------------------------------------------


def test_bin_exactly_at_the_cap_including_separators_is_merged():
    chunks = [sized(0, 1000, "k"), sized(1, 998, "k"), sized(2, 998, "k")]  # 1000 + 2 + 998 + 2 + 998
    merged = merge_document(chunks)
    assert lengths(merged) == [3000]
    assert merged[0].text == "\n\n".join(c.text for c in chunks)
    assert merge_by_keys(chunks).merges == {"d/doc.md": 2}


def test_one_character_over_the_cap_opens_a_new_bin():
    chunks = [sized(0, 1000, "k"), sized(1, 998, "k"), sized(2, 999, "k")]  # would be 3,001
    merged = merge_document(chunks)
    assert lengths(merged) == [2000, 999]
    assert merged[1] == render_enriched(chunks[2])  # alone: the E chunk, id and all
    assert merge_by_keys(chunks).merges == {"d/doc.md": 1}


def test_next_fit_never_revisits_an_earlier_bin():
    # 2000 + 2 + 900 would fit, but the 1500 chunk has already closed the first bin
    assert next_fit_bins([2000, 1500, 900]) == [[0], [1, 2]]
    assert next_fit_bins([2000, 1500, 900], tau_merge=2902) == [[0], [1, 2]]
    assert next_fit_bins([1000, 998, 998]) == [[0, 1, 2]]
    assert next_fit_bins([1000, 998, 999]) == [[0, 1], [2]]
    assert next_fit_bins([]) == []


def test_a_chunk_longer_than_the_cap_stays_alone_unchanged():
    chunks = [sized(0, 100, "k"), sized(1, TAU_MERGE + 1, "k"), sized(2, 100, "k"), sized(3, 100, "k")]
    merged = merge_document(chunks)
    assert merged[0] == render_enriched(chunks[0])  # the long chunk closed its bin, never revisited
    assert merged[1] == render_enriched(chunks[1])
    assert merged[1].text == chunks[1].text and merged[1].chunk_id == chunks[1].chunk_id
    assert merged_fragment_ids(merged[2]) == [chunks[2].chunk_id, chunks[3].chunk_id]
    assert len(merged) == 3


# --- grouping, merged fields, order and ids -----------------------------------------------------------


def test_groups_by_exact_key_whatever_the_distance_and_sorts_by_start_line():
    chunks = [
        e_chunk(0, "alpha one", "a", section="A", keywords=("z", "m"), questions=("q2?",), related=("x",)),
        e_chunk(1, "beta one", "b", section="B"),
        e_chunk(
            2, "alpha two", "a", section="C", keywords=("m", "b"), questions=("q1?",), related=("y", "x")
        ),
        e_chunk(3, "beta two", "b", section="D"),
        e_chunk(4, "Alpha three", "A"),  # a different key: exact match only
    ]
    merged = merge_document(chunks)
    assert [c.text for c in merged] == ["alpha one\n\nalpha two", "beta one\n\nbeta two", "Alpha three"]
    first = merged[0]
    assert first.section_path == "A"
    assert first.generated["title"] == "title 0" and first.generated["summary"] == "summary 0"
    assert first.generated["key"] == "a"
    assert first.generated["keywords"] == ["b", "m", "z"]
    assert first.generated["questions"] == ["q1?", "q2?"]
    assert first.generated["related_keys"] == ["x", "y"]
    assert first.spans == chunks[0].spans + chunks[2].spans
    assert (first.start_line, first.end_line) == (chunks[0].start_line, chunks[2].end_line)
    assert first.chunk_id == make_chunk_id("d/doc.md", 0, first.text)
    assert merged[1].chunk_id == make_chunk_id("d/doc.md", 1, merged[1].text)
    assert merged[2].chunk_id == chunks[4].chunk_id


def test_merged_chunks_are_indexed_with_the_e_rendering():
    chunks = [e_chunk(0, "alpha one", "a", keywords=("k2",)), e_chunk(1, "alpha two", "a", keywords=("k1",))]
    (merged,) = merge_document(chunks)
    assert (
        merged.indexed_text == "title 0\nsummary 0\nk1, k2\nquestion 0? question 1?\n\nalpha one\n\nalpha two"
    )
    assert merged == render_enriched(merged)


def test_merge_is_deterministic_and_fragment_order_does_not_matter():
    chunks = [e_chunk(0, "x one", "k", keywords=("b", "a")), e_chunk(1, "x two", "k", keywords=("a", "c"))]
    assert merge_document(chunks) == merge_document(list(chunks))
    assert merge_fragments(chunks[::-1], 0) == merge_fragments(chunks, 0)


def test_merges_are_counted_per_document():
    a = doc_chunks(["k", "k", "j", "j", ""], doc_id="d/a.md")
    b = doc_chunks(["k", "j"], doc_id="d/b.md")
    result = merge_by_keys(a + b)
    assert result.merges == {"d/a.md": 2, "d/b.md": 0}
    assert len(result.chunks) == 3 + 2
    assert merges_per_document(result.merges).distribution == {0: 1, 2: 1}


def test_interleaved_documents_are_refused():
    a = doc_chunks(["k", "k"], doc_id="d/a.md")
    b = doc_chunks(["k"], doc_id="d/b.md")
    with pytest.raises(InputError, match="not contiguous"):
        merge_by_keys([a[0], b[0], a[1]])


def test_a_chunk_without_generated_fields_is_refused():
    with pytest.raises(InputError, match="no generated fields"):
        merge_document([replace(sized(0, 10, "k"), generated=None)])


# --- keyless chunks and orphan context -----------------------------------------------------------------


def test_keyless_chunks_are_never_merged_even_when_adjacent():
    chunks = doc_chunks(["", "", "", ""], length=300)
    merged = merge_document(chunks)
    assert merged == [render_enriched(c) for c in chunks]


def test_short_keyless_chunk_gets_section_previous_and_next_lines():
    chunks = [
        e_chunk(0, "before " * 40, "a", summary="The setup."),
        e_chunk(1, "short orphan", "", section="Guide > Install"),
        e_chunk(2, "after " * 40, "b", summary="The   teardown.\n"),
    ]
    orphan = merge_document(chunks)[1]
    assert orphan.text == "short orphan"  # source text untouched
    assert orphan.chunk_id == chunks[1].chunk_id
    assert orphan.indexed_text == (
        "title 1\nsummary 1\nkw1\nquestion 1?\n\n"
        "[Section: Guide > Install]\n[Previous: The setup.]\n[Next: The teardown.]\n\nshort orphan"
    )


def test_orphan_lines_leave_out_missing_neighbours_and_sections():
    chunks = [e_chunk(0, "first orphan", "", section=""), e_chunk(1, "x" * 300, "k", summary="Later.")]
    assert merge_document(chunks)[0].indexed_text.endswith("question 0?\n\n[Next: Later.]\n\nfirst orphan")


def test_keyless_chunk_of_tau_orphan_characters_gets_no_context_and_199_does():
    at = [sized(0, 300, "k"), sized(1, 200, ""), sized(2, 300, "j")]
    below = [sized(0, 300, "k"), sized(1, 199, ""), sized(2, 300, "j")]
    assert merge_document(at)[1] == render_enriched(at[1])
    assert "[Previous: summary 0]" in merge_document(below)[1].indexed_text


# --- property: spans of merged chunks reproduce every fragment's source ----------------------------------

WORD = st.text(alphabet="abcxyz éü日", min_size=1, max_size=10)
PARAGRAPH = st.lists(WORD, min_size=1, max_size=60).map(" ".join)
SECTION = st.tuples(st.integers(1, 3), WORD, st.lists(PARAGRAPH, min_size=1, max_size=4))


@st.composite
def keyed_document(draw):
    sections = draw(st.lists(SECTION, min_size=1, max_size=8))
    text = "\n\n".join(
        "#" * level + " " + title + "\n\n" + "\n\n".join(paras) for level, title, paras in sections
    )
    document = Document("t/doc.md", "test", text)
    chunks = header_led_chunks(
        document, tau_min=draw(st.integers(0, 50)), tau_max=draw(st.integers(50, 1500))
    )
    keys = draw(st.lists(st.sampled_from(["", "a", "b", "c"]), min_size=len(chunks), max_size=len(chunks)))
    fake = [e_chunk(i, c.text, k).generated for i, (c, k) in enumerate(zip(chunks, keys))]
    return document, [replace(c, generated=g) for c, g in zip(chunks, fake)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_document(), st.integers(50, 3000))
def test_merged_spans_reproduce_every_fragment_source_text(doc_and_chunks, tau_merge):
    document, chunks = doc_and_chunks
    by_id = {c.chunk_id: c for c in chunks}
    merged = merge_document(chunks, tau_merge=tau_merge)
    fragment_ids = []
    for m in merged:
        fragments = [by_id[i] for i in merged_fragment_ids(m)] or [by_id[m.chunk_id]]
        fragment_ids += [f.chunk_id for f in fragments]
        assert m.spans == tuple(s for f in fragments for s in f.spans)
        assert [document.text[a:b] for a, b in m.spans] == [
            document.text[a:b] for f in fragments for a, b in f.spans
        ]
        assert m.text == "\n\n".join(f.text for f in fragments)
        if len(fragments) > 1:
            assert len({f.generated["key"] for f in fragments}) == 1 and fragments[0].generated["key"]
            assert len(m.text) <= tau_merge
    assert sorted(fragment_ids) == sorted(by_id)  # every E chunk in exactly one output chunk
    assert [m.start_line for m in merged] == sorted(m.start_line for m in merged)


# --- M-TP consolidation ----------------------------------------------------------------------------------


def answer(*pairs):
    return {"mapping": [{"key": k, "canonical": c} for k, c in pairs]}


KEYS = ["install steps", "installation", "config", "routing"]
CONSOLIDATED = {
    "install steps": "installation",
    "installation": "installation",
    "config": "config",
    "routing": "routing",
}


def test_keys_are_listed_in_order_of_first_use_with_counts():
    chunks = doc_chunks(["b", "", "a", "b", "c"])
    assert keys_in_first_use_order(chunks) == [("b", 2), ("a", 1), ("c", 1)]
    assert key_list_text([("b", 2), ("a", 1)]) == "- b (2 chunks)\n- a (1 chunk)"


def test_valid_mapping_remaps_and_keeps():
    parsed = parse_mapping_answer(
        answer(
            ("install steps", "installation"),
            ("installation", "installation"),
            ("config", "config"),
            ("routing", "routing"),
        )
    )
    result = apply_mapping(KEYS, parsed)
    assert result.mapping == CONSOLIDATED
    assert result.outcomes == MappingOutcomes(kept=3, remapped=1)


def test_partial_mapping_leaves_missing_keys_unchanged():
    result = apply_mapping(KEYS, parse_mapping_answer(answer(("Install Steps ", "INSTALLATION"))))
    assert result.mapping == CONSOLIDATED
    assert result.outcomes == MappingOutcomes(remapped=1, missing=3)


def test_mapping_to_a_key_not_on_the_list_is_invalid_and_ignored():
    parsed = parse_mapping_answer(
        answer(
            ("install steps", "setup"),
            ("installation", "setup"),
            ("config", "config"),
            ("routing", ""),
            (7, "x"),
        )
    )
    result = apply_mapping(KEYS, parsed)
    assert result.mapping == {k: k for k in KEYS}
    assert result.outcomes == MappingOutcomes(kept=1, invalid=3)


@pytest.mark.parametrize("raw", [None, "not json", [], {"mapping": "x"}, {"keys": []}])
def test_unparseable_answer_leaves_every_key_unchanged(raw):
    assert parse_mapping_answer(raw) is None
    result = apply_mapping(KEYS, parse_mapping_answer(raw))
    assert result.mapping == {k: k for k in KEYS}
    assert result.outcomes == MappingOutcomes(unparseable=4)


def test_consolidation_then_merges_as_m():
    chunks = doc_chunks(["install steps", "config", "installation", ""])
    merged, consolidation = consolidate_and_merge(chunks, answer(("install steps", "installation")))
    assert consolidation.outcomes == MappingOutcomes(remapped=1, missing=2)
    assert [merged_fragment_ids(c) for c in merged] == [[chunks[0].chunk_id, chunks[2].chunk_id], [], []]
    assert merged[0].generated["key"] == "installation"
    unmerged, nothing = consolidate_and_merge(chunks, "garbled")
    assert unmerged == merge_document(chunks) and nothing.outcomes.unparseable == 3
    total = mapping_outcomes([consolidation.outcomes, nothing.outcomes])
    assert total == MappingOutcomes(remapped=1, missing=2, unparseable=3)


def test_mapping_is_applied_in_one_step_not_chased():
    result = apply_mapping(["a", "b", "c"], parse_mapping_answer(answer(("a", "b"), ("b", "c"), ("c", "c"))))
    assert result.mapping == {"a": "b", "b": "c", "c": "c"}


# --- descriptives on merged sets ------------------------------------------------------------------------


def test_key_reuse_rate_is_pooled_over_chunks():
    a = doc_chunks(["k", "k", "k", "j"], doc_id="d/a.md")  # 2 of 4 keyed chunks reuse
    b = doc_chunks(["x", "", "y"], doc_id="d/b.md")  # 0 of 2
    assert key_reuse_rate(a + b) == round(2 / 6, 6)  # a per-document mean would give 0.25
    assert key_reuse_rate(doc_chunks(["", ""])) == 0.0


def test_share_of_merged_chunks_over_512_tokens():
    long_pair = [e_chunk(0, "word " * 280, "k"), e_chunk(1, "text " * 280, "k")]  # 2,802 chars, ~560 tokens
    short_pair = [e_chunk(2, "tiny", "j"), e_chunk(3, "bits", "j"), e_chunk(4, "alone " * 600, "z")]
    share = long_merged_share(merge_document(long_pair + short_pair))
    assert (share.merged_chunks, share.over_limit, share.share) == (2, 1, 0.5)


@pytest.mark.parametrize("name, value", [("tau_merge", -1), ("tau_orphan", 2.5), ("tau_merge", True)])
def test_bad_thresholds_are_refused_by_name(name, value):
    with pytest.raises(InputError, match=f"{name} must be a non-negative integer"):
        merge_document(doc_chunks(["k", "k"]), **{name: value})


def test_the_frozen_consolidation_prompt_takes_the_key_list():
    from pathlib import Path

    from harness.llm.prompts import PromptTemplate

    template = PromptTemplate.load(Path(__file__).resolve().parents[1] / "prompts", "consolidate_keys.txt")
    assert template.placeholders == ("key_list",)
    prompt = template.render({"key_list": key_list_text([("install steps", 2), ("installation", 1)])})
    assert "- install steps (2 chunks)\n- installation (1 chunk)" in prompt
