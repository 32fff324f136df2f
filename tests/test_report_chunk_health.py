"""Chunk health in the report's chunk-set table: chunks cut mid-sentence, Markdown tables split across
chunks, and per dense retriever the chunks longer than its embedder's window (recorded by `score`)."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

from harness.config.arm_kinds import get_kind
from harness.data.model import Chunk, Document
from harness.files import atomic_write_json
from harness.grid.cells import ArmSpec, Cell, DatasetSpec, RetrieverSpec
from harness.grid.paths import per_question_sidecar
from harness.metrics.registry import ScoringCache
from harness.pipeline.score import Scope, score_cell
from harness.report.chunksets import chunk_health, document_tables, ends_sentence
from harness.report.context import ReportContext
from harness.report.sections_inputs import chunk_sets
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.dense import DenseRetriever
from harness.retrieval.hybrid import RRFRetriever
from metrics_support import question
from pipeline_support import make_llm_free_study
from retrieval_support import CountingEmbedder, chunks_of

TEXT = (
    "# Guide\n\nThe first sentence ends here. The second one runs on and on\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nClosing words.\n"
)
DOC = Document("d", "docs", TEXT)


def _chunk(n: int, start: int, end: int) -> Chunk:
    return Chunk("d", f"d#{n}", TEXT[start:end], ((start, end),), "", 1, 1, ())


def _at(fragment: str, after: bool = True) -> int:
    i = TEXT.index(fragment)
    return i + len(fragment) if after else i


def test_a_chunk_ending_inside_a_line_and_not_after_a_sentence_is_cut_mid_sentence():
    at_sentence = _at("ends here.")  # inside the line, but after a sentence end
    mid = _at("runs on")  # inside the line, mid-sentence
    line_end = _at("on and on")  # at the end of the line
    chunks = [_chunk(0, 0, at_sentence), _chunk(1, at_sentence, mid), _chunk(2, mid, line_end),
              _chunk(3, line_end, len(TEXT))]
    assert chunk_health(chunks, [DOC])["cut_mid_sentence"] == 1


def test_a_table_is_split_when_a_chunk_boundary_falls_inside_it():
    table_start, table_end = _at("| a |", after=False), _at("| 3 | 4 |")
    whole = [_chunk(0, 0, table_start), _chunk(1, table_start, table_end), _chunk(2, table_end, len(TEXT))]
    assert chunk_health(whole, [DOC]) == {"cut_mid_sentence": 0, "tables": 1, "tables_split": 0}
    row_two = _at("| 1 | 2 |\n")
    split = [_chunk(0, 0, row_two), _chunk(1, row_two, len(TEXT))]
    assert chunk_health(split, [DOC])["tables_split"] == 1


def test_without_documents_nothing_is_counted():
    assert chunk_health([_chunk(0, 0, 10)], []) == {"cut_mid_sentence": 0, "tables": 0, "tables_split": 0}


def test_score_records_the_chunks_each_embedder_cut_to_its_window_through_a_fusion(tmp_path):
    dense = DenseRetriever("dense", CountingEmbedder(max_tokens=3), cache_dir=tmp_path / "cache")
    hybrid = RRFRetriever("hybrid", [BM25Retriever("bm25"), dense])
    # 3 of the 5 chunks hold more than the fake embedder's 3-word window
    scoped = [Scope("a", chunks_of(["a b", "a b c d", "one two three four five"], "a"), [question("a b")]),
              Scope("b", chunks_of(["x y", "w x y z"], "b"), [question("x y", qid="q2")])]
    study = SimpleNamespace(root=tmp_path, results_root=None, config=SimpleNamespace(ir_measures=None,
                                                                                     assembly=None))
    dataset = SimpleNamespace(name="papers", metric_set="qasper", documents=[], questions=[])
    context = SimpleNamespace(get=lambda name: hybrid, add_documents=lambda documents: None, memo=None,
                              rank_arm=lambda *args: None)
    cell = Cell(DatasetSpec("papers", None), ArmSpec("S", SimpleNamespace(kind="S"), get_kind("S")),
                RetrieverSpec("hybrid", None))
    _, _, counts = score_cell(study, dataset, cell, scoped, context, ScoringCache(), (512,), run_depth=10)
    assert counts["embedder_window"] == {"dense": {"chunks": 5, "over_window": 3}}


def _table(section, table_id):
    return next(t for t in section.tables if t.name == table_id)


def test_the_chunk_set_table_shows_each_dense_retrievers_chunks_over_its_window(tmp_path):
    from harness.cli.main import main

    study = make_llm_free_study(tmp_path / "s", ("bm25", "minilm"), arms=("S", "F512c"))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    # what `score` records in the dataset's manifest for a cell ranking F512c's chunks with minilm
    window = {"minilm": {"chunks": 40, "over_window": 7}}
    atomic_write_json(per_question_sidecar(study, "docs"), {"cell_counts": {
        "docs/F512c/minilm": {"questions": 4, "embedder_window": window},
        "docs/F512c/bm25": {"questions": 4}}})
    docs = _table(chunk_sets(ReportContext(study)), "chunks-docs")
    assert docs.header[-1] == "> window minilm" and "input window" in docs.caption
    assert [r[-1] for r in docs.rows if r[0] == "F512c"] == ["7 (17.5%)"]
    papers = _table(chunk_sets(ReportContext(study)), "chunks-papers")
    assert {r[-1] for r in papers.rows} == {"–"}  # nothing scored there yet


def test_a_study_without_dense_retrievers_has_no_window_column(tmp_path):
    from harness.cli.main import main

    study = make_llm_free_study(tmp_path / "s", ("bm25",), arms=("S", "F512c"))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    docs = _table(chunk_sets(ReportContext(study)), "chunks-docs")
    assert not any("window" in c for c in docs.header) and "input window" not in docs.caption


def test_a_sentence_end_is_read_back_over_closing_marks_and_whitespace_only():
    # the rule as a pattern over the whole stripped prefix: ends_sentence must agree with it everywhere
    rule = re.compile(r"[.!?][\"')\]]*$")
    rng = random.Random(3)
    alphabet = "ab .!?\"')]\n\t\u00a0\u2003,;|"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        end = rng.randint(0, len(text))
        assert ends_sentence(text, end) == bool(rule.search(text[:end].rstrip())), (text, end)


def test_tables_measured_once_give_the_same_health_as_tables_found_per_call():
    chunks = [_chunk(0, 0, _at("| 1 | 2 |")), _chunk(1, _at("| 1 | 2 |"), len(TEXT))]
    tables = document_tables([DOC])
    assert chunk_health(chunks, [DOC], tables) == chunk_health(chunks, [DOC])
    assert chunk_health(chunks, [DOC], tables)["tables_split"] == 1
