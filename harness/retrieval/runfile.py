"""TREC run files: `qid Q0 chunk_id rank score tag`, ranks from 1, rows sorted by (qid, rank).

Scores are written with repr(float): the shortest text that reads back as the same float, so the same
ranking always gives the same bytes and a read-back is exact.
"""

from __future__ import annotations

import math
import os
import re
from operator import itemgetter
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from harness.errors import InputError
from harness.files import atomic_write_blocks
from harness.retrieval.base import Ranking


class RunRow(NamedTuple):  # one line of a run file, as read back
    qid: str
    chunk_id: str
    rank: int  # 1-based
    score: float
    tag: str


class RunBlock(NamedTuple):
    """One question's ranked chunk ids, best first, with their scores: its lines, ranks 1, 2, ... The scoring
    loop writes a question's ranking as one block (no object per line)."""

    qid: str
    chunk_ids: Sequence[str]
    scores: np.ndarray  # float64, aligned with chunk_ids
    tag: str


def ranking_block(
    qid: str, ranking: Ranking, chunk_ids: Sequence[str], tag: str, *, depth: int | None = None
) -> RunBlock:
    """The first `depth` entries (all when None) of a ranking as a run block."""
    if len(chunk_ids) != len(ranking):
        raise ValueError(
            f"question {qid!r}: ranking covers {len(ranking)} chunks but {len(chunk_ids)} chunk ids were "
            "given"
        )
    order, scores = ranking.head(len(ranking) if depth is None else depth)
    # a copy: the head is a view of the ranking's ordered scores, which may cover the whole scope, and an
    # arm's blocks are held until its cells end
    return RunBlock(qid, [chunk_ids[pos] for pos in order.tolist()], scores.copy(), tag)


def format_score(score: float) -> str:
    if not math.isfinite(score):
        raise ValueError(f"run scores must be finite, got {score!r}")
    return repr(float(score) + 0.0)  # + 0.0 turns -0.0 into 0.0


_WHITESPACE = re.compile(r"\s")  # str.isspace's characters (both use the Unicode whitespace property)


def _field(value: str, what: str, checked: set[str]) -> str:
    """`value` as a run-file field; `checked` holds the values already accepted (ids repeat on every line)."""
    if value not in checked:
        if not value or _WHITESPACE.search(value):
            raise ValueError(
                f"{what} {value!r} cannot be written to a TREC run file (empty or contains whitespace)"
            )
        checked.add(value)
    return value


def write_run_blocks(path: str | os.PathLike, blocks: Iterable[RunBlock]) -> int:
    """Write one block per question sorted by qid, atomically, validated before anything is written; returns
    the number of lines."""
    ordered = sorted(blocks, key=itemgetter(0))
    for before, block in zip(ordered, ordered[1:]):
        if before.qid == block.qid:
            raise ValueError(f"question {block.qid!r}: two rankings for one question")
    checked: set[str] = set()
    texts, n = [], 0
    for block in ordered:
        scores = np.asarray(block.scores, dtype=np.float64)
        if len(scores) != len(block.chunk_ids):
            raise ValueError(
                f"question {block.qid!r}: {len(scores)} scores for {len(block.chunk_ids)} chunk ids"
            )
        if not np.isfinite(scores).all():
            format_score(float(scores[~np.isfinite(scores)][0]))  # raises, naming the value
        head = f"{_field(block.qid, 'qid', checked)} Q0 "
        tail = f" {_field(block.tag, 'tag', checked)}\n"
        ids = [_field(c, "chunk_id", checked) for c in block.chunk_ids]
        # repr: the shortest text that reads back as the same float; + 0.0 writes -0.0 as 0.0 (format_score)
        lines = zip(ids, range(1, len(ids) + 1), (scores + 0.0).tolist())
        texts.append("".join([f"{head}{c} {rank} {score!r}{tail}" for c, rank, score in lines]))
        n += len(ids)
    atomic_write_blocks(path, (t.encode("utf-8") for t in texts))
    return n


def read_run(path: str | os.PathLike) -> list[RunRow]:
    """Parse a run file; a malformed line raises InputError naming the file and line."""
    return [row for _, row in read_run_lines(path)]


def read_run_lines(path: str | os.PathLike) -> list[tuple[int, RunRow]]:
    """read_run, each row with its 1-based line number (blank lines skipped)."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("run file not found", path=path) from None
    rows = []
    with f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 6 or parts[1] != "Q0":
                message = f"line {lineno}: expected `qid Q0 chunk_id rank score tag`, got {line.strip()!r}"
                raise InputError(message, path=path, record=lineno)
            try:
                rank, score = int(parts[3]), float(parts[4])
            except ValueError:
                message = f"line {lineno}: rank {parts[3]!r} / score {parts[4]!r} is not a number"
                raise InputError(message, path=path, record=lineno) from None
            if rank < 1:
                raise InputError(f"line {lineno}: rank {rank} (ranks start at 1)", path=path, record=lineno)
            rows.append((lineno, RunRow(parts[0], parts[2], rank, score, parts[5])))
    return rows
