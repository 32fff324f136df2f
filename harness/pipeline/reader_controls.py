"""The reader's acceptance controls (docs/instruments.md), run by `answer` on each dataset before any arm is
answered.

A reader that cannot answer, or answers the same whatever it reads, makes any two arms look equivalent.
So, as the judge is checked before nugget recall counts:

- positive control: the reader answers each sampled question from its own gold evidence (source text, cut
  to the dataset's reader budget B exactly as arms' contexts are cut: harness.pipeline.reading);
- negative control: it answers from the gold evidence of another cluster's sampled questions (the judge's
  seeded derangement, over clusters, so no question reads its own paper's or page's evidence).

Both are scored in the dataset's answer metric by the function that scores the arms (answer F1, or the
judge's strict nugget recall). Rates and per-question results go to results/answers/reader_acceptance.json;
`stats` compares the rates with the plan's `datasets.<name>.reader_acceptance` and keeps every answer-level
row of a dataset whose reader missed them exploratory. Every call goes through the reader's session
(cached, ledgered); a failed answer stays in the mean, as it does in the arms.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.data.load import LoadedDataset
from harness.data.model import Chunk, Question
from harness.files import atomic_write_json
from harness.grid.paths import reader_acceptance_path
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache
from harness.metrics.nuggets import seeded_derangement
from harness.study import Study
from harness.pipeline.reading import answer_metric, ask_reader, reader_context, references, score_answer

POSITIVE, NEGATIVE = "positive", "negative"


def evidence_chunks(question: Question) -> list[Chunk]:
    """The question's gold evidence as reader units, in the data's order; a text named by several annotators
    is given once."""
    texts = [t for t in dict.fromkeys(e.text.strip() for e in question.evidence) if t]
    return [Chunk(question.evidence[0].doc_id, f"evidence:{question.qid}#{i}", text, (), "", 0, 0, ())
            for i, text in enumerate(texts)]


def reader_controls(dataset: LoadedDataset, reader: LlmSession, template: PromptTemplate, *, budget: int,
                    tokens: TokenCache, seeds: Sequence[int], seed: int, f1: bool, judge: LlmSession | None,
                    judge_template: PromptTemplate | None, judge_seed: int | None) -> dict[str, Any]:
    """One dataset's entry of reader_acceptance.json: mean score per control, counts, per-question results.

    A question without gold evidence, or with nothing to score against (no gold answer, no nuggets), takes
    part in neither control and is counted under `excluded`."""
    excluded: dict[str, int] = {}
    usable: list[tuple[Question, list[Chunk]]] = []
    for q in sorted(dataset.questions, key=lambda q: q.qid):
        units = evidence_chunks(q)
        if not units:
            excluded["no_evidence"] = excluded.get("no_evidence", 0) + 1
            continue
        if f1 and not references(q):
            excluded["no_gold"] = excluded.get("no_gold", 0) + 1
            continue
        if not f1 and (judge is None or not q.nuggets):
            excluded["no_nuggets"] = excluded.get("no_nuggets", 0) + 1
            continue
        usable.append((q, units))
    by_cluster: dict[str, list[Chunk]] = {}
    for q, units in usable:  # qid order: a cluster's evidence reads in the same order on every run
        by_cluster.setdefault(q.cluster, []).extend(units)
    other = seeded_derangement(by_cluster, seed=seed) if len(by_cluster) >= 2 else {}
    records: list[dict[str, Any]] = []
    for q, units in usable:
        pairs = [(POSITIVE, q.qid, units)]
        if other:
            pairs.append((NEGATIVE, other[q.cluster], by_cluster[other[q.cluster]]))
        for control, source, evidence in pairs:
            context = reader_context(evidence, budget, tokens)
            reply = ask_reader(reader, template, q.query, context, seeds=seeds)
            scored = score_answer(q, reply.answer, f1=f1, judge=judge, judge_template=judge_template,
                                  judge_seed=judge_seed)
            records.append({"qid": q.qid, "cluster": q.cluster, "control": control, "evidence_of": source,
                            "answer": reply.answer, "failed": reply.failed, "attempts": reply.attempts,
                            "truncated": reply.truncated, "score": scored.value, **context.to_json()})
    entry: dict[str, Any] = {"metric": answer_metric(f1, budget), "budget": budget, "control_seed": seed,
                             "excluded": dict(sorted(excluded.items())),
                             "reader_failed": sum(r["failed"] for r in records), "questions": records}
    for control in (POSITIVE, NEGATIVE):
        scores = [r["score"] for r in records if r["control"] == control]
        entry[control] = sum(scores) / len(scores) if scores else None  # None: not computable
        entry[f"{control}_questions"] = len(scores)
    if not other:
        entry["negative_not_computable"] = (
            f"{len(by_cluster)} cluster(s) with gold evidence; a derangement needs 2"
        )
    return entry


def write_reader_acceptance(study: Study, reader: dict[str, Any], datasets: dict[str, dict], *,
                            frozen_hash: str | None) -> dict[str, Any]:
    """results/answers/reader_acceptance.json (atomic, key-sorted: same controls, same bytes)."""
    record = reader_acceptance_record(reader, datasets, frozen_hash=frozen_hash)
    atomic_write_json(reader_acceptance_path(study), record)
    return record


def reader_acceptance_record(reader: dict[str, Any], datasets: dict[str, dict], *,
                             frozen_hash: str | None) -> dict[str, Any]:
    return {"reader": reader, "datasets": datasets, "frozen_config_hash": frozen_hash}
