"""A study whose arms and retrievers come from outside the harness (docs/plugins.md), run through every stage
to the report: a LangChain arm, a Chonkie arm and a `kind: python` arm of the study's plugins/, a `type:
python` retriever, and a `type: run-file` retriever (fused with BM25 and reranked), with a test on nDCG@10.
The freeze records the plugin code and the run files: editing either is drift, named by its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.files import read_json
from harness.study import Study

from extend_support import DATASET, FAMILY, edit_config, edit_yaml, scored_cells, starter_study
from provenance_support import published_hashes
from test_plugins_chunkers import _library

CHUNKER = '''
def paragraphs(text, doc_id, min_chars=0):
    """Blank-line separated blocks longer than min_chars."""
    return [block for block in text.split("\\n\\n") if len(block.strip()) > min_chars]
'''
RETRIEVER = '''
def overlap(query, chunks, weight=1.0):
    """Shared lower-case words, times weight."""
    words = set(query.lower().split())
    return [weight * len(words & set(c.indexed_text.lower().split())) for c in chunks]
'''
ARMS = {
    "S": {"kind": "S"},
    "py": {"kind": "python", "callable": "my_chunker:paragraphs", "params": {"min_chars": 3}},
    "lc": {"kind": "langchain", "splitter": "RecursiveCharacterTextSplitter",
           "params": {"chunk_size": 300, "chunk_overlap": 30}},
    "ck": {"kind": "chonkie", "chunker": "RecursiveChunker", "params": {"chunk_size": 128}},
}
RETRIEVERS = {
    "bm25": {"type": "bm25"},
    "words": {"type": "python", "callable": "my_retriever:overlap", "params": {"weight": 2.0}},
    "ext": {"type": "run-file", "runs": {arm: f"runs/{arm}.trec" for arm in ARMS}},
    "fused": {"type": "rrf", "of": ["bm25", "ext"]},
    "reranked": {
        "type": "rerank",
        "first_stage": "ext",
        "backend": "simulated",
        "model": "stand-in",
        "depth": 5,
    },
}
TESTS = [
    {"id": "H-py", "a": "py", "b": "S", "retriever": "fused", "dataset": DATASET, "metric": "rec@512t"},
    {"id": "H-lc", "a": "lc", "b": "S", "retriever": "words", "dataset": DATASET, "metric": "rec@512t"},
    {"id": "H-ck", "a": "ck", "b": "S", "retriever": "reranked", "dataset": DATASET, "metric": "rec@512t"},
    # a standard IR measure (docs/ir-measures.md) on the other toolkit's run files
    {"id": "H-ext", "a": "lc", "b": "S", "retriever": "ext", "dataset": DATASET, "metric": "nDCG@10"},
]
IR_MEASURES = ["nDCG@10", "RR@10", "AP"]


def plugin_study(tmp_path: Path) -> Path:
    study = starter_study(tmp_path)
    (study / "plugins").mkdir()
    (study / "plugins" / "my_chunker.py").write_text(CHUNKER, encoding="utf-8")
    (study / "plugins" / "my_retriever.py").write_text(RETRIEVER, encoding="utf-8")
    (study / "runs").mkdir()
    edit_config(study, lambda cfg: cfg.update(arms=ARMS, retrievers=RETRIEVERS, ir_measures=IR_MEASURES))

    def plan(p: dict) -> None:
        p.update(arms=list(ARMS), retrievers=list(RETRIEVERS))
        p["datasets"][DATASET]["metrics"] += IR_MEASURES
        next(f for f in p["families"] if f["id"] == FAMILY)["tests"] = TESTS

    edit_yaml(study / "plan" / "plan.yaml", plan)
    return study


def write_runs(study: Path) -> None:
    """What another toolkit would write from the built chunk sets: each question's five chunks sharing the
    most words with it."""
    questions = [json.loads(line) for line in (study / "data" / "questions.jsonl").read_text().splitlines()]
    for arm in ARMS:
        chunks = [json.loads(line) for line in
                  (study / "results" / "chunks" / DATASET / f"{arm}.jsonl").read_text().splitlines()]
        lines = []
        for q in questions:
            words = set(q["query"].lower().split())
            best = sorted(
                chunks, key=lambda c: (-len(words & set(c["text"].lower().split())), c["chunk_id"])
            )[:5]
            lines += [
                f"{q['qid']} Q0 {c['chunk_id']} {rank} {10 - rank} toolkit" for rank, c in enumerate(best, 1)
            ]
        (study / "runs" / f"{arm}.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(study: Path, *stages: str) -> None:
    for stage in stages:
        assert main([stage, "--study", str(study), "--no-progress"]) == 0, stage


@pytest.mark.slow
def test_a_study_of_outside_chunkers_and_retrievers_runs_to_the_report(tmp_path, capsys):
    _library("langchain_text_splitters")
    _library("chonkie")
    study = plugin_study(tmp_path)
    run(study, "select", "freeze", "build-arms")  # the run files are written from the built chunk sets
    assert (
        read_json(study / "frozen_config.json")["plugins"]["retrievers"]["ext"]["files"]["runs/S.trec"]
        is None
    )
    write_runs(study)
    run(study, "freeze", "build-arms", "score", "stats")
    # the study is in no git repository: the hashes, as published, anchor the registration and the release
    assert main(["audit", "--study", str(study), *published_hashes(Study.at(study))]) == 0
    run(study, "report")

    frozen = read_json(study / "frozen_config.json")
    assert frozen["plugins"]["arms"]["py"] == {"callable": "my_chunker:paragraphs",
                                               "study_plugin": "plugins/my_chunker.py"}
    assert frozen["plugins"]["arms"]["lc"]["package"] == "langchain-text-splitters"
    assert frozen["plugins"]["arms"]["ck"] == {"package": "chonkie", "version": "1.7.0"}
    assert len(frozen["plugins"]["retrievers"]["ext"]["files"]["runs/S.trec"]) == 64
    assert {"plugins/my_chunker.py", "plugins/my_retriever.py"} <= set(frozen["input_files"])
    assert scored_cells(Study.at(study)) == {(DATASET, a, r) for a in ARMS for r in RETRIEVERS}
    manifest = read_json(study / "results" / "chunks" / DATASET / "py.manifest.json")
    assert manifest["pieces"]["unlocated"] == 0 and manifest["chunker"] == "python"
    assert (study / "results" / "qrels" / DATASET / "lc.qrels").stat().st_size > 0
    report = (study / "results" / "report" / "report.md").read_text(encoding="utf-8")
    assert all(test["id"] in report for test in TESTS)

    capsys.readouterr()
    chunker = study / "plugins" / "my_chunker.py"
    chunker.write_text(CHUNKER + "# edited\n", encoding="utf-8")
    assert main(["build-arms", "--study", str(study), "--no-progress"]) == 2
    assert 'input_files["plugins/my_chunker.py"]' in capsys.readouterr().err
    chunker.write_text(CHUNKER, encoding="utf-8")
    with (study / "runs" / "S.trec").open("a", encoding="utf-8") as f:
        f.write("q00 Q0 extra 99 0.0 toolkit\n")
    assert main(["score", "--study", str(study), "--no-progress"]) == 2
    assert 'plugins.retrievers.ext.files["runs/S.trec"]' in capsys.readouterr().err
