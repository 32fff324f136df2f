"""A study whose arms and retrievers come from outside the harness (docs/plugins.md), made by `harness init`
and run by `make all` to the report: a LangChain arm, a Chonkie arm and a `kind: python` arm of the study's
plugins/, a `type: python` retriever, and a `type: run-file` retriever (fused with BM25 and reranked), with a
test on nDCG@10. The run files are written from the built chunk sets between `make build-arms` and `make
all` (docs/plugins.md, Run files). The freeze records the plugin code and the run files: editing either is
drift, named by its file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.files import read_json
from harness.grid.paths import first_outcome_path
from harness.study import Study

from extend_support import DATASET, FAMILY, edit_config, edit_yaml, scored_cells, starter_study
from test_init import run_make
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
    """The starter study with the plugins, arms, retrievers and tests added, and committed: the edited plan
    is registered before the first freeze."""
    study = starter_study(tmp_path, git=True)
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
    for command in (["add", "--", "."], ["commit", "-q", "-m", "outside chunkers and retrievers"]):
        subprocess.run(["git", "-C", str(study), *command], check=True)
    return study


def write_runs(study: Path, arms: tuple[str, ...] = tuple(ARMS)) -> None:
    """What another toolkit would write from the built chunk sets: each question's five chunks sharing the
    most words with it."""
    questions = [json.loads(line) for line in (study / "data" / "questions.jsonl").read_text().splitlines()]
    for arm in arms:
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


def make(study: Path, *targets: str) -> str:
    proc = run_make(study, *targets)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_a_study_of_outside_chunkers_and_retrievers_runs_through_make_all_to_the_report(
    tmp_path, git_identity, capsys
):
    _library("langchain_text_splitters")
    _library("chonkie")
    study = plugin_study(tmp_path)
    make(study, "select", "freeze", "build-arms")  # the run files are written from the built chunk sets
    first = read_json(study / "frozen_config.json")
    assert first["plugins"]["retrievers"]["ext"]["files"]["runs/S.trec"] is None
    write_runs(study)
    out = make(study, "all")  # re-freezes with the run files: no outcome exists yet, so no deviation
    assert "PASS  (registration)/plan/plan.yaml" in out
    assert not (study / "DEVIATIONS.md").exists()

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


def run_file_study(tmp_path: Path) -> Path:
    """The starter study ranked by BM25 and by a run file of F512c's, which is not written yet."""
    study = starter_study(tmp_path)
    retrievers = {"bm25": {"type": "bm25"}, "ext": {"type": "run-file", "runs": {"F512c": "runs/F512c.trec"}}}
    edit_config(study, lambda cfg: cfg.update(retrievers=retrievers))

    def plan(p: dict) -> None:
        p["retrievers"] = list(retrievers)
        for test in next(f for f in p["families"] if f["id"] == FAMILY)["tests"]:
            test["retriever"] = "bm25"

    edit_yaml(study / "plan" / "plan.yaml", plan)
    (study / "runs").mkdir()
    return study


def test_no_cell_is_scored_while_a_run_file_is_not_written_and_its_freeze_is_not_the_one_to_publish(
    tmp_path, capsys
):
    study = run_file_study(tmp_path)
    run(study, "select", "freeze", "build-arms")
    out = capsys.readouterr().out
    assert "1 run file(s) not written yet: ext: runs/F512c.trec" in out and "publish this hash" not in out
    # BM25's cells could be scored now; an outcome would then fix the freeze before the run file exists
    assert main(["score", "--study", str(study), "--no-progress"]) == 1
    assert not first_outcome_path(Study.at(study)).exists()
    err = capsys.readouterr().err
    assert "run file(s) not written yet, so no cell is scored: ext: runs/F512c.trec" in err
    write_runs(study, ("F512c",))
    run(study, "freeze")  # no outcome: no --force, no deviation
    assert "publish this hash" in capsys.readouterr().out and not (study / "DEVIATIONS.md").exists()
    run(study, "build-arms", "score")
    assert first_outcome_path(Study.at(study)).is_file()
