"""Exploratory analyses registered in the plan (`exploratory:` in plan.yaml), each one entry:

    exploratory:
      - {id: bridging-papers, analysis: bridging, dataset: papers, a: E, b: S+T, metric: rec@512t,
         retrievers: [bm25, hybrid], seed: 5101}
      - {id: f1-by-recall, analysis: conditional-means, dataset: papers, a: E, b: S+T, retriever: hybrid,
         metric: answer_f1@512t, by: rec@512t, seed: 5102}
      - {id: wtl, analysis: win-tie-loss}                      # every test of every family
      - {id: domains, analysis: subset-contrast, dataset: docs, a: S, b: F512c, retriever: hybrid,
         metric: prec@1024t, first: [angular], second: [laravel], seed: 5103}

Definitions follow the paper's Appendix (harness.analyses). An unknown analysis, field or group is an
error naming the file and the entry. These are exploratory by construction: no multiplicity, no verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BRIDGING, TARGETING, OVERLAP = "bridging", "targeting-terciles", "overlap-terciles"
ANSWER_TYPE, WIN_TIE_LOSS, CONDITIONAL, SUBSET = "answer-type", "win-tie-loss", "conditional-means", "subset-contrast"
# analysis -> (required fields, optional fields) besides id and analysis
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    BRIDGING: (("dataset", "a", "b", "metric", "retrievers", "seed"), ()),
    TARGETING: (("dataset", "a", "b", "metric", "retrievers", "seed"), ()),
    OVERLAP: (("dataset", "a", "b", "metric", "retrievers", "seed"), ()),
    ANSWER_TYPE: (("dataset", "a", "b", "metric", "retrievers", "seed"), ()),
    WIN_TIE_LOSS: ((), ("families",)),
    CONDITIONAL: (("dataset", "a", "b", "retriever", "metric", "by", "seed"), ()),
    SUBSET: (("dataset", "a", "b", "retriever", "metric", "first", "second", "seed"), ()),
}
ANALYSES = tuple(FIELDS)


@dataclass(frozen=True)
class AnalysisPlan:
    id: str
    analysis: str
    source: str  # "plan" or "amendment NNNN"
    dataset: str | None = None
    a: str | None = None
    b: str | None = None
    metric: str | None = None
    retrievers: tuple[str, ...] = ()
    by: str | None = None  # conditional-means: the metric whose change defines the groups
    first: tuple[str, ...] = ()  # subset-contrast: strata of each side
    second: tuple[str, ...] = ()
    families: tuple[str, ...] = ()  # win-tie-loss: empty means every family
    seed: int = 0


def parse_analyses(doc, key: str, raw, state, source: str, seen: set[str]) -> list[AnalysisPlan]:
    """`doc` is plan._Doc (errors name the file); `state` holds the registered datasets, arms, retrievers."""
    out = []
    for i, entry in enumerate(doc.sequence(raw, key, non_empty=False)):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict):
            doc.fail(where, f"expected a mapping; got {type(entry).__name__}")
        name = entry.get("id", f"#{i}")
        analysis = entry.get("analysis")
        if analysis not in FIELDS:
            doc.fail(f"{where}.analysis", f"unknown analysis {analysis!r} [entry {name}] "
                     f"(known: {', '.join(ANALYSES)})")
        required, optional = FIELDS[analysis]
        entry = doc.mapping(entry, where, required=("id", "analysis", *required), optional=optional)
        aid = doc.text(entry["id"], f"{where}.id")
        if not re.fullmatch(r"[A-Za-z0-9_-]+", aid):
            doc.fail(f"{where}.id", f"{aid!r} must use letters, digits, '_' or '-' (it names output files)")
        if aid in seen:
            doc.fail(f"{where}.id", f"analysis {aid!r} already exists")
        seen.add(aid)
        out.append(_entry(doc, where, aid, analysis, entry, state, source))
    return out


def _entry(doc, where: str, aid: str, analysis: str, entry: dict, state, source: str) -> AnalysisPlan:
    def fail(field: str, message: str):
        doc.fail(f"{where}.{field}", f"{message} [entry {aid}]")

    values: dict = {}
    if "dataset" in entry:
        dataset = doc.text(entry["dataset"], f"{where}.dataset")
        if dataset not in state.datasets:
            fail("dataset", f"dataset {dataset!r} is not in the plan")
        values["dataset"] = dataset
        metrics = state.datasets[dataset].metrics
        for field in ("metric", "by"):
            if field in entry:
                metric = doc.text(entry[field], f"{where}.{field}")
                if metric not in metrics:
                    fail(field, f"metric {metric!r} is not registered for dataset {dataset!r}")
                values[field] = metric
    for side in ("a", "b"):
        if side in entry:
            arm = doc.text(entry[side], f"{where}.{side}")
            if arm not in state.arms:
                fail(side, f"arm {arm!r} is not registered")
            values[side] = arm
    retrievers = list(doc.names(entry["retrievers"], f"{where}.retrievers")) if "retrievers" in entry else []
    if "retriever" in entry:
        retrievers = [doc.text(entry["retriever"], f"{where}.retriever")]
    for r in retrievers:
        if r not in state.retrievers:
            fail("retrievers", f"retriever {r!r} is not registered")
    if "retrievers" in entry and not retrievers:
        fail("retrievers", "expected at least one retriever")
    for side in ("first", "second"):
        if side in entry:
            strata = tuple(doc.names(entry[side], f"{where}.{side}"))
            if not strata:
                fail(side, "expected a non-empty list of strata")
            values[side] = strata
    if values.get("first") and set(values["first"]) & set(values.get("second", ())):
        fail("second", "shares strata with `first`; the two sides must be disjoint")
    families = tuple(doc.names(entry.get("families", []), f"{where}.families"))
    for f in families:
        if f not in state.tests:
            fail("families", f"no family {f!r}")
    seed = doc.integer(entry["seed"], f"{where}.seed") if "seed" in entry else 0
    return AnalysisPlan(id=aid, analysis=analysis, source=source, retrievers=tuple(retrievers), families=families,
                        seed=seed, **values)
