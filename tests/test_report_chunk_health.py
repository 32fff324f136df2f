"""Chunk health in the report's chunk-set table: chunks cut mid-sentence and Markdown tables split across
chunks."""

from __future__ import annotations

from harness.data.model import Chunk, Document
from harness.report.chunksets import chunk_health

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
