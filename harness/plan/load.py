"""The registered analysis as data: plan/plan.yaml plus amendments/NNNN-*.yaml.

Amendments only add (families, tests, arms, retrievers); a test id, family id, arm or retriever that
already exists is rejected, and tests may not be added to a family registered in plan.yaml.
Every schema error names the file and the key path, e.g. `plan/plan.yaml: families[1].tests[0].margin: ...`.
A file's shape is checked first (harness.plan.schema), then what its entries mean together, here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, TypedDict

from harness.config.fields import Number, Where
from harness.errors import HarnessError
from harness.files import load_yaml
from harness.plan.analyses import AnalysisPlan, analysis_plans
from harness.plan.checks import ABSENT, Part, PlanWhere
from harness.plan.model import (
    Acceptance, Amendment, DatasetPlan, FamilyPlan, Plan, ReaderAcceptance, Subset, TestPlan,
)
from harness.plan.rules import RULE_TERMS
from harness.plan.schema import (
    MAX_MARGIN, AcceptanceSpec, AmendmentFile, PlanDatasetSpec, FamilySpec, PlanFile, ReaderAcceptanceSpec,
    SubsetSpec, TestSpec,
)

_AMENDMENT_NAME = re.compile(r"^(\d{4})-[a-z0-9][a-z0-9-]*\.yaml$")


class _PlanFiles(Protocol):
    """Where a study keeps its plan (harness.study.Study, a layer above this one)."""

    @property
    def plan_path(self) -> Path: ...

    @property
    def amendments_dir(self) -> Path: ...


def load_study_plan(study: _PlanFiles) -> Plan:
    return load_plan(study.plan_path, study.amendments_dir)


def load_plan(plan_path: str | Path, amendments_dir: str | Path | None = None) -> Plan:
    plan_path = Path(plan_path)
    where = PlanWhere(plan_path)
    spec: PlanFile = Part(PlanFile)(load_yaml(plan_path), where)
    alpha = float(spec.alpha)
    if not 0 < alpha < 1:
        raise where.child("alpha").fail(f"must lie in (0, 1); got {alpha}")
    datasets = {
        name: _dataset(where.child("datasets").child(name), name, d) for name, d in spec.datasets.items()
    }
    state = PlanState(datasets=datasets, arms=list(spec.arms), retrievers=list(spec.retrievers))
    for i, family in enumerate(spec.families):
        _add_family(where.child("families").child(f"[{i}]"), family, "plan", state)
    plan_family_ids = set(state.tests)
    state.analyses += analysis_plans(
        where.child("exploratory"), spec.exploratory, state, "plan", state.analysis_ids
    )
    amendments = []
    if amendments_dir is not None and Path(amendments_dir).is_dir():
        for path in sorted(Path(amendments_dir).glob("*.yaml")):
            amendments.append(_amendment(path, state, plan_family_ids))
    return Plan(
        path=plan_path,
        study=spec.study,
        registered_at=spec.registered_at,
        alpha=alpha,
        resamples=spec.bootstrap.resamples,
        max_flips=spec.permutation.max_flips,
        datasets=datasets,
        arms=tuple(state.arms),
        retrievers=tuple(state.retrievers),
        families=tuple(FamilyPlan(tests=tuple(state.tests[f["id"]]), **f) for f in state.families),
        amendments=tuple(amendments),
        analyses=tuple(state.analyses),
    )


class _FamilyFields(TypedDict):
    """A registered family's FamilyPlan fields except its tests."""

    id: str
    tier: str
    multiplicity: str
    rule: str
    signflip_required: bool
    seed: int
    description: str
    source: str


@dataclass
class PlanState:
    """What the files read so far register: later entries may only refer to it."""

    datasets: dict[str, DatasetPlan]
    arms: list[str]
    retrievers: list[str]
    families: list[_FamilyFields] = field(default_factory=list)
    tests: dict[str, list[TestPlan]] = field(default_factory=dict)  # family id -> tests, in order
    test_ids: set[str] = field(default_factory=set)
    analyses: list[AnalysisPlan] = field(default_factory=list)
    analysis_ids: set[str] = field(default_factory=set)


def _dataset(where: Where, name: str, spec: PlanDatasetSpec) -> DatasetPlan:
    if spec.primary_metric not in spec.metrics:
        raise where.child("primary_metric").fail(
            f"{spec.primary_metric!r} is not among the dataset's metrics"
        )
    margin = checked_margin(spec.margin, lambda message: where.child("margin").fail(message))
    reader = None
    if spec.reader_acceptance is not None:
        at = where.child("reader_acceptance")
        positive, negative = _thresholds(spec.reader_acceptance, lambda message: at.fail(message))
        reader = ReaderAcceptance(positive_min=positive, negative_max=negative)
    return DatasetPlan(
        name=name,
        primary_metric=spec.primary_metric,
        cluster=spec.cluster,
        stratified=spec.stratified,
        margin=margin,
        metrics=spec.metrics,
        reader_acceptance=reader,
    )


def _add_family(where: Where, spec: FamilySpec, source: str, state: PlanState) -> None:
    if spec.id in state.tests:
        raise where.child("id").fail(
            f"family {spec.id!r} already exists; amendments add families, never edit them"
        )
    rule = RULE_TERMS[spec.decision.rule]
    if rule.unadjusted_only and spec.multiplicity != "none":
        raise where.child("decision").child("rule").fail(
            f"rule {rule.name} {rule.unadjusted_only}; use multiplicity: none")
    state.families.append(_FamilyFields(
        id=spec.id, tier=spec.tier, multiplicity=spec.multiplicity, rule=rule.name,
        signflip_required=spec.decision.signflip_required, seed=spec.seed, description=spec.description,
        source=source,
    ))
    state.tests[spec.id] = []
    for j, test in enumerate(spec.tests):
        _add_test(where.child("tests").child(f"[{j}]"), test, spec.id, source, state)


def _add_test(where: Where, spec: TestSpec, fam_id: str, source: str, state: PlanState) -> None:
    # errors inside a test name it, so a message from freeze points at it
    def fail(key: str, message: str) -> HarnessError:
        return where.child(key).fail(f"{message} [test {spec.id}]")

    if spec.id in state.test_ids:
        raise fail("id", f"test {spec.id!r} already exists; amendments never edit earlier entries")
    for side in ("a", "b"):
        arm = getattr(spec, side)
        if arm not in state.arms:
            raise fail(side, f"arm {arm!r} is not registered (arms: {', '.join(state.arms)})")
    for key in ("retriever", "retriever_b"):
        r = getattr(spec, key)
        if r is not None and r not in state.retrievers:
            raise fail(key, f"retriever {r!r} is not registered (retrievers: {', '.join(state.retrievers)})")
    if spec.retriever_b == spec.retriever:
        raise fail("retriever_b", f"is the test's own retriever {spec.retriever!r}; omit it")
    if spec.a == spec.b and spec.retriever_b is None:
        raise fail("b", f"compares arm {spec.a!r} with itself")
    if spec.dataset not in state.datasets:
        raise fail(
            "dataset", f"dataset {spec.dataset!r} is not in the plan (datasets: {', '.join(state.datasets)})"
        )
    if spec.metric not in state.datasets[spec.dataset].metrics:
        raise fail("metric", f"metric {spec.metric!r} is not registered for dataset {spec.dataset!r}")
    family = next(f for f in state.families if f["id"] == fam_id)
    if spec.rule is not ABSENT and spec.rule not in tuple(
        RULE_TERMS
    ):  # a tuple: an unhashable value is no crash
        raise fail("rule", f"unknown decision rule {spec.rule!r} (known: {', '.join(RULE_TERMS)})")
    rule = RULE_TERMS[family["rule"] if spec.rule is ABSENT else spec.rule]
    if rule.holm_needs_signflip and family["multiplicity"] == "holm" and not family["signflip_required"]:
        raise fail("rule", f"a {rule.title} test in Holm family {fam_id!r} needs decision.signflip_required: "
                   "true (the Holm-adjusted sign-flip p is what the adjustment acts on)")
    if rule.unadjusted_only and family["multiplicity"] != "none":
        raise fail("rule", f"rule {rule.name} {rule.unadjusted_only}, so its family {fam_id!r} needs "
                   "multiplicity: none")
    margin = None
    if rule.needs_margin:
        if spec.margin is ABSENT:
            raise fail("margin", f"required for a {rule.title} test")
        margin = checked_margin(
            Number()(spec.margin, where.child("margin")), lambda message: fail("margin", message)
        )
    elif spec.margin is not ABSENT:
        takers = " and ".join(f"{r.title} tests" for r in RULE_TERMS.values() if r.needs_margin)
        raise fail("margin", f"only {takers} take a margin")
    dataset = state.datasets[spec.dataset]
    subset = _subset(where.child("subset"), spec.subset, dataset, fail) if spec.subset is not None else None
    acceptance = _acceptance(spec.acceptance, fail) if spec.acceptance is not None else None
    state.test_ids.add(spec.id)
    state.tests[fam_id].append(
        TestPlan(
            id=spec.id,
            family=fam_id,
            a=spec.a,
            b=spec.b,
            retriever=spec.retriever,
            dataset=spec.dataset,
            metric=spec.metric,
            rule=rule.name,
            margin=margin,
            subset=subset,
            source=source,
            acceptance=acceptance,
            retriever_b=spec.retriever_b,
        )
    )


def checked_margin(value: float, fail: Callable[[str], HarnessError]) -> float:
    """An equivalence margin in points: positive, at most MAX_MARGIN (the schema already refused .nan and
    .inf)."""
    margin = float(value)
    if not 0 < margin <= MAX_MARGIN:
        raise fail(f"must be positive and at most {MAX_MARGIN:g} points; got {margin}")
    return margin


def _subset(where: Where, spec: SubsetSpec, dataset: DatasetPlan,
            fail: Callable[[str, str], HarnessError]) -> Subset:
    given = {k: v for k, v in vars(spec).items() if v is not ABSENT}
    if not given:
        raise fail("subset", "an empty subset selects nothing; name strata, or n_clusters and seed")
    if ("n_clusters" in given) != ("seed" in given):
        raise fail("subset", "n_clusters and seed go together (the sample must be reproducible)")
    strata = given.get("strata")
    if strata is not None:
        if not strata:
            raise fail("subset.strata", "expected a non-empty list of strata")
        if not dataset.stratified:
            raise fail("subset.strata", f"dataset {dataset.name!r} is not stratified (stratified: false)")
    allow = given.get("allow_shortfall", False)
    if allow and "n_clusters" not in given:
        raise fail("subset.allow_shortfall", "only a sampled subset (n_clusters, seed) can fall short")
    return Subset(
        n_clusters=given.get("n_clusters"), seed=given.get("seed"), strata=strata, allow_shortfall=allow
    )


def _acceptance(spec: AcceptanceSpec, fail: Callable[[str, str], HarnessError]) -> Acceptance:
    positive, negative = _thresholds(spec, lambda message: fail("acceptance", message))
    return Acceptance(judge=spec.judge, positive_min=positive, negative_max=negative)


def _thresholds(
    spec: ReaderAcceptanceSpec | AcceptanceSpec, fail: Callable[[str], HarnessError],
) -> tuple[float, float]:
    """An instrument's (positive_min, negative_max): a control it must pass and one it must fail."""
    positive, negative = float(spec.positive_min), float(spec.negative_max)
    if not 0 <= negative < positive <= 1:
        raise fail(f"needs 0 <= negative_max < positive_min <= 1; got {negative} and {positive}")
    return positive, negative


def _amendment(path: Path, state: PlanState, plan_family_ids: set[str]) -> Amendment:
    data = load_yaml(path)
    where = PlanWhere(path)
    match = _AMENDMENT_NAME.match(path.name)
    if not match:
        raise where.fail("amendment files are named NNNN-slug.yaml (four digits, lower-case slug)")
    if not path.with_suffix(".md").is_file():
        raise where.fail(f"its prose {path.with_suffix('.md').name} is missing beside it")
    spec: AmendmentFile = Part(AmendmentFile)(data, where)
    amend_id = str(spec.id)
    if amend_id != match.group(1):
        raise where.child("id").fail(
            f"{spec.id!r} does not match the file name's number {match.group(1)!r} (quote it)"
        )
    source = f"amendment {amend_id}"
    adds = where.child("adds")
    for kind, new, known in (
        ("arm", spec.adds.arms, state.arms),
        ("retriever", spec.adds.retrievers, state.retrievers),
    ):
        for i, name in enumerate(new):
            if name in known:
                raise adds.child(f"{kind}s").child(f"[{i}]").fail(f"{kind} {name!r} is already registered")
        known.extend(new)
    before = set(state.tests)
    for i, family in enumerate(spec.adds.families):
        _add_family(adds.child("families").child(f"[{i}]"), family, source, state)
    added_tests = [t.id for f in state.tests if f not in before for t in state.tests[f]]
    for i, test in enumerate(spec.adds.tests):
        at = adds.child("tests").child(f"[{i}]")
        if test.family not in state.tests:
            raise at.child("family").fail(f"no family {test.family!r}")
        if test.family in plan_family_ids:
            raise at.child("family").fail(
                f"{test.family!r} is registered in plan.yaml; adding tests would change "
                "its multiplicity after registration (add a new family instead)"
            )
        _add_test(at, test, test.family, source, state)
        added_tests.append(test.id)
    added_analyses = analysis_plans(adds.child("exploratory"), spec.adds.exploratory, state, source,
                                    state.analysis_ids)
    state.analyses += added_analyses
    if not (spec.adds.arms or spec.adds.retrievers or added_tests or added_analyses):
        raise adds.fail("an amendment must add at least one arm, retriever, family, test or analysis")
    return Amendment(
        id=amend_id,
        path=path,
        created_at=spec.created_at,
        reason=spec.reason,
        before_outcomes=spec.before_outcomes,
        arms=spec.adds.arms,
        retrievers=spec.adds.retrievers,
        families=tuple(f for f in state.tests if f not in before),
        tests=tuple(added_tests),
    )
