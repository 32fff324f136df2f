"""Rolling key dictionary and exact enrichment prompt renderings (DESIGN section 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_study import chunks_for

from harness.arms.enrich import enrich_prompt_values, previous_summary_text
from harness.arms.keydict import EMPTY_RENDERING, NOT_PROVIDED, KeyDictionary
from harness.errors import HarnessError
from harness.llm.prompts import PromptTemplate

ROOT = Path(__file__).resolve().parents[1]


def test_dictionary_counts_orders_by_recency_and_normalises():
    keys = KeyDictionary()
    assert keys.render() == EMPTY_RENDERING == "(none yet — this is the first chunk)"
    keys.observe("  Model Training ", 0)
    keys.observe("datasets", 1)
    keys.observe("MODEL TRAINING", 2)
    keys.observe("", 3)  # an empty key is ignored
    assert keys.keys_by_recency() == ["model training", "datasets"]
    assert keys.render() == "- model training (seen 2 x)\n- datasets (seen 1 x)"


def test_dictionary_keeps_the_40_most_recently_used():
    keys = KeyDictionary()
    for i in range(40):
        keys.observe(f"k{i}", i)
    keys.observe("k0", 40)  # k0 becomes most recent, so k1 is now the oldest
    keys.observe("new", 41)
    assert len(keys) == 40 and keys.evictions == 1
    assert "k1" not in keys and "k0" in keys
    order = keys.keys_by_recency()
    assert order[:3] == ["new", "k0", "k39"] and order[-1] == "k2"
    keys.observe("k1", 42)  # an evicted key comes back with a fresh count
    assert keys.count("k1") == 1 and keys.evictions == 2 and "k2" not in keys


def test_related_keys_must_predate_the_call():
    keys = KeyDictionary()
    keys.observe("alpha", 0)
    keys.observe("beta", 1)
    related = keys.filter_related([" Beta", "gamma", "alpha", "beta", "alpha key"], own_key="alpha")
    assert related == ["beta"]  # own key, unknown keys and duplicates dropped
    with pytest.raises(ValueError, match="capacity must be >= 1, got 0"):
        KeyDictionary(capacity=0)


ENRICH = PromptTemplate.load(ROOT / "prompts", "enrich.txt")


def expected_prompt(section: str, position: str, previous: str, dictionary: str, text: str) -> str:
    return (
        ENRICH.text.replace("{section_path}", section)
        .replace("{position}", position)
        .replace("{previous_summary}", previous)
        .replace("{key_dictionary}", dictionary)
        .replace("{chunk_text}", text)
    )


def test_first_chunk_prompt_is_exact():
    _, chunks = chunks_for("d", [("", "Opening words."), ("Intro", "Second.")])
    prompt = ENRICH.render(
        enrich_prompt_values(chunks[0], 0, 2, previous_summary_text(0, None), KeyDictionary().render())
    )
    assert (
        "Section: (no section)\n- Chunk 1 of 2 in the document\n- What the chunk before it said: (first "
        "chunk)"
        in prompt
    )
    assert (
        "most recent first:\n(none yet — this is the first chunk)\n\nThe chunk:\n<<<\nOpening words.\n>>>"
        in prompt
    )
    assert prompt == expected_prompt(
        "(no section)", "1 of 2", "(first chunk)", EMPTY_RENDERING, "Opening words."
    )
    assert "{" + "chunk_text}" not in prompt and '"entities"' in prompt


def test_literal_json_braces_in_a_template_survive_rendering(tmp_path):
    (tmp_path / "t.txt").write_text('Reply like {"key": "x", "n": [1, 2]} for {name}.')
    assert (
        PromptTemplate.load(tmp_path, "t.txt").render({"name": "it"})
        == 'Reply like {"key": "x", "n": [1, 2]} for it.'
    )


def test_missing_previous_summary_and_dictionary_lines():
    _, chunks = chunks_for("d", [("A", "One."), ("A > B", "Two {with braces}.")])
    keys = KeyDictionary()
    keys.observe("first topic", 0)
    failed_previous = {"summary": "", "llm_failed": True}
    prompt = ENRICH.render(
        enrich_prompt_values(chunks[1], 1, 2, previous_summary_text(1, failed_previous), keys.render())
    )
    assert prompt == expected_prompt(
        "A > B", "2 of 2", "(unavailable)", "- first topic (seen 1 x)", "Two {with braces}."
    )
    assert previous_summary_text(1, {"summary": "It said one.", "llm_failed": False}) == "It said one."
    assert previous_summary_text(1, {"summary": "", "llm_failed": False}) == "(unavailable)"


def test_e_k_prompt_says_not_provided():
    _, chunks = chunks_for("d", [("S", "Only.")])
    prompt = ENRICH.render(
        enrich_prompt_values(chunks[0], 0, 1, previous_summary_text(0, None), NOT_PROVIDED)
    )
    assert "most recent first:\n(not provided)\n\nThe chunk:" in prompt
    assert prompt == expected_prompt("S", "1 of 1", "(first chunk)", "(not provided)", "Only.")


def test_template_errors_name_the_file(tmp_path):
    (tmp_path / "t.txt").write_text("Hello {name} and {other}")
    with pytest.raises(HarnessError, match=r"t\.txt: no value for placeholder\(s\) other"):
        PromptTemplate.load(tmp_path, "t.txt").render({"name": "x"})
    with pytest.raises(HarnessError, match=r"prompt template .*missing\.txt not found"):
        PromptTemplate.load(tmp_path, "missing.txt")


def test_flagship_and_demo_prompts_are_the_same_files():
    names = sorted(p.name for p in (ROOT / "prompts").glob("*.txt"))
    assert names == [
        "consolidate_keys.txt", "contextual.txt", "enrich.txt", "enrich_paraphrase.txt", "judge_nugget.txt",
        "pf_keywords.txt",
        "pf_questions.txt", "pf_summary.txt", "pf_title.txt", "reader.txt", "rerank_yes.txt",
    ]
    for name in names:
        assert (ROOT / "examples/demo/prompts" / name).read_bytes() == (ROOT / "prompts" / name).read_bytes()
