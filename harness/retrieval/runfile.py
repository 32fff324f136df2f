"""TREC run files: `qid Q0 chunk_id rank score tag`, ranks from 1, rows sorted by (qid, rank).

Scores are written with repr(float): the shortest text that reads back as the same float, so the same
ranking always gives the same bytes and a read-back is exact.
"""

from __future__ import annotations

import math
import re
import os
from operator import itemgetter
from typing import Iterable, NamedTuple, Sequence

from harness.errors import InputError
from harness.files import atomic_write_text
from harness.retrieval.base import Ranking


class RunRow(NamedTuple):  # a tuple: built for every ranked chunk of every question, at C speed
    qid: str
    chunk_id: str
    rank: int  # 1-based
    score: float
    tag: str


def ranking_rows(qid: str, ranking: Ranking, chunk_ids: Sequence[str], tag: str, *, depth: int | None = None) -> list[RunRow]:
    """The first `depth` entries (all when None) of a ranking as run rows."""
    if len(chunk_ids) != len(ranking):
        raise ValueError(f"question {qid!r}: ranking covers {len(ranking)} chunks but {len(chunk_ids)} chunk ids were given")
    order, scores = ranking.head(len(ranking) if depth is None else depth)
    return [
        RunRow(qid, chunk_ids[pos], rank, float(score), tag)
        for rank, (pos, score) in enumerate(zip(order.tolist(), scores.tolist()), start=1)
    ]


def format_score(score: float) -> str:
    if not math.isfinite(score):
        raise ValueError(f"run scores must be finite, got {score!r}")
    return repr(float(score) + 0.0)  # + 0.0 turns -0.0 into 0.0


_WHITESPACE = re.compile(r"\s")  # str.isspace's characters (both use the Unicode whitespace property)


def _field(value: str, what: str, checked: set[str]) -> str:
    """`value` as a run-file field; `checked` holds the values already accepted (ids repeat on every line)."""
    if value not in checked:
        if not value or _WHITESPACE.search(value):
            raise ValueError(f"{what} {value!r} cannot be written to a TREC run file (empty or contains whitespace)")
        checked.add(value)
    return value


def write_run(path: str | os.PathLike, rows: Iterable[RunRow]) -> int:
    """Write rows sorted by (qid, rank), atomically; returns the number of rows. Ranks must run 1..n per qid."""
    ordered = sorted(rows, key=itemgetter(0, 2))  # (qid, rank)
    seen: dict[str, int] = {}
    checked: set[str] = set()
    lines = []
    for row in ordered:
        expected = seen.get(row.qid, 0) + 1
        if row.rank != expected:
            raise ValueError(
                f"question {row.qid!r}: ranks must run 1, 2, ... without gaps; found {row.rank} where {expected} was due"
            )
        seen[row.qid] = expected
        lines.append(
            f"{_field(row.qid, 'qid', checked)} Q0 {_field(row.chunk_id, 'chunk_id', checked)} {row.rank} "
            f"{format_score(row.score)} {_field(row.tag, 'tag', checked)}\n"
        )
    atomic_write_text(path, "".join(lines))
    return len(lines)


def read_run(path: str | os.PathLike) -> list[RunRow]:
    """Parse a run file; a malformed line raises InputError naming the file and line."""
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
            rows.append(RunRow(parts[0], parts[2], rank, score, parts[5]))
    return rows
