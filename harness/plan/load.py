"""The registered analysis as data: plan/plan.yaml plus amendments/NNNN-*.yaml (issue 4).

Amendments only add (families, tests, arms, retrievers); a test id, family id, arm or retriever that
already exists is rejected, and tests may not be added to a family registered in plan.yaml.
Every schema error names the file and the key path, e.g. `plan/plan.yaml: families[1].tests[0].margin: ...`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.files import load_yaml
from harness.plan.analyses import AnalysisPlan, parse_analyses
from harness.plan.model import Acceptance, Amendment, DatasetPlan, FamilyPlan, Plan, Subset, TestPlan
from harness.plan.rules import RULE_TERMS as RULES

TIERS = ("confirmatory", "secondary", "exploratory")
MULTIPLICITY = ("holm", "none")
BOOTSTRAP_METHODS = ("bca-cluster",)
PERMUTATION_METHODS = ("cluster-sign-flip",)
_AMENDMENT_NAME = re.compile(r"^(\d{4})-[a-z0-9][a-z0-9-]*\.yaml$")


def load_study_plan(study) -> Plan:
    return load_plan(study.plan_path, study.amendments_dir)


def load_plan(plan_path: str | Path, amendments_dir: str | Path | None = None) -> Plan:
    plan_path = Path(plan_path)
    doc = _Doc(plan_path, load_yaml(plan_path))
    top = doc.mapping(doc.data, "", required=(
        "study", "registered_at", "alpha", "bootstrap", "permutation", "datasets", "arms", "retrievers",
        "families"), optional=("exploratory",))
    alpha = doc.number(top["alpha"], "alpha")
    if not 0 < alpha < 1:
        doc.fail("alpha", f"must lie in (0, 1); got {alpha}")
    boot = doc.mapping(top["bootstrap"], "bootstrap", required=("method", "resamples"))
    doc.choice(boot["method"], "bootstrap.method", BOOTSTRAP_METHODS)
    perm = doc.mapping(top["permutation"], "permutation", required=("method", "max_flips"))
    doc.choice(perm["method"], "permutation.method", PERMUTATION_METHODS)
    datasets = {}
    for name, spec in doc.mapping(top["datasets"], "datasets").items():
        datasets[name] = _dataset(doc, name, spec)
    state = _State(
        datasets=datasets,
        arms=list(doc.names(top["arms"], "arms")),
        retrievers=list(doc.names(top["retrievers"], "retrievers")),
    )
    families_raw = doc.sequence(top["families"], "families")
    for i, raw in enumerate(families_raw):
        _add_family(doc, f"families[{i}]", raw, "plan", state)
    plan_family_ids = {f["id"] for f in state.families}
    state.analyses += parse_analyses(doc, "exploratory", top.get("exploratory", []), state, "plan",
                                     state.analysis_ids)
    amendments = []
    if amendments_dir is not None and Path(amendments_dir).is_dir():
        for path in sorted(Path(amendments_dir).glob("*.yaml")):
            amendments.append(_amendment(path, state, plan_family_ids))
    families = tuple(
        FamilyPlan(tests=tuple(state.tests[f["id"]]), **f) for f in state.families
    )
    return Plan(
        path=plan_path,
        study=doc.text(top["study"], "study"),
        registered_at=doc.timestamp(top["registered_at"], "registered_at"),
        alpha=alpha,
        resamples=doc.integer(boot["resamples"], "bootstrap.resamples", minimum=2),
        max_flips=doc.integer(perm["max_flips"], "permutation.max_flips", minimum=1),
        datasets=datasets,
        arms=tuple(state.arms),
        retrievers=tuple(state.retrievers),
        families=families,
        amendments=tuple(amendments),
        analyses=tuple(state.analyses),
    )


@dataclass
class _State:
    datasets: dict[str, DatasetPlan]
    arms: list[str]
    retrievers: list[str]
    families: list[dict] = field(default_factory=list)  # FamilyPlan fields except tests
    tests: dict[str, list[TestPlan]] = field(default_factory=dict)  # family id -> tests, in order
    test_ids: set[str] = field(default_factory=set)
    analyses: list[AnalysisPlan] = field(default_factory=list)
    analysis_ids: set[str] = field(default_factory=set)


class _Doc:
    """One YAML file under validation: typed accessors that fail with `file: key.path: message`."""

    def __init__(self, path: Path, data: Any):
        self.path, self.data = path, data

    def fail(self, key: str, message: str):
        raise InputError(f"{key}: {message}" if key else message, path=self.path)

    def mapping(self, value, key, required=(), optional=()):
        if not isinstance(value, dict):
            self.fail(key or "top level", f"expected a mapping; got {type(value).__name__}")
        for name in required:
            if name not in value:
                self.fail(_join(key, name), "required key is missing")
        if required or optional:
            unknown = sorted(set(map(str, value)) - set(required) - set(optional))
            if unknown:
                allowed = ", ".join((*required, *optional))
                self.fail(_join(key, unknown[0]), f"unknown key (allowed: {allowed})")
        return value

    def sequence(self, value, key, non_empty=True):
        if not isinstance(value, list) or (non_empty and not value):
            self.fail(key, "expected a non-empty list")
        return value

    def text(self, value, key) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected a non-empty string; got {value!r}")
        return value

    def names(self, value, key) -> list[str]:
        names = [self.text(v, f"{key}[{i}]") for i, v in enumerate(self.sequence(value, key, non_empty=False))]
        seen = set()
        for i, name in enumerate(names):
            if name in seen:
                self.fail(f"{key}[{i}]", f"{name!r} is listed twice")
            seen.add(name)
        return names

    def number(self, value, key) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"expected a number; got {value!r}")
        return float(value)

    def integer(self, value, key, minimum=0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"expected an integer >= {minimum}; got {value!r}")
        return value

    def boolean(self, value, key) -> bool:
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false; got {value!r}")
        return value

    def choice(self, value, key, choices) -> str:
        if value not in choices:
            self.fail(key, f"expected one of {', '.join(choices)}; got {value!r}")
        return value

    def timestamp(self, value, key) -> str:
        if isinstance(value, dt.datetime):  # YAML parses unquoted timestamps itself
            return value.isoformat()
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is not None:
                return value
        self.fail(key, f"expected an ISO 8601 date-time with a time zone; got {value!r}")


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else str(name)


def _dataset(doc: _Doc, name: str, spec) -> DatasetPlan:
    key = f"datasets.{name}"
    spec = doc.mapping(spec, key, required=("primary_metric", "cluster", "stratified", "margin", "metrics"))
    metrics = tuple(doc.names(spec["metrics"], f"{key}.metrics"))
    primary = doc.text(spec["primary_metric"], f"{key}.primary_metric")
    if primary not in metrics:
        doc.fail(f"{key}.primary_metric", f"{primary!r} is not among the dataset's metrics")
    margin = doc.number(spec["margin"], f"{key}.margin")
    if margin <= 0:
        doc.fail(f"{key}.margin", f"must be positive; got {margin}")
    return DatasetPlan(name=name, primary_metric=primary, cluster=doc.text(spec["cluster"], f"{key}.cluster"),
                       stratified=doc.boolean(spec["stratified"], f"{key}.stratified"), margin=margin,
                       metrics=metrics)


def _add_family(doc: _Doc, key: str, raw, source: str, state: _State) -> None:
    raw = doc.mapping(raw, key, required=("id", "tier", "multiplicity", "decision", "seed", "description", "tests"))
    fam_id = doc.text(raw["id"], f"{key}.id")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", fam_id):
        doc.fail(f"{key}.id", f"{fam_id!r} must use letters, digits, '_' or '-' (it names output files)")
    if fam_id in state.tests:
        doc.fail(f"{key}.id", f"family {fam_id!r} already exists; amendments add families, never edit them")
    decision = doc.mapping(raw["decision"], f"{key}.decision", required=("rule", "signflip_required"))
    rule = doc.choice(decision["rule"], f"{key}.decision.rule", tuple(RULES))
    signflip_required = doc.boolean(decision["signflip_required"], f"{key}.decision.signflip_required")
    if RULES[rule].unadjusted_only and raw.get("multiplicity") != "none":
        doc.fail(f"{key}.decision.rule", f"rule {rule} {RULES[rule].unadjusted_only}; use multiplicity: none")
    state.families.append(dict(
        id=fam_id,
        tier=doc.choice(raw["tier"], f"{key}.tier", TIERS),
        multiplicity=doc.choice(raw["multiplicity"], f"{key}.multiplicity", MULTIPLICITY),
        rule=rule,
        signflip_required=signflip_required,
        seed=doc.integer(raw["seed"], f"{key}.seed"),
        description=doc.text(raw["description"], f"{key}.description"),
        source=source,
    ))
    state.tests[fam_id] = []
    for j, test in enumerate(doc.sequence(raw["tests"], f"{key}.tests")):
        _add_test(doc, f"{key}.tests[{j}]", test, fam_id, source, state)


def _add_test(doc: _Doc, key: str, raw, fam_id: str, source: str, state: _State) -> None:
    optional = ("margin", "subset", "family", "rule", "acceptance", "retriever_b")
    raw = doc.mapping(raw, key, required=("id", "a", "b", "retriever", "dataset", "metric"), optional=optional)
    test_id = doc.text(raw["id"], f"{key}.id")
    test = _TestDoc(doc, test_id)
    if test_id in state.test_ids:
        test.fail(f"{key}.id", f"test {test_id!r} already exists; amendments never edit earlier entries")
    a, b = doc.text(raw["a"], f"{key}.a"), doc.text(raw["b"], f"{key}.b")
    for side, arm in (("a", a), ("b", b)):
        if arm not in state.arms:
            test.fail(f"{key}.{side}", f"arm {arm!r} is not registered (arms: {', '.join(state.arms)})")
    retriever = doc.text(raw["retriever"], f"{key}.retriever")
    retriever_b = doc.text(raw["retriever_b"], f"{key}.retriever_b") if "retriever_b" in raw else None
    for field, r in (("retriever", retriever), ("retriever_b", retriever_b)):
        if r is not None and r not in state.retrievers:
            test.fail(f"{key}.{field}", f"retriever {r!r} is not registered (retrievers: "
                      f"{', '.join(state.retrievers)})")
    if retriever_b == retriever:
        test.fail(f"{key}.retriever_b", f"is the test's own retriever {retriever!r}; omit it")
    if a == b and retriever_b is None:
        test.fail(f"{key}.b", f"compares arm {a!r} with itself")
    dataset = doc.text(raw["dataset"], f"{key}.dataset")
    if dataset not in state.datasets:
        test.fail(f"{key}.dataset", f"dataset {dataset!r} is not in the plan (datasets: {', '.join(state.datasets)})")
    metric = doc.text(raw["metric"], f"{key}.metric")
    if metric not in state.datasets[dataset].metrics:
        test.fail(f"{key}.metric", f"metric {metric!r} is not registered for dataset {dataset!r}")
    fam = next(f for f in state.families if f["id"] == fam_id)
    if "rule" in raw and raw["rule"] not in tuple(RULES):  # a tuple: a malformed (unhashable) value is no crash
        test.fail(f"{key}.rule", f"unknown decision rule {raw['rule']!r} (known: {', '.join(RULES)})")
    rule = raw.get("rule", fam["rule"])
    spec = RULES[rule]
    if spec.holm_needs_signflip and fam["multiplicity"] == "holm" and not fam["signflip_required"]:
        test.fail(f"{key}.rule", f"a {spec.title} test in Holm family {fam_id!r} needs decision.signflip_required: "
                  "true (the Holm-adjusted sign-flip p is what the adjustment acts on)")
    if spec.unadjusted_only and fam["multiplicity"] != "none":
        test.fail(f"{key}.rule", f"rule {rule} {spec.unadjusted_only}, so its family {fam_id!r} needs "
                  "multiplicity: none")
    margin = None
    if spec.needs_margin:
        if "margin" not in raw:
            test.fail(f"{key}.margin", f"required for a {spec.title} test")
        margin = doc.number(raw["margin"], f"{key}.margin")
        if margin <= 0:
            test.fail(f"{key}.margin", f"must be positive; got {margin}")
    elif "margin" in raw:
        takers = " and ".join(f"{r.title} tests" for r in RULES.values() if r.needs_margin)
        test.fail(f"{key}.margin", f"only {takers} take a margin")
    subset = _subset(test, f"{key}.subset", raw["subset"], state.datasets[dataset]) if "subset" in raw else None
    acceptance = _acceptance(test, f"{key}.acceptance", raw["acceptance"]) if "acceptance" in raw else None
    state.test_ids.add(test_id)
    state.tests[fam_id].append(TestPlan(id=test_id, family=fam_id, a=a, b=b, retriever=retriever,
                                        dataset=dataset, metric=metric, rule=rule, margin=margin, subset=subset,
                                        source=source, acceptance=acceptance, retriever_b=retriever_b))


class _TestDoc:
    """Errors inside one test name the test id too, so a message from freeze points at the test."""

    def __init__(self, doc: _Doc, test_id: str):
        self.doc, self.test_id = doc, test_id

    def fail(self, key: str, message: str):
        self.doc.fail(key, f"{message} [test {self.test_id}]")


def _subset(test: _TestDoc, key: str, raw, dataset: DatasetPlan) -> Subset:
    doc = test.doc
    spec = doc.mapping(raw, key, optional=("n_clusters", "seed", "strata", "allow_shortfall"))
    if not spec:
        test.fail(key, "an empty subset selects nothing; name strata, or n_clusters and seed")
    if ("n_clusters" in spec) != ("seed" in spec):
        test.fail(key, "n_clusters and seed go together (the sample must be reproducible)")
    strata = None
    if "strata" in spec:
        strata = tuple(doc.names(spec["strata"], f"{key}.strata"))
        if not strata:
            test.fail(f"{key}.strata", "expected a non-empty list of strata")
        if not dataset.stratified:
            test.fail(f"{key}.strata", f"dataset {dataset.name!r} is not stratified (stratified: false)")
    n_clusters = seed = None
    if "n_clusters" in spec:
        n_clusters = doc.integer(spec["n_clusters"], f"{key}.n_clusters", minimum=1)
        seed = doc.integer(spec["seed"], f"{key}.seed")
    allow = doc.boolean(spec.get("allow_shortfall", False), f"{key}.allow_shortfall")
    if allow and n_clusters is None:
        test.fail(f"{key}.allow_shortfall", "only a sampled subset (n_clusters, seed) can fall short")
    return Subset(n_clusters=n_clusters, seed=seed, strata=strata, allow_shortfall=allow)


def _acceptance(test: _TestDoc, key: str, raw) -> Acceptance:
    doc = test.doc
    spec = doc.mapping(raw, key, required=("judge", "positive_min", "negative_max"))
    positive = doc.number(spec["positive_min"], f"{key}.positive_min")
    negative = doc.number(spec["negative_max"], f"{key}.negative_max")
    if not 0 <= negative < positive <= 1:
        test.fail(key, f"needs 0 <= negative_max < positive_min <= 1; got {negative} and {positive}")
    return Acceptance(judge=doc.text(spec["judge"], f"{key}.judge"), positive_min=positive, negative_max=negative)


def _amendment(path: Path, state: _State, plan_family_ids: set[str]) -> Amendment:
    doc = _Doc(path, load_yaml(path))
    match = _AMENDMENT_NAME.match(path.name)
    if not match:
        doc.fail("", "amendment files are named NNNN-slug.yaml (four digits, lower-case slug)")
    if not path.with_suffix(".md").is_file():
        doc.fail("", f"its prose {path.with_suffix('.md').name} is missing beside it")
    top = doc.mapping(doc.data, "", required=("id", "created_at", "reason", "before_outcomes", "adds"))
    amend_id = str(top["id"])
    if amend_id != match.group(1):
        doc.fail("id", f"{top['id']!r} does not match the file name's number {match.group(1)!r} (quote it)")
    source = f"amendment {amend_id}"
    adds = doc.mapping(top["adds"], "adds", optional=("arms", "retrievers", "families", "tests", "exploratory"))
    new_arms = doc.names(adds.get("arms", []), "adds.arms")
    new_retrievers = doc.names(adds.get("retrievers", []), "adds.retrievers")
    for kind, new, known in (("arm", new_arms, state.arms), ("retriever", new_retrievers, state.retrievers)):
        for i, name in enumerate(new):
            if name in known:
                doc.fail(f"adds.{kind}s[{i}]", f"{kind} {name!r} is already registered")
        known.extend(new)
    before = set(state.tests)
    for i, raw in enumerate(doc.sequence(adds.get("families", []), "adds.families", non_empty=False)):
        _add_family(doc, f"adds.families[{i}]", raw, source, state)
    added_tests = [t.id for f in state.tests if f not in before for t in state.tests[f]]
    for i, raw in enumerate(doc.sequence(adds.get("tests", []), "adds.tests", non_empty=False)):
        key = f"adds.tests[{i}]"
        if not isinstance(raw, dict) or "family" not in raw:
            doc.fail(f"{key}.family", "required: the family the test joins")
        fam_id = raw["family"]
        if fam_id not in state.tests:
            doc.fail(f"{key}.family", f"no family {fam_id!r}")
        if fam_id in plan_family_ids:
            doc.fail(f"{key}.family", f"{fam_id!r} is registered in plan.yaml; adding tests would change its "
                     "multiplicity after registration (add a new family instead)")
        _add_test(doc, key, raw, fam_id, source, state)
        added_tests.append(raw["id"])
    added_analyses = parse_analyses(doc, "adds.exploratory", adds.get("exploratory", []), state, source,
                                    state.analysis_ids)
    state.analyses += added_analyses
    if not (new_arms or new_retrievers or added_tests or added_analyses):
        doc.fail("adds", "an amendment must add at least one arm, retriever, family, test or analysis")
    return Amendment(
        id=amend_id,
        path=path,
        created_at=doc.timestamp(top["created_at"], "created_at"),
        reason=doc.text(top["reason"], "reason"),
        before_outcomes=doc.boolean(top["before_outcomes"], "before_outcomes"),
        arms=tuple(new_arms),
        retrievers=tuple(new_retrievers),
        families=tuple(f for f in state.tests if f not in before),
        tests=tuple(added_tests),
    )
