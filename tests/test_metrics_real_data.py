"""The metrics on real text from ../shared/data: Qasper papers (paragraph chunks) and a Laravel docs page.

Chunks are built here directly from the raw files (one per paragraph / blank-line block) so the test
depends on nothing but the metrics; rankings put the gold first or last, where the answer is known.
"""

import json
import re

import pytest

from harness.data.model import Chunk, Evidence, Question
from harness.metrics.budget import TokenCache
from harness.metrics.registry import ScoringCache, score_question
from metrics_support import SHARED_DATA

QASPER = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"
LARAVEL_BLADE = SHARED_DATA / "laravel-docs-724c31cc" / "blade.md"


def make_chunks(doc_id, texts):
    return [
        Chunk(doc_id, f"{doc_id}#{i:04d}", t, ((0, 0),), "", 1, 1, ("paragraph",))
        for i, t in enumerate(texts)
    ]


def qasper_cases():
    papers = json.loads(QASPER.read_text(encoding="utf-8"))
    for paper_id, paper in sorted(papers.items()):
        paragraphs = [paper["abstract"]] + [
            p for s in paper["full_text"] for p in s["paragraphs"] if p.strip()
        ]
        corpus = make_chunks(f"qasper/{paper_id}", paragraphs)
        for qa in paper["qas"]:
            gold = sorted(
                {
                    e
                    for a in qa["answers"]
                    if not a["answer"]["unanswerable"]
                    for e in a["answer"]["evidence"]
                    if not e.startswith("FLOAT SELECTED") and " ::: " not in e
                }
            )
            if gold:
                q = Question(
                    qa["question_id"],
                    "qasper",
                    qa["question"],
                    paper_id,
                    "",
                    (f"qasper/{paper_id}",),
                    tuple(Evidence(f"qasper/{paper_id}", e) for e in gold),
                )
                yield q, corpus, set(gold)


@pytest.fixture(scope="module")
def cache():
    return ScoringCache(tokens=TokenCache())


@pytest.mark.skipif(not QASPER.is_file(), reason=f"real Qasper sample not found at {QASPER}")
def test_qasper_gold_first_and_gold_last(cache):
    n_questions = n_fitting = 0
    for q, corpus, gold in qasper_cases():
        gold_chunks = [c for c in corpus if c.text in gold]
        others = [c for c in corpus if c.text not in gold]
        first = dict(score_question("qasper", q, gold_chunks + others, [256, 512, 1024], cache=cache))
        last = dict(score_question("qasper", q, others + gold_chunks, [256, 512, 1024], cache=cache))
        n_questions += 1
        if len(gold_chunks) == len(gold) and len(gold) <= 5:
            assert first[f"rec@{len(gold)}" if len(gold) in (1, 3, 5) else "rec@5"] == 1.0, q.qid
        if len(gold_chunks) == len(gold) and sum(cache.tokens.count(c.text) for c in gold_chunks) <= 1024:
            n_fitting += 1
            assert first["rec@1024t"] == first["complete@1024t"] == 1.0, q.qid
        assert last["hit@5"] == last["rec@256t"] == 0.0, q.qid
    # of the sample's 51 questions, 43 have answerable evidence other than figures and section names
    # (counted independently from the Hugging Face export of the same papers); all their gold fits 1,024
    # tokens
    assert n_questions == 43
    assert n_fitting == 43


def blade_sections():
    text = LARAVEL_BLADE.read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"(?m)^## ", text)] + [len(text)]
    return text, [text[a:b] for a, b in zip(starts, starts[1:])]


@pytest.mark.skipif(not LARAVEL_BLADE.is_file(), reason=f"Laravel docs sample not found at {LARAVEL_BLADE}")
def test_freshstack_gold_section_first_and_last(cache):
    _, sections = blade_sections()
    gold_index = next(i for i, s in enumerate(sections) if s.startswith("## Building Layouts"))
    gold_section = sections[gold_index]
    blocks = [(i, b) for i, s in enumerate(sections) for b in re.split(r"\n\s*\n", s) if b.strip()]
    corpus = make_chunks("laravel/blade.md", [b for _, b in blocks])
    gold_blocks = [c for c, (i, _) in zip(corpus, blocks) if i == gold_index]
    others = [c for c, (i, _) in zip(corpus, blocks) if i != gold_index]
    q = Question("fs-1", "freshstack", "blade layouts", "fs-1", "laravel", ("laravel/blade.md",),
                 (Evidence("laravel/blade.md", gold_section),))
    first = dict(score_question("freshstack", q, gold_blocks + others, [512, 1024, 2048], cache=cache))
    # every selected 5-gram lies inside one gold block, hence inside the gold span
    assert first["prec@512t"] == 1.0
    # rank 1 is the bare "## Building Layouts" header: fewer than 5 words, so no 5-gram, so not relevant
    assert (first["hit@1"], first["hit@3"], first["mrr@10"]) == (0.0, 1.0, 0.5)
    # the section is ~1,100 tokens, so 2,048 takes other sections too; 5-grams across block breaks are lost
    assert first["prec@2048t"] < 1.0
    assert first["rec@512t"] < first["rec@1024t"] <= first["rec@2048t"] < 1.0
    last = dict(score_question("freshstack", q, others + gold_blocks, [512, 1024, 2048], cache=cache))
    assert last["hit@10"] == last["mrr@10"] == 0.0
    assert last["rec@2048t"] < 0.05
