"""Helpers for the data tests: paths to the shared real data and a FreshStack study whose synthetic
queries / corpus point into the real Laravel docs checkout."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.study import Study

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CHECKOUT = SHARED_DATA / "laravel-docs-724c31cc"


def assert_counts_add_up(counts: dict, noun: str = "questions") -> None:
    """What the input holds = what reaches the study + every drop, by reason."""
    dropped = {k: v for k, v in counts.items() if k.startswith(f"{noun}_dropped_")}
    assert dropped, f"no {noun}_dropped_* counts at all"
    assert counts[f"{noun}_in_input"] == counts[noun] + sum(dropped.values()), (
        counts[f"{noun}_in_input"],
        counts[noun],
        dropped,
    )


def read(rel: str) -> str:
    return (CHECKOUT / rel).read_text(encoding="utf-8")


def span_after(rel: str, marker: str, length: int) -> tuple[int, int]:
    start = read(rel).index(marker)
    return start, start + length


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def freshstack_study(tmp_path: Path, *, ratio=1, qrels_rows=None, extra_queries=(), selection=None) -> Study:
    """q1: helpers.md after two euro signs + blade.md; q2: a non-Markdown gold and a text mismatch; q3:
    routing."""
    h0, h1 = span_after("helpers.md", "## `Number::defaultCurrency()`", 200)
    b0, b1 = span_after("blade.md", "## Displaying Data", 150)
    r0, r1 = span_after("routing.md", "## Basic Routing", 120)
    corpus = [
        {"_id": f"docs/helpers.md_{h0}_{h1}", "title": "", "text": read("helpers.md")[h0:h1]},
        {"_id": f"docs/blade.md_{b0}_{b1}", "title": "", "text": read("blade.md")[b0:b1]},
        {"_id": f"docs/routing.md_{r0}_{r1}", "title": "", "text": read("routing.md")[r0:r1]},
        {"_id": "docs/routing.md_0_10", "title": "", "text": "not the file's first ten characters"},
        {"_id": "docs/composer.json_0_20", "title": "", "text": "{\"name\": \"laravel\"}"},
    ]
    queries = [
        {
            "query_id": "q1",
            "query_title": "Default currency",
            "query_text": "How do I read it?",
            "answer_text": "Use Number::defaultCurrency.",
            "nuggets": [
                {
                    "_id": "q1_0",
                    "text": "Number::defaultCurrency returns it",
                    "relevant_corpus_ids": [corpus[0]["_id"], corpus[1]["_id"]],
                    "non_relevant_corpus_ids": [],
                }
            ],
        },
        {
            "query_id": "q2",
            "query_title": "Composer",
            "query_text": "Which package name?",
            "nuggets": [
                {
                    "_id": "q2_0",
                    "text": "the name",
                    "non_relevant_corpus_ids": [],
                    "relevant_corpus_ids": ["docs/composer.json_0_20", "docs/routing.md_0_10"],
                }
            ],
        },
        {
            "query_id": "q3",
            "query_title": "Routes",
            "query_text": "Basic routes?",
            "nuggets": [
                {
                    "_id": "q3_0",
                    "text": "closures",
                    "non_relevant_corpus_ids": [],
                    "relevant_corpus_ids": [corpus[2]["_id"]],
                }
            ],
        },
        *extra_queries,
    ]
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "queries.jsonl", queries)
    write_jsonl(data / "corpus.jsonl", corpus)
    domain = {"queries": "data/queries.jsonl", "corpus": "data/corpus.jsonl", "checkout": str(CHECKOUT),
              "commit": "724c31ccd3edce6b6dfe5e0dd2a594a47217f078", "corpus_path_prefix": "docs/",
              "distractor_ratio": ratio, "licence": "MIT"}
    if qrels_rows is not None:
        rows = "".join(f"{q}\t{c}\t{s}\n" for q, c, s in qrels_rows)
        (data / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
        domain["qrels"] = "data/qrels.tsv"
    config = {
        "study": "fs",
        "datasets": {
            "fs": {
                "adapter": "freshstack",
                "metric_set": "freshstack",
                "domains": {"laravel": domain},
                "selection": selection or {"seed": 7, "n_questions": "all"},
            }
        },
        "arms": {"S": {"kind": "S"}},
        "retrievers": {"bm25": {"type": "bm25"}},
    }
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(tmp_path)
