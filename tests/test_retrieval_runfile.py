"""TREC run files: ranks from 1, sorted by (qid, rank), exact float round trip, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from harness.retrieval.base import rank_by_score
from harness.retrieval.runfile import (
    RunBlock,
    RunRow,
    format_score,
    ranking_block,
    read_run,
    write_run_blocks,
)

IDS = ["d#0000-aaaa", "d#0001-bbbb", "d#0002-cccc"]


def test_a_block_holds_a_ranking_best_first():
    ranking = rank_by_score(np.array([0.5, 2.0, 0.5]))
    block = ranking_block("q1", ranking, IDS, "S__bm25")
    assert list(block.chunk_ids) == [
        "d#0001-bbbb",
        "d#0000-aaaa",
        "d#0002-cccc",
    ] and block.scores.tolist() == [2.0, 0.5, 0.5]
    assert list(ranking_block("q1", ranking, IDS, "t", depth=2).chunk_ids) == ["d#0001-bbbb", "d#0000-aaaa"]


def test_write_sorts_by_qid_then_rank_and_reads_back_exactly(tmp_path):
    scores = np.array([0.1 + 0.2, 1 / 3, -0.0])
    blocks = [ranking_block("q2", rank_by_score(scores), IDS, "tag"),
              ranking_block("q1", rank_by_score(scores[::-1].copy()), IDS, "tag")]
    path = tmp_path / "runs" / "a.run"
    assert write_run_blocks(path, blocks) == 6
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d#0001-bbbb 1 0.3333333333333333 tag"
    assert lines[2] == "q1 Q0 d#0000-aaaa 3 0.0 tag"  # -0.0 is written as 0.0
    assert lines[3:5] == [
        "q2 Q0 d#0001-bbbb 1 0.3333333333333333 tag",
        "q2 Q0 d#0000-aaaa 2 0.30000000000000004 tag",
    ]
    back = read_run(path)
    assert back == [RunRow(b.qid, c, rank, float(x), b.tag) for b in blocks[::-1]
                    for rank, (c, x) in enumerate(zip(b.chunk_ids, b.scores), 1)]
    first = path.read_bytes()
    write_run_blocks(path, blocks[::-1])
    assert path.read_bytes() == first  # same blocks, same bytes, whatever their input order


def test_ranking_and_ids_must_align():
    with pytest.raises(ValueError, match="question 'q1': ranking covers 3 chunks but 2 chunk ids"):
        ranking_block("q1", rank_by_score(np.zeros(3)), IDS[:2], "t")


def test_block_lines_are_the_format_line_by_line(tmp_path):
    """The block writer against a line-by-line transcription of the format: qid order, ranks from 1,
    format_score's text (shortest round-trip float, -0.0 as 0.0)."""
    rng = np.random.default_rng(5)
    ids = [f"d#{i:04d}-x" for i in range(40)]
    rankings = {f"q{j}": rank_by_score(np.round(rng.normal(size=40), 2) * (j % 3 - 1)) for j in (3, 10, 1, 2)}
    blocks = [ranking_block(qid, r, ids, "t", depth=17) for qid, r in rankings.items()]
    assert write_run_blocks(tmp_path / "blocks.run", blocks) == 4 * 17
    expected = "".join(
        f"{b.qid} Q0 {c} {rank} {format_score(x)} t\n"
        for b in sorted(blocks, key=lambda b: b.qid)
        for rank, (c, x) in enumerate(zip(b.chunk_ids, b.scores.tolist()), 1)
    )
    assert (tmp_path / "blocks.run").read_text() == expected
    assert " -0.0 " not in expected and " 0.0 " in expected


@pytest.mark.parametrize(
    "blocks, message",
    [
        (
            [("q1", ["c"], [1.0], "t"), ("q1", ["d"], [0.5], "t")],
            "question 'q1': two rankings for one question",
        ),
        ([("q1", ["c", "d"], [1.0], "t")], "question 'q1': 1 scores for 2 chunk ids"),
        ([("q1", ["c", "d"], [1.0, float("inf")], "t")], "must be finite, got inf"),
        ([("q1", ["c"], [float("nan")], "t")], "must be finite, got nan"),
        ([("q 1", ["c"], [1.0], "t")], "qid 'q 1' cannot be written"),
        ([("q1", ["c d"], [1.0], "t")], "chunk_id 'c d' cannot be written"),
        ([("q1", ["c"], [1.0], "")], "tag '' cannot be written"),
    ],
)
def test_bad_blocks_are_refused_and_nothing_is_written(tmp_path, blocks, message):
    path = tmp_path / "x.run"
    with pytest.raises(ValueError, match=message):
        write_run_blocks(path, [RunBlock(q, ids, np.array(s), t) for q, ids, s, t in blocks])
    assert not path.exists()


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



def test_a_block_holds_its_own_scores_not_a_view_of_the_whole_ranking():
    # an arm's blocks are held until its cells end: a view would pin every scope-sized score array
    ranking = rank_by_score(np.linspace(1.0, 0.0, 5000))
    ranking.scores  # noqa: B018  ordered in full, as a fusion's member is
    block = ranking_block("q", ranking, [f"c{i}" for i in range(5000)], "t", depth=10)
    assert block.scores.base is None and block.scores.nbytes == 80
    assert block.scores.tolist() == ranking.scores[:10].tolist()
