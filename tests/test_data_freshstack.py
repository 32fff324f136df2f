"""FreshStack adapter on synthetic queries/corpus/qrels that point into the real Laravel docs checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from data_support import CHECKOUT, assert_counts_add_up, freshstack_study, read, span_after, write_jsonl

from harness.config.datasets import FreshStackDomain
from harness.data import freshstack
from harness.data.common import InputReader
from harness.data.load import load_dataset
from harness.errors import HarnessError, InputError

pytestmark = pytest.mark.skipif(not (CHECKOUT / "helpers.md").is_file(),
                                reason="../shared/data/laravel-docs-724c31cc is absent")
N_MARKDOWN = 98  # 97 pages + license.md


def test_corpus_ids_split_offsets_from_the_right():
    parsed = freshstack.parse_corpus_id("docs/my_file_name.md_10_250")
    assert parsed == freshstack.CorpusId("docs/my_file_name.md", 10, 250)
    assert freshstack.parse_corpus_id("docs/readme.md_10") is None
    assert freshstack.parse_corpus_id("docs/readme.md_a_10") is None


def test_gold_is_sliced_by_characters_not_bytes(tmp_path):
    loaded = load_dataset(freshstack_study(tmp_path), "fs", selection=None)
    q1 = next(q for q in loaded.questions if q.qid == "q1")
    helpers = next(e for e in q1.evidence if e.doc_id == "laravel/helpers.md")
    text = read("helpers.md")
    assert "€" in text[:helpers.start]  # non-ASCII before the span: byte and character offsets differ
    raw = (CHECKOUT / "helpers.md").read_bytes()
    assert raw[helpers.start:helpers.end].decode("utf-8", "replace") != helpers.text
    assert helpers.text == text[helpers.start:helpers.end]
    assert helpers.text.startswith("## `Number::defaultCurrency()`")
    assert q1.query == "Default currency How do I read it?" and q1.answers == (
        "Use Number::defaultCurrency.",
    )
    assert q1.nuggets == ("Number::defaultCurrency returns it",)
    assert (q1.cluster, q1.stratum) == ("q1", "laravel")


def test_non_markdown_gold_dropped_and_mismatch_counted(tmp_path):
    loaded = load_dataset(freshstack_study(tmp_path), "fs", selection=None)
    c = loaded.counts
    assert c["gold_non_markdown"] == 1 and c["gold_text_mismatch"] == 1
    assert c["questions_dropped_no_located_gold"] == 1 and c["gold_located"] == 3
    assert [q.qid for q in loaded.questions] == ["q1", "q3"]  # q2 had only non-Markdown and mismatched gold


def test_mismatched_gold_is_kept_unlocated_when_the_question_has_other_gold(tmp_path):
    extra = {"query_id": "q4", "query_text": "Mixed", "nuggets": [
        {"_id": "q4_0", "text": "n", "non_relevant_corpus_ids": [],
         "relevant_corpus_ids": ["docs/routing.md_0_10", "docs/missing.md_0_5"]}]}
    study = freshstack_study(tmp_path, extra_queries=[extra])
    r0, r1 = span_after("routing.md", "## Basic Routing", 120)
    write_jsonl(tmp_path / "data" / "corpus.jsonl", [
        {"_id": "docs/routing.md_0_10", "text": "wrong text"},
        {"_id": "docs/missing.md_0_5", "text": "abcde"},
        {"_id": f"docs/routing.md_{r0}_{r1}", "text": read("routing.md")[r0:r1]},
    ])
    extra["nuggets"][0]["relevant_corpus_ids"].append(f"docs/routing.md_{r0}_{r1}")
    write_jsonl(tmp_path / "data" / "queries.jsonl", [extra])
    loaded = load_dataset(study, "fs", selection=None)
    (q4,) = loaded.questions
    assert [(e.doc_id, e.located) for e in q4.evidence] == [
        ("laravel/missing.md", False), ("laravel/routing.md", False), ("laravel/routing.md", True)]
    assert loaded.counts["gold_file_missing"] == 1 and loaded.counts["gold_text_mismatch"] == 1


def test_qrels_file_overrides_nugget_gold(tmp_path):
    b0, b1 = span_after("blade.md", "## Displaying Data", 150)
    qrels = [("q1", f"docs/blade.md_{b0}_{b1}", 1), ("q3", "docs/routing.md_0_10", 0)]
    study = freshstack_study(tmp_path, qrels_rows=qrels)
    loaded = load_dataset(study, "fs", selection=None)
    assert [q.qid for q in loaded.questions] == ["q1"]
    assert [e.doc_id for e in loaded.questions[0].evidence] == ["laravel/blade.md"]


def test_scope_is_the_pooled_domain_corpus_with_seeded_distractors(tmp_path):
    loaded = load_dataset(freshstack_study(tmp_path, ratio=2), "fs", selection=None)
    gold = ["blade.md", "helpers.md", "routing.md"]
    candidates = sorted(p.name for p in CHECKOUT.glob("*.md") if p.name not in gold)
    expected = freshstack.draw_distractors(candidates, 3, 2, 7)
    assert len(expected) == 6
    scope = tuple(sorted(f"laravel/{p}" for p in gold + expected))
    assert all(q.scope == scope for q in loaded.questions)
    assert [d.doc_id for d in loaded.documents] == list(scope)
    assert loaded.counts["distractors"] == 6 and loaded.counts["gold_files"] == 3


def test_distractor_draw_is_seeded_stable_and_sized():
    files = freshstack.markdown_files(CHECKOUT)
    assert len(files) == N_MARKDOWN and files == sorted(files)
    a = freshstack.draw_distractors(files, 4, 1.5, seed=11)
    assert a == freshstack.draw_distractors(
        list(reversed(files)), 4, 1.5, seed=11
    )  # input order is irrelevant
    assert len(a) == 6 and len(set(a)) == 6
    assert a != freshstack.draw_distractors(files, 4, 1.5, seed=12)
    assert sorted(freshstack.draw_distractors(files, 4, "full", seed=11)) == files
    assert len(freshstack.draw_distractors(files, 90, 2, seed=11)) == N_MARKDOWN  # capped at the candidates


def test_selection_restricts_questions_and_uses_recorded_distractors(tmp_path):
    study = freshstack_study(tmp_path)
    entry = {
        "adapter": "freshstack",
        "domains": {"laravel": {"selected": ["q3"], "distractors": ["cache.md"]}},
    }
    loaded = load_dataset(study, "fs", selection={"datasets": {"fs": entry}})
    assert [q.qid for q in loaded.questions] == ["q3"]
    assert loaded.questions[0].scope == ("laravel/cache.md", "laravel/routing.md")
    # q1 not selected, q2 without located gold: counted from the queries file, not from the selection
    c = loaded.counts
    assert (
        c["questions_in_input"],
        c["questions_dropped_not_selected"],
        c["questions_dropped_no_located_gold"],
    ) == (3, 1, 1)
    assert_counts_add_up(c)
    # the checkout files read are the gold files sliced (all questions' gold) and the distractor drawn; the
    # path normalised as the reader does (harness.data.common.display_path): `..` collapsed as text, a
    # symbolic
    # link such as ../shared kept, never resolved
    checkout = Path(os.path.normpath(CHECKOUT)).as_posix()
    assert [f.path for f in loaded.input_files] == [f"{checkout}/{p}" for p in (
        "blade.md", "cache.md", "helpers.md", "routing.md")] + ["data/corpus.jsonl", "data/queries.jsonl"]
    entry["domains"]["laravel"]["distractors"] = ["no-such-page.md"]
    with pytest.raises(HarnessError, match=r"distractor no-such-page\.md is not in the checkout"):
        load_dataset(study, "fs", selection={"datasets": {"fs": entry}})


def test_malformed_query_record_names_file_and_line(tmp_path):
    study = freshstack_study(tmp_path)
    path = tmp_path / "data" / "queries.jsonl"
    path.write_text('{"query_id": "q1", "query_text": "ok"}\n\n{"query_id": "q2", "query_text": 5}\n')
    with pytest.raises(
        InputError, match=r"queries\.jsonl \(record line 3\): field `query_text` must be a string"
    ):
        load_dataset(study, "fs", selection=None)


def test_counts_add_up_without_a_selection(tmp_path):
    c = load_dataset(freshstack_study(tmp_path), "fs", selection=None).counts
    assert (c["questions_in_input"], c["questions"], c["questions_dropped_no_located_gold"]) == (3, 2, 1)
    assert_counts_add_up(c)


@pytest.mark.parametrize("title, text", [("", ""), ("  ", "\t")])
def test_empty_query_is_refused_with_file_and_line(tmp_path, title, text):
    study = freshstack_study(tmp_path)
    path = tmp_path / "data" / "queries.jsonl"
    path.write_text('{"query_id": "q1", "query_text": "ok"}\n'
                    + json.dumps({"query_id": "q2", "query_title": title, "query_text": text}) + "\n")
    with pytest.raises(InputError, match=r"queries\.jsonl \(record line 2\): the query is empty"):
        load_dataset(study, "fs", selection=None)


def test_bad_distractor_ratio_and_missing_option(tmp_path):
    study = freshstack_study(tmp_path, ratio="some")
    with pytest.raises(
        HarnessError,
        match=r"`datasets\.fs\.domains\.laravel\.distractor_ratio` must be one of 'full' or a number >= 0, "
              r"got 'some'",
    ):
        load_dataset(study, "fs", selection=None)
    with pytest.raises(HarnessError, match=r"domain `laravel`: option `queries` is missing"):
        freshstack.convert_domain(
            study, "fs", "laravel", FreshStackDomain(corpus="x"), InputReader(study.root)
        )
