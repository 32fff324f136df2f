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
from typing import TYPE_CHECKING, Any, Mapping

from harness.config.fields import ValueCheck, Int, Where, build, setting
from harness.errors import HarnessError
from harness.plan.checks import Name, Names, check_keys

if TYPE_CHECKING:  # harness.plan.load reads the entries with this module's functions
    from harness.plan.load import PlanState

BRIDGING, TARGETING, OVERLAP = "bridging", "targeting-terciles", "overlap-terciles"
ANSWER_TYPE, WIN_TIE_LOSS, CONDITIONAL, SUBSET = (
    "answer-type",
    "win-tie-loss",
    "conditional-means",
    "subset-contrast",
)
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


@dataclass(frozen=True)
class EntrySpec:
    """Every field an entry may have; which it must have and may have depends on its analysis (FIELDS)."""

    id: str = setting(None, Name())
    analysis: str = setting(None)
    dataset: str | None = setting(None, Name())
    a: str | None = setting(None, Name())
    b: str | None = setting(None, Name())
    metric: str | None = setting(None, Name())
    by: str | None = setting(None, Name())
    retriever: str | None = setting(None, Name())
    retrievers: tuple[str, ...] | None = setting(None, Names())
    first: tuple[str, ...] | None = setting(None, Names())
    second: tuple[str, ...] | None = setting(None, Names())
    families: tuple[str, ...] = setting((), Names())
    seed: int = setting(0, Int(0))


@dataclass(frozen=True)
class Entries(ValueCheck):
    """The `exploratory:` list: each entry's keys are those of its analysis."""

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, list):
            raise where.fail("expected a non-empty list")
        return tuple(_entry_spec(entry, where.child(f"[{i}]"), i) for i, entry in enumerate(value))


def _entry_spec(entry: Any, where: Where, i: int) -> EntrySpec:
    if not isinstance(entry, Mapping):
        raise where.fail(f"expected a mapping; got {type(entry).__name__}")
    analysis = entry.get("analysis")
    if not isinstance(analysis, str) or analysis not in FIELDS:
        raise where.child("analysis").fail(
            f"unknown analysis {analysis!r} [entry {entry.get('id', f'#{i}')}] (known: {', '.join(ANALYSES)})"
        )
    required, optional = FIELDS[analysis]
    keys = check_keys(where, entry, ("id", "analysis", *required), optional)
    spec: EntrySpec = build(EntrySpec, keys, where)
    return spec


def analysis_plans(where: Where, specs: tuple[EntrySpec, ...], state: PlanState, source: str,
                   seen: set[str]) -> list[AnalysisPlan]:
    """The entries checked against `state`, the registered datasets, arms, retrievers and families."""
    out = []
    for i, spec in enumerate(specs):
        here = where.child(f"[{i}]")
        if not re.fullmatch(r"[A-Za-z0-9_-]+", spec.id):
            raise here.child("id").fail(
                f"{spec.id!r} must use letters, digits, '_' or '-' (it names output files)"
            )
        if spec.id in seen:
            raise here.child("id").fail(f"analysis {spec.id!r} already exists")
        seen.add(spec.id)
        out.append(_analysis_plan(here, spec, state, source))
    return out


def _analysis_plan(where: Where, spec: EntrySpec, state: PlanState, source: str) -> AnalysisPlan:
    def fail(field: str, message: str) -> HarnessError:
        return where.child(field).fail(f"{message} [entry {spec.id}]")

    values: dict[str, Any] = {}
    if spec.dataset is not None:
        if spec.dataset not in state.datasets:
            raise fail("dataset", f"dataset {spec.dataset!r} is not in the plan")
        values["dataset"] = spec.dataset
        metrics = state.datasets[spec.dataset].metrics
        for field in ("metric", "by"):
            metric = getattr(spec, field)
            if metric is not None:
                if metric not in metrics:
                    raise fail(field, f"metric {metric!r} is not registered for dataset {spec.dataset!r}")
                values[field] = metric
    for side in ("a", "b"):
        arm = getattr(spec, side)
        if arm is not None:
            if arm not in state.arms:
                raise fail(side, f"arm {arm!r} is not registered")
            values[side] = arm
    retrievers = [spec.retriever] if spec.retriever is not None else list(spec.retrievers or ())
    for r in retrievers:
        if r not in state.retrievers:
            raise fail("retrievers", f"retriever {r!r} is not registered")
    if spec.retrievers is not None and not retrievers:
        raise fail("retrievers", "expected at least one retriever")
    for side in ("first", "second"):
        strata = getattr(spec, side)
        if strata is not None:
            if not strata:
                raise fail(side, "expected a non-empty list of strata")
            values[side] = strata
    if values.get("first") and set(values["first"]) & set(values.get("second", ())):
        raise fail("second", "shares strata with `first`; the two sides must be disjoint")
    for f in spec.families:
        if f not in state.tests:
            raise fail("families", f"no family {f!r}")
    return AnalysisPlan(id=spec.id, analysis=spec.analysis, source=source, retrievers=tuple(retrievers),
                        families=spec.families, seed=spec.seed, **values)
