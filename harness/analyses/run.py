"""Run the plan's exploratory analyses on the per-question results; one JSON record per entry.

A record is {id, analysis, source, status (RAN or BLOCKED), description, missing: [{what, target}],
columns, rows, excluded}. An analysis whose inputs are missing is `blocked` and names the make target
that produces them (INPUT_TARGETS); it never yields an empty table. Every number is exploratory; conditional
means
are labelled descriptive, since their groups are defined by an outcome.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.analyses.moderators import BRIDGED, BRIDGING_GROUPS, NOT_BRIDGED, moderators, terciles
from harness.data.answer_types import ANSWER_TYPES, EXTRACTIVE, YES_NO
from harness.errors import HarnessError
from harness.metrics.registry import is_answer_level
from harness.plan import analyses as ap
from harness.plan.model import Plan, derive_seed
from harness.stats.contrast import MissingResultsError, ResultTable, as_results, paired_differences
from harness.inference.groups import group_contrast, group_mean, win_tie_loss
from harness.stats.subsets import registered_pairs

RAN, BLOCKED = "ran", "blocked"  # a record's status
TERCILES = ("bottom", "middle", "top")
RECALL_GROUPS = ("more evidence", "less evidence", "unchanged")


# Each input an analysis can lack -> the make target that produces it. A Blocked names one of these targets;
# tests/test_analysis_blocked_targets.py checks every blocked path against this table.
INPUT_TARGETS = {
    "questions": "make select",  # a dataset's questions load with the recorded selection
    "data files": "make freeze",  # a field the data files lack: added to the files, which are then re-frozen
    "chunk sets": "make build-arms",
    "retrieval results": "make score",
    "answer-level results": "make answer",
}


class Blocked(Exception):
    def __init__(self, what: str, target: str):
        super().__init__(what)
        if target not in INPUT_TARGETS.values():
            raise ValueError(f"blocked target {target!r} is not one of {sorted(set(INPUT_TARGETS.values()))}")
        self.what, self.target = what, target


def run_analyses(plan: Plan, table: pd.DataFrame | ResultTable, inputs: Any | None) -> list[dict]:
    """`inputs` (harness.analyses.inputs.StudyInputs, or None when the study's files are not at hand) gives
    `dataset(name)` and `moderator_chunks(dataset, a, b)` -> (LoadedDataset, S, A, B chunks), each raising
    Blocked when missing; for the moderators A is the enriched arm (E) and B its free twin (S+T)."""
    results = as_results(table)
    out = []
    for entry in plan.analyses:
        record = {"id": entry.id, "analysis": entry.analysis, "source": entry.source, "tier": "exploratory",
                  "description": _describe(entry), "missing": [], "columns": [], "rows": [], "excluded": {}}
        try:
            columns, rows, excluded = _RUNNERS[entry.analysis](plan, entry, results, inputs)
        except Blocked as b:
            out.append(record | {"status": BLOCKED, "missing": [{"what": b.what, "target": b.target}]})
            continue
        out.append(record | {"status": RAN, "columns": columns, "rows": rows, "excluded": excluded})
    return out


def _describe(e: ap.AnalysisPlan) -> str:
    if e.analysis == ap.WIN_TIE_LOSS:
        return "Win / tie / loss rates of A against B per registered test (share of questions)."
    what = f"{e.a} - {e.b} on {e.dataset}, {e.metric}, in points"
    return {
        ap.BRIDGING: f"{what}, by bridging group (paper's Appendix definitions), per retriever; and bridged "
                     f"minus "
        "not bridged with a cluster-bootstrap CI.",
        ap.TARGETING: f"{what}, by targeting tercile, per retriever; and top minus bottom.",
        ap.OVERLAP: f"{what}, by question-evidence overlap tercile, per retriever; and bottom minus top.",
        ap.ANSWER_TYPE: f"{what}, by answer type (extractive, abstractive, yes-no, unanswerable: the "
        "annotators' majority), per retriever; and extractive minus yes-no.",
        ap.CONDITIONAL: f"Descriptive conditional means of the change in {e.metric} ({e.a} - {e.b}) by the "
                        f"change in "
        f"{e.by} (more / less / unchanged evidence) under {e.retrievers[0]}; the groups are defined "
        "by an outcome, so these are not effects.",
        ap.SUBSET: f"{e.a} - {e.b} on {e.dataset}, {e.metric}, under {e.retrievers[0]}: strata "
                   f"{', '.join(e.first)} "
        f"minus strata {', '.join(e.second)}, with a cluster-bootstrap CI.",
    }[e.analysis]


def _target(metric: str) -> str:
    """Answer-level outcomes come from the reader / judge stage, retrieval metrics from scoring."""
    return INPUT_TARGETS["answer-level results" if is_answer_level(metric) else "retrieval results"]


def _pairs(results: ResultTable, e: ap.AnalysisPlan, retriever: str, metric: str | None = None):
    metric = metric or e.metric
    try:
        return paired_differences(
            results, dataset=e.dataset, a=e.a, b=e.b, retriever=retriever, metric=metric
        )
    except MissingResultsError as m:
        raise Blocked("per-question results of " + "; ".join(m.missing), _target(metric)) from None


def _group_rows(
    e, retriever: str, pairs, labels: dict[str, str], groups, contrast: tuple[str, str]
) -> list[dict]:
    keep = np.array([q in labels for q in pairs.qids])
    grp = np.array([labels.get(q, "") for q in pairs.qids], dtype=object)
    rows = []
    for g in groups:
        seed = derive_seed(e.seed, f"{retriever}/{g}")
        m = group_mean(g, pairs.diffs, pairs.clusters, pairs.strata, keep & (grp == g), seed=seed)
        rows.append(
            {
                "retriever": retriever,
                "group": g,
                "n_questions": 0 if m is None else m.n_questions,
                "estimate": None if m is None else m.estimate,
                "ci95": None if m is None else list(m.ci95),
            }
        )
    c = group_contrast(*contrast, pairs.diffs[keep], pairs.clusters[keep], pairs.strata[keep], grp[keep],
                       seed=derive_seed(e.seed, f"{retriever}/contrast"))
    rows.append(
        {
            "retriever": retriever,
            "group": f"{contrast[0]} minus {contrast[1]}",
            "n_questions": int((keep & np.isin(grp, contrast)).sum()),
            "estimate": None if c is None else c.estimate,
            "ci95": None if c is None else list(c.ci95),
        }
    )
    return rows


_GROUP_COLUMNS = ["retriever", "group", "n_questions", "estimate", "ci95"]


def _moderated(kind: str):
    def run(plan, e, results, inputs):
        if inputs is None:
            raise Blocked(f"chunk sets of {e.dataset}", INPUT_TARGETS["chunk sets"])
        dataset, s, e_chunks, st = inputs.moderator_chunks(e.dataset, e.a, e.b)
        table = moderators(dataset.questions, dataset.metric_set, s, {c.chunk_id: c for c in st},
                           {c.chunk_id: c for c in e_chunks})
        if kind == ap.BRIDGING:
            labels = {q: m.bridging for q, m in table.by_qid.items()}
            groups, contrast = BRIDGING_GROUPS, (BRIDGED, NOT_BRIDGED)
        else:
            field = "targeting" if kind == ap.TARGETING else "overlap"
            labels = terciles({q: getattr(m, field) for q, m in table.by_qid.items()})
            groups = TERCILES
            # the paper reports top minus bottom for targeting, lowest minus highest for overlap
            contrast = ("top", "bottom") if kind == ap.TARGETING else ("bottom", "top")
        rows = []
        for r in e.retrievers:
            rows += _group_rows(e, r, _pairs(results, e, r), labels, groups, contrast)
        return _GROUP_COLUMNS, rows, table.excluded
    return run


def _answer_type(plan, e, results, inputs):
    """The adapters record each question's type (harness.data.answer_types); a question without one is
    counted under `excluded`, never assigned a type here."""
    if inputs is None:
        raise Blocked(
            f"the questions of dataset {e.dataset} (their answer types)", INPUT_TARGETS["questions"]
        )
    types = {q.qid: q.answer_type for q in inputs.dataset(e.dataset).questions}
    if not any(types.values()):
        raise Blocked(
            f"answer types of the {e.dataset} questions: its data files record none (the Qasper adapter "
            "derives them; a JSONL file gives `answer_type` per question, docs/jsonl-format.md)",
            INPUT_TARGETS["data files"],
        )
    rows, excluded = [], {}
    for r in e.retrievers:
        pairs = _pairs(results, e, r)
        labels = {q: types[q] for q in pairs.qids if types.get(q)}
        untyped = len(pairs.qids) - len(labels)
        if untyped:
            excluded[f"no answer type recorded ({r})"] = untyped
        rows += _group_rows(e, r, pairs, labels, ANSWER_TYPES, (EXTRACTIVE, YES_NO))
    return _GROUP_COLUMNS, rows, excluded


def _win_tie_loss(plan, e, results, inputs):
    rows = []
    for fam in plan.families:
        if e.families and fam.id not in e.families:
            continue
        for t in fam.tests:
            try:
                pairs = registered_pairs(results, t)
            except MissingResultsError:
                continue
            win, tie, loss = win_tie_loss(pairs.diffs)
            rows.append(
                {
                    "family": fam.id,
                    "test": t.id,
                    "contrast": f"{t.a} - {t.b}",
                    "dataset": t.dataset,
                    "retriever": t.retriever if t.retriever_b is None else f"{t.retriever} - {t.retriever_b}",
                    "metric": t.metric,
                    "n_questions": len(pairs.diffs),
                    "win": win,
                    "tie": tie,
                    "loss": loss,
                }
            )
    if not rows:
        raise Blocked("per-question results of every registered test", INPUT_TARGETS["retrieval results"])
    return (
        ["family", "test", "contrast", "dataset", "retriever", "metric", "n_questions", "win", "tie", "loss"],
        rows,
        {},
    )


def _conditional(plan, e, results, inputs):
    r = e.retrievers[0]
    outcome = _pairs(results, e, r)
    by = _pairs(results, e, r, e.by)
    change = dict(zip(by.qids, by.diffs))
    labels = {q: ("more evidence" if change[q] > 0 else "less evidence" if change[q] < 0 else "unchanged")
              for q in outcome.qids if q in change}
    rows = _group_rows(e, r, outcome, labels, RECALL_GROUPS, ("more evidence", "less evidence"))[:-1]
    without = len(outcome.qids) - len(labels)
    return _GROUP_COLUMNS, rows, ({f"no {e.by} result": without} if without else {})


def _subset(plan, e, results, inputs):
    r = e.retrievers[0]
    pairs = _pairs(results, e, r)
    known = set(map(str, pairs.strata))
    for side in (e.first, e.second):
        unknown = sorted(set(side) - known)
        if unknown:
            raise HarnessError(
                f"{plan.path}: exploratory entry {e.id}: stratum {unknown[0]!r} has no question "
                f"on {e.dataset} (strata: {', '.join(sorted(known))})"
            )
    first, second = ",".join(e.first), ",".join(e.second)
    labels = {q: first if s in e.first else second if s in e.second else None
              for q, s in zip(pairs.qids, map(str, pairs.strata))}
    labels = {q: g for q, g in labels.items() if g is not None}
    return _GROUP_COLUMNS, _group_rows(e, r, pairs, labels, (first, second), (first, second)), {}


_RUNNERS = {
    ap.BRIDGING: _moderated(ap.BRIDGING),
    ap.TARGETING: _moderated(ap.TARGETING),
    ap.OVERLAP: _moderated(ap.OVERLAP),
    ap.ANSWER_TYPE: _answer_type,
    ap.WIN_TIE_LOSS: _win_tie_loss,
    ap.CONDITIONAL: _conditional,
    ap.SUBSET: _subset,
}
