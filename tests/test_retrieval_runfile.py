"""TREC run files: ranks from 1, sorted by (qid, rank), exact float round trip, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from harness.retrieval.base import rank_by_score
from harness.retrieval.runfile import RunRow, format_score, ranking_rows, read_run, write_run

IDS = ["d#0000-aaaa", "d#0001-bbbb", "d#0002-cccc"]


def test_rows_from_a_ranking_start_at_rank_one():
    ranking = rank_by_score(np.array([0.5, 2.0, 0.5]))
    rows = ranking_rows("q1", ranking, IDS, "S__bm25")
    assert [(r.chunk_id, r.rank, r.score) for r in rows] == [("d#0001-bbbb", 1, 2.0), ("d#0000-aaaa", 2, 0.5), ("d#0002-cccc", 3, 0.5)]
    assert [r.rank for r in ranking_rows("q1", ranking, IDS, "t", depth=2)] == [1, 2]


def test_write_sorts_by_qid_then_rank_and_reads_back_exactly(tmp_path):
    scores = np.array([0.1 + 0.2, 1 / 3, -0.0])
    rows = ranking_rows("q2", rank_by_score(scores), IDS, "tag") + ranking_rows("q1", rank_by_score(scores[::-1].copy()), IDS, "tag")
    path = tmp_path / "runs" / "a.run"
    assert write_run(path, reversed(rows)) == 6
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d#0001-bbbb 1 0.3333333333333333 tag"
    assert lines[2] == "q1 Q0 d#0000-aaaa 3 0.0 tag"  # -0.0 is written as 0.0
    assert lines[3:5] == ["q2 Q0 d#0001-bbbb 1 0.3333333333333333 tag", "q2 Q0 d#0000-aaaa 2 0.30000000000000004 tag"]
    back = read_run(path)
    assert back == sorted(rows, key=lambda r: (r.qid, r.rank))
    first = path.read_bytes()
    write_run(path, rows)
    assert path.read_bytes() == first  # same rows, same bytes, whatever their input order


@pytest.mark.parametrize(
    "rows, message",
    [
        ([RunRow("q 1", "c", 1, 1.0, "t")], "qid 'q 1' cannot be written"),
        ([RunRow("q1", "a b", 1, 1.0, "t")], "chunk_id 'a b' cannot be written"),
        ([RunRow("q1", "c", 1, 1.0, "")], "tag '' cannot be written"),
        ([RunRow("q1", "c", 2, 1.0, "t")], "found 2 where 1 was due"),
        ([RunRow("q1", "c", 1, 1.0, "t"), RunRow("q1", "d", 1, 0.5, "t")], "found 1 where 2 was due"),
        ([RunRow("q1", "c", 1, float("nan"), "t")], "must be finite"),
    ],
)
def test_bad_rows_are_refused_and_nothing_is_written(tmp_path, rows, message):
    path = tmp_path / "x.run"
    with pytest.raises(ValueError, match=message):
        write_run(path, rows)
    assert not path.exists()


def test_ranking_and_ids_must_align():
    with pytest.raises(ValueError, match="question 'q1': ranking covers 3 chunks but 2 chunk ids"):
        ranking_rows("q1", rank_by_score(np.zeros(3)), IDS[:2], "t")


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 Q0 c 1 0.5\n", r"line 1: expected `qid Q0 chunk_id rank score tag`"),
        ("q1 Q0 c 1 0.5 t\nq1 X c 2 0.4 t\n", r"line 2: expected"),
        ("q1 Q0 c one 0.5 t\n", r"line 1: rank 'one' / score '0.5' is not a number"),
        ("q1 Q0 c 0 0.5 t\n", r"line 1: rank 0 \(ranks start at 1\)"),
    ],
)
def test_malformed_run_lines_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"bad.run \(record \d\): {message}"):
        read_run(path)


def test_missing_run_file(tmp_path):
    with pytest.raises(InputError, match="nope.run: run file not found"):
        read_run(tmp_path / "nope.run")


def test_format_score_is_round_trip_exact():
    for x in [1e-300, 0.1, 123456789.123456789, 1 / 61 + 1 / 63]:
        assert float(format_score(x)) == x


def test_blocks_write_the_bytes_rows_write(tmp_path):
    """A question's ranking written as one block gives the same bytes as its rows: sorted by qid, ranks from 1
    (or a block's first rank), -0.0 as 0.0, shortest round-trip floats."""
    from harness.retrieval.runfile import RunBlock, ranking_block, write_run_blocks

    rng = np.random.default_rng(5)
    ids = [f"d#{i:04d}-x" for i in range(40)]
    rankings = {f"q{j}": rank_by_score(np.round(rng.normal(size=40), 2) * (j % 3 - 1)) for j in (3, 10, 1, 2)}
    rows = [row for qid, r in rankings.items() for row in ranking_rows(qid, r, ids, "t", depth=17)]
    write_run(tmp_path / "rows.run", rows)
    blocks = [ranking_block(qid, r, ids, "t", depth=17) for qid, r in rankings.items()]
    assert write_run_blocks(tmp_path / "blocks.run", blocks) == len(rows)
    assert (tmp_path / "blocks.run").read_bytes() == (tmp_path / "rows.run").read_bytes()
    assert b" -0.0 " not in (tmp_path / "blocks.run").read_bytes()
    assert read_run(tmp_path / "blocks.run") == sorted(rows, key=lambda r: (r.qid, r.rank))
    shifted = RunBlock("q9", ["a", "b"], np.array([2.0, 1.0]), "t", first_rank=4)
    write_run_blocks(tmp_path / "shifted.run", [shifted])
    assert (tmp_path / "shifted.run").read_text() == "q9 Q0 a 4 2.0 t\nq9 Q0 b 5 1.0 t\n"


@pytest.mark.parametrize(
    "blocks, message",
    [
        ([("q1", ["c"], [1.0], "t"), ("q1", ["d"], [0.5], "t")], "question 'q1': two rankings for one question"),
        ([("q1", ["c", "d"], [1.0], "t")], "question 'q1': 1 scores for 2 chunk ids"),
        ([("q1", ["c", "d"], [1.0, float("inf")], "t")], "must be finite, got inf"),
        ([("q1", ["c d"], [1.0], "t")], "chunk_id 'c d' cannot be written"),
    ],
)
def test_bad_blocks_are_refused_and_nothing_is_written(tmp_path, blocks, message):
    from harness.retrieval.runfile import RunBlock, write_run_blocks

    path = tmp_path / "x.run"
    with pytest.raises(ValueError, match=message):
        write_run_blocks(path, [RunBlock(q, ids, np.array(s), t) for q, ids, s, t in blocks])
    assert not path.exists()
