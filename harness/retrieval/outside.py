"""Retrievers from outside the harness (docs/plugins.md).

`type: python`: a function `fn(query, chunks, **params)` of the study's plugins/ or an installed package is
given a question's query and its scope's chunks (harness.data.model.Chunk, corpus order) and returns either
one score per chunk (numbers, higher is better) or chunk ids, best first. A ranking of chunk ids may leave
chunks out: they follow, in corpus order, below every chunk it names.

`type: run-file`: the rankings another toolkit wrote, one TREC run file per arm. A run is read when `score`
first ranks that arm's chunk set (RetrieverContext.rank_arm says which arm and which questions), and checked
against it: every line of a selected question must name a chunk of the arm in the question's scope, once, with
scores not rising down the ranks, and every question with chunks in scope needs a line. Each kind of problem
is
counted and the run refused naming the first line of each. Lines for other questions (not selected, another
dataset) are ignored. A question's chunks are ordered by the run's ranks; chunks it does not name follow, in
corpus order, scored one below its lowest score. Both types fuse in RRF hybrids and can be reranked: they
are full rankings like every retriever's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.data.model import Chunk, Question
from harness.errors import HarnessError
from harness.retrieval.base import Ranking, Retriever, ScopeIndex, rank_by_score
from harness.retrieval.runfile import read_run_lines

MAX_NAMED = 3  # problems of one kind named in a refusal (all are counted)


def _ranking_from_order(named: Sequence[int], scores: Sequence[float], n: int) -> Ranking:
    """The positions `named` first with their scores (non-increasing), then every other position in order,
    scored one below the lowest named score."""
    rest = np.setdiff1d(np.arange(n, dtype=np.int64), np.asarray(named, dtype=np.int64), assume_unique=True)
    floor = (min(scores) - 1.0) if len(scores) else 0.0
    order = np.concatenate([np.asarray(named, dtype=np.int64), rest])
    values = np.concatenate([np.asarray(scores, dtype=np.float64), np.full(len(rest), floor)])
    return Ranking(order, values)


# --- type: python ---


class _FunctionIndex(ScopeIndex):
    def __init__(self, retriever: "FunctionRetriever", scope_key: str, chunks: Sequence[Chunk]):
        super().__init__(scope_key, len(chunks))
        self.retriever, self.chunks = retriever, list(chunks)
        self.position = {c.chunk_id: i for i, c in enumerate(self.chunks)}

    def search(self, query: str) -> Ranking:
        r = self.retriever
        try:
            out = r.function(query, self.chunks, **r.params)
        except HarnessError:
            raise
        except Exception as e:  # the outside code failed: name the retriever and the scope
            raise HarnessError(f"{r.what}: {r.callable} failed on scope {self.scope_key}: "
                               f"{type(e).__name__}: {e}") from None
        return self._ranking(list(out) if isinstance(out, (list, tuple, np.ndarray)) else out)

    def _ranking(self, out: Any) -> Ranking:
        what = f"{self.retriever.what}: on scope {self.scope_key}, {self.retriever.callable}"
        if not isinstance(out, list):
            raise HarnessError(f"{what} returned a {type(out).__name__}, not a list of scores or chunk ids")
        if out and all(isinstance(x, str) for x in out):
            unknown = [x for x in out if x not in self.position]
            if unknown:
                raise HarnessError(
                    f"{what} ranked {len(unknown)} chunk id(s) not in the scope (first: {unknown[0]})"
                )
            if len(set(out)) != len(out):
                raise HarnessError(f"{what} ranked a chunk id twice")
            named = [self.position[x] for x in out]
            return _ranking_from_order(named, [float(len(out) - i) for i in range(len(out))], self.n_chunks)
        if len(out) != self.n_chunks or not all(
            isinstance(x, (int, float, np.number)) and not isinstance(x, bool) for x in out
        ):
            raise HarnessError(f"{what} returned {len(out)} values; expected one score (a number) per chunk "
                               f"({self.n_chunks}), or chunk ids best first")
        scores = np.asarray(out, dtype=np.float64)
        if not np.isfinite(scores).all():
            raise HarnessError(f"{what} returned a score that is not a finite number")
        return rank_by_score(scores)


class FunctionRetriever(Retriever):
    def __init__(
        self, name: str, callable_name: str, function: Callable[..., Any], params: Mapping[str, Any]
    ):
        super().__init__(name)
        self.callable, self.function, self.params = callable_name, function, dict(params)
        self.what = f"retriever `{name}` (type python)"

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> ScopeIndex:
        return _FunctionIndex(self, scope_key, chunks)

    def describe(self) -> dict[str, Any]:
        return {"type": "python", "callable": self.callable, "params": self.params}


# --- type: run-file ---


@dataclass(frozen=True)
class RankedArm:
    """What `score` ranks now (RetrieverContext.rank_arm): one arm's chunk set on one dataset."""

    dataset: str
    arm: str
    questions: Sequence[Question]
    chunk_docs: Mapping[str, str]  # chunk_id -> doc_id of every chunk of the arm's set
    by_query: Mapping[str, list[str]] = field(default_factory=dict)  # query text -> qids, in question order

    @classmethod
    def of(
        cls, dataset: str, arm: str, questions: Sequence[Question], chunks: Sequence[Chunk]
    ) -> "RankedArm":
        by_query: dict[str, list[str]] = defaultdict(list)
        for q in questions:
            by_query[q.query].append(q.qid)
        return cls(dataset, arm, questions, {c.chunk_id: c.doc_id for c in chunks}, dict(by_query))


class _Problems:
    """Problems of a run by kind: all counted, the first few named."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def add(self, kind: str, text: str) -> None:
        self.found.setdefault(kind, []).append(text)

    def refuse(self, path: Path, what: str) -> None:
        if not self.found:
            return
        parts = [
            f"{len(texts)} {kind} ({'; '.join(texts[:MAX_NAMED])}{'; ...' if len(texts) > MAX_NAMED else ''})"
            for kind, texts in self.found.items()
        ]
        raise HarnessError(f"{path}: {what}: refused: " + ", ".join(parts))


def checked_run(path: Path, ranked: RankedArm, *, what: str) -> dict[str, tuple[list[str], list[float]]]:
    """qid -> (chunk ids by rank, their scores) of the selected questions, or HarnessError naming every
    kind of problem with its count and first lines."""
    if not path.is_file():
        raise HarnessError(f"{path}: {what}: run file not found (`runs:` names it for arm {ranked.arm})")
    questions = {q.qid: q for q in ranked.questions}
    problems, seen = _Problems(), {}
    lines: dict[str, list[tuple[int, int, str, float]]] = defaultdict(list)
    for lineno, row in read_run_lines(path):
        question = questions.get(row.qid)
        if question is None:
            continue  # a question not selected, or of another dataset
        if (row.qid, row.chunk_id) in seen:
            problems.add("duplicate lines", f"line {lineno} repeats line {seen[row.qid, row.chunk_id]}")
            continue
        seen[row.qid, row.chunk_id] = lineno
        doc = ranked.chunk_docs.get(row.chunk_id)
        if doc is None:
            problems.add(
                "unknown chunk ids", f"line {lineno}: {row.chunk_id} is no chunk of arm {ranked.arm}"
            )
        elif doc not in question.scope:
            problems.add(
                "chunks outside the question's scope", f"line {lineno}: {row.chunk_id} for {row.qid}"
            )
        elif not math.isfinite(row.score):
            problems.add("scores that are not finite", f"line {lineno}: {row.score}")
        else:
            lines[row.qid].append((row.rank, lineno, row.chunk_id, row.score))
    with_chunks, with_lines = set(ranked.chunk_docs.values()), {qid for qid, _ in seen}
    for qid, question in questions.items():
        if qid not in with_lines and any(d in with_chunks for d in question.scope):
            problems.add("questions without a line", qid)
    run = {}
    for qid, rows in lines.items():
        rows.sort()
        for (_, line_a, _, score_a), (rank_b, line_b, _, score_b) in zip(rows, rows[1:]):
            if score_b > score_a:
                problems.add(
                    "scores rising down the ranks",
                    f"line {line_b}: rank {rank_b} scores {score_b!r}, above line {line_a}'s {score_a!r}",
                )
        run[qid] = ([r[2] for r in rows], [r[3] for r in rows])
    problems.refuse(path, what)
    return run


class _RunIndex(ScopeIndex):
    def __init__(
        self,
        retriever: "RunFileRetriever",
        scope_key: str,
        chunks: Sequence[Chunk],
        ranked: RankedArm,
        run: Mapping[str, tuple[list[str], list[float]]],
    ):
        super().__init__(scope_key, len(chunks))
        self.retriever, self.ranked, self.run = retriever, ranked, run
        self.position = {c.chunk_id: i for i, c in enumerate(chunks)}
        self.docs = {c.doc_id for c in chunks}

    def search(self, query: str) -> Ranking:
        # the question asking `query` in this scope: the run is keyed by qid, a scope index is asked by query
        asked = [qid for qid in self.ranked.by_query.get(query, ())
                 if qid in self.run and all(c in self.position for c in self.run[qid][0])]
        what = f"{self.retriever.what}, arm {self.ranked.arm}"
        if not asked:
            raise HarnessError(f"{what}: no question of the run asks {query!r} in scope {self.scope_key}")
        if len({tuple(self.run[qid][0]) for qid in asked}) > 1:
            raise HarnessError(
                f"{what}: questions {', '.join(asked)} ask the same query in scope {self.scope_key} "
                "but the run ranks them differently; the harness ranks a scope by query text"
            )
        ids, scores = self.run[asked[0]]
        return _ranking_from_order([self.position[c] for c in ids], scores, self.n_chunks)


class RunFileRetriever(Retriever):
    def __init__(self, name: str, runs: Mapping[str, Path], current: Callable[[], RankedArm | None]):
        super().__init__(name)
        self.runs, self.current = dict(runs), current
        self.what = f"retriever `{name}` (type run-file)"
        self._checked: dict[tuple[str, str], Mapping[str, tuple[list[str], list[float]]]] = {}

    def index(self, scope_key: str, chunks: Sequence[Chunk]) -> ScopeIndex:
        ranked = self.current()
        if ranked is None:
            raise HarnessError(f"{self.what} ranks only the arm `harness score` is ranking (none is)")
        if ranked.arm not in self.runs:
            raise HarnessError(f"{self.what} has no run file for arm {ranked.arm} (its `runs:` name "
                               f"{', '.join(self.runs)})")
        key = (ranked.dataset, ranked.arm)
        if key not in self._checked:
            self._checked = {
                key: checked_run(
                    self.runs[ranked.arm],
                    ranked,
                    what=f"{self.what}, arm {ranked.arm} on dataset {ranked.dataset}",
                )
            }
        return _RunIndex(self, scope_key, chunks, ranked, self._checked[key])

    def describe(self) -> dict[str, Any]:
        return {"type": "run-file", "runs": {arm: path.name for arm, path in self.runs.items()}}
