"""Run the plan's families: one contrast per test, then Holm and verdicts as the plan's rules say.

The JSON written per family (results/stats/<family>.json) is `FamilyResult.to_json()`; tables, plots and
`harness audit` read that JSON, never recompute their own numbers.
"""

from __future__ import annotations

import enum
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Mapping, TypedDict

import numpy as np
import pandas as pd

from harness import __version__
from harness.errors import InputError
from harness.stats.contrast import ContrastResult, ResultTable, as_results, compare, missing_for
from harness.stats.decided import JUDGE, READER, DecidedRow, InstrumentControls
from harness.inference.holm import holm
from harness.inference.power import POWER, minimum_detectable_difference
from harness.metrics.registry import is_answer_level
from harness.plan.model import Acceptance, FamilyPlan, Plan, ReaderAcceptance, TestPlan, derive_seed
from harness.provenance.checks import Check
from harness.stats.rules import DecisionContext, Rule, RuledFamily, RuledTest, ruled
from harness.stats.subsets import select_questions
from harness.inference.t_tost import disagrees
from harness.stats.verdicts import MISSING, undecided


class Status(str, enum.Enum):
    RAN = "ran"
    NOT_RUN = "not run"  # no test of the family has per-question results


@dataclass(frozen=True)
class FamilyResult:
    """One family's statistics; `to_json()` is results/stats/<family>.json, key for key and in this order."""

    family: str
    description: str
    tier: str
    multiplicity: str
    rule: str
    signflip_required: bool
    alpha: float
    seed: int
    resamples: int
    max_flips: int
    source: str
    n_tests: int
    study: str
    harness_version: str
    status: Status
    missing: tuple[str, ...]
    rows: tuple[DecidedRow, ...]
    # stamped by `harness stats`: the frozen config the results were scored under, and a logged deviation
    frozen_config_hash: str | None = None
    deviation: str | None = None
    demoted: str | None = None  # why its registered tier was lowered to exploratory (harness.stats.demotion)

    @property
    def ran(self) -> bool:
        return self.status is Status.RAN

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out |= {"status": self.status.value, "missing": list(self.missing),
                "rows": [row.to_json() for row in self.rows]}
        return {k: v for k, v in out.items() if v is not None or k not in _STAMPS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> "FamilyResult":
        """A released <family>.json read back; `where` (its path) names it in errors."""
        required = [f.name for f in fields(cls) if f.name not in _STAMPS]
        absent = [k for k in required if k not in data]
        if absent:
            raise InputError(f"{where}: not a family's statistics; missing {', '.join(absent)}")
        try:
            status = Status(data["status"])
        except ValueError:
            raise InputError(f"{where}: status {data['status']!r} is not one of "
                             f"{', '.join(s.value for s in Status)}") from None
        if not isinstance(data["rows"], list):
            raise InputError(f"{where}: `rows` must be a list; got {type(data['rows']).__name__}")
        rows = tuple(DecidedRow.from_json(row, f"{where}, row {i + 1}") for i, row in enumerate(data["rows"]))
        stamps: dict[str, Any] = {k: data.get(k) for k in _STAMPS}
        return cls(**{k: data[k] for k in required if k not in ("status", "missing", "rows")},
                   status=status, missing=tuple(data["missing"]), rows=rows, **stamps)


_STAMPS = ("frozen_config_hash", "deviation", "demoted")  # written only when set


class FamilySettings(TypedDict):
    """A family's settings as FamilyResult carries them (its fields before `status`)."""

    family: str
    description: str
    tier: str
    multiplicity: str
    rule: str
    signflip_required: bool
    alpha: float
    seed: int
    resamples: int
    max_flips: int
    source: str
    n_tests: int
    study: str
    harness_version: str


def _settings(plan: Plan, family: FamilyPlan) -> FamilySettings:
    return {
        "family": family.id,
        "description": family.description,
        "tier": family.tier,
        "multiplicity": family.multiplicity,
        "rule": family.rule,
        "signflip_required": family.signflip_required,
        "alpha": plan.alpha,
        "seed": family.seed,
        "resamples": plan.resamples,
        "max_flips": plan.max_flips,
        "source": family.source,
        "n_tests": len(family.tests),
        "study": plan.study,
        "harness_version": __version__,
    }


class CompareArguments(TypedDict):
    """`compare`'s keyword arguments for one registered test (the table aside)."""

    dataset: str
    a: str
    b: str
    retriever: str
    metric: str
    seed: int
    resamples: int
    max_flips: int
    margin: float | None
    stratified: bool
    subset_clusters: set[str] | None
    strata: set[str] | None
    retriever_b: str | None


def contrast_arguments(
    plan: Plan, family: FamilyPlan, ruled_test: RuledTest, table: ResultTable
) -> CompareArguments:
    """What `compare` is called with for one registered test (its seed derived from the family's)."""
    test = ruled_test.test
    selection = select_questions(table, test)
    return CompareArguments(
        dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever, metric=test.metric,
        seed=derive_seed(family.seed, test.id), resamples=plan.resamples, max_flips=plan.max_flips,
        margin=test.margin if ruled_test.rule.computes_p_tost else None,
        stratified=plan.datasets[test.dataset].stratified,
        subset_clusters=selection.clusters, strata=selection.strata, retriever_b=test.retriever_b,
    )


def run_family(
    plan: Plan, ruled_family: RuledFamily, table: pd.DataFrame | ResultTable, *,
    judge_rates: Mapping[str, Mapping[str, float]] | None = None,
    contrast: Callable[[FamilyPlan, TestPlan, ResultTable], ContrastResult] | None = None,
    reader_rates: Mapping[str, Mapping[str, Any]] | None = None,
) -> FamilyResult:
    """Every test of the family that has results; a test without them is a row with verdict `missing`
    (Holm still counts it, as p = 1, so the registered family size holds). A family none of whose tests
    has results is not run. `judge_rates` gives, per judge name, its measured acceptance-control rates
    (`positive`: on the accepted answer, `negative`: on another question's answer); a test whose judge
    misses a registered threshold, or has no recorded rates, is reported as exploratory; so is an answer-level
    test whose dataset's reader missed its controls (`reader_rates`, per dataset). `contrast`
    (family, test, table) -> compare's result replaces the in-process call (harness.stats.on_ray)."""
    family = ruled_family.family
    settings = _settings(plan, family)
    table = as_results(table)
    contrasts, missing = [], []
    for ruled_test in ruled_family.tests:
        test, rule = ruled_test.test, ruled_test.rule
        lacking = missing_for(table, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                              metric=test.metric, retriever_b=test.retriever_b)
        if lacking:
            missing += lacking
            contrasts.append(PlannedContrast(test, rule, None, lacking=tuple(lacking)))
            continue
        selection = select_questions(table, test)
        if contrast is None:
            result = compare(table, **contrast_arguments(plan, family, ruled_test, table))
        else:
            result = contrast(family, test, table)
        contrasts.append(PlannedContrast(test, rule, result, subset=selection.to_json(test)))
    missing = sorted(set(missing))
    if all(c.result is None for c in contrasts):
        return FamilyResult(**settings, status=Status.NOT_RUN, missing=tuple(missing), rows=(),
                            demoted=family.demoted)
    rows = decide_family(plan, family, contrasts, judge_rates, reader_rates=reader_rates)
    return FamilyResult(**settings, status=Status.RAN, missing=tuple(missing), rows=tuple(rows),
                        demoted=family.demoted)


def run_plan(
    plan: Plan,
    table: pd.DataFrame,
    only: list[str] | None = None,
    judge_rates: Mapping[str, Mapping[str, float]] | None = None,
    contrast: Callable[[FamilyPlan, TestPlan, ResultTable], ContrastResult] | None = None,
    threads: int = 1,
    reader_rates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[FamilyResult]:
    """Every family (or those in `only`). With `threads` > 1 the contrasts' bootstraps and sign-flips run
    in that many threads first (NumPy's draws and sums release the GIL); each contrast has its own seed,
    so the output is the same for any thread count."""
    families = planned_families(plan, only)
    results = as_results(table)
    if contrast is None and threads > 1:
        contrast = _contrasts_in_threads(plan, families, results, threads)
    return [
        run_family(plan, fam, results, judge_rates=judge_rates, contrast=contrast, reader_rates=reader_rates)
        for fam in families
    ]


def planned_families(plan: Plan, only: list[str] | None = None) -> list[RuledFamily]:
    """Every family of the plan (or those in `only`), its tests' rules resolved."""
    return [ruled(f) for f in (plan.families if not only else [plan.family(f) for f in only])]


def _contrasts_in_threads(
    plan: Plan, families: list[RuledFamily], results: ResultTable, threads: int
) -> Callable[[FamilyPlan, TestPlan, ResultTable], ContrastResult]:
    jobs = {}
    for fam in families:
        for ruled_test in fam.tests:
            test = ruled_test.test
            if not missing_for(results, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                               metric=test.metric, retriever_b=test.retriever_b):
                jobs[(fam.family.id, test.id)] = contrast_arguments(plan, fam.family, ruled_test, results)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = {key: pool.submit(compare, results, **arguments) for key, arguments in jobs.items()}
        computed = {key: future.result() for key, future in futures.items()}  # first failure in plan order
    return lambda family, test, _table: computed[(family.id, test.id)]


@dataclass(frozen=True)
class PlannedContrast:
    """One registered test's contrast as its family decides it; `result` None: the test has no per-question
    results (`lacking` says which)."""

    test: TestPlan
    rule: Rule
    result: ContrastResult | None
    subset: dict[str, Any] | None = None  # the registered subset as drawn (Selection.to_json)
    lacking: tuple[str, ...] = ()


def _holm_p(contrast: ContrastResult | None, key: str) -> float:
    """The p Holm acts on for one row: `key` of its contrast; a test that is missing or that no rule may
    decide (harness.stats.verdicts.undecided) counts as 1, never rejected."""
    if contrast is None or undecided(contrast) is not None:
        return 1.0
    return float(getattr(contrast, key))


def decide_family(plan: Plan, family: FamilyPlan, contrasts: list[PlannedContrast],
                  judge_rates: Mapping[str, Mapping[str, float]] | None = None, *,
                  reader_rates: Mapping[str, Mapping[str, Any]] | None = None) -> list[DecidedRow]:
    """Holm over each row's decisive p (its rule's: p_tost for TOST rows, else the sign-flip p), then
    verdicts.

    `contrasts` holds each registered test's contrast (and its rule) in family order. The one decision path:
    `harness stats` and the known-effects replicates (harness.stats.replicates) both decide here. Rows
    deciding on p_tost also get the Holm-adjusted sign-flip p over the family's sign-flip p's: the verdict
    does not use it, but it is reported beside the TOST result.
    A row no rule may decide (too few clusters, no variation) keeps its statistics, takes that verdict with
    its reason, and enters both Holm steps as p = 1, as a missing test does. TOST rows also carry whether
    the t-TOST (harness.inference.t_tost) disagrees about equivalence at alpha, both p's unadjusted."""
    judge_rates, reader_rates = judge_rates or {}, reader_rates or {}
    holm_family = family.multiplicity == "holm"
    decisive = np.array([_holm_p(c.result, c.rule.decisive_p) for c in contrasts])
    adjusted = holm(decisive) if holm_family else None
    flips = np.array([_holm_p(c.result, "p_signflip") for c in contrasts])
    flips_adjusted = holm(flips) if holm_family else None
    rows = []
    for i, one in enumerate(contrasts):
        test, c = one.test, one.result
        checks = instrument_checks(plan, test, judge_rates, reader_rates)
        missing = DecidedRow(
            test=test.id, rule=test.rule, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
            metric=test.metric, margin=test.margin, retriever_b=test.retriever_b,
            tier=family.tier if all(check.passed for check in checks.values()) and not test.demoted
            else "exploratory",
            source=test.source, verdict=MISSING, missing=one.lacking, demoted=test.demoted,
            subset=None if test.subset is None else test.subset.to_json())
        if c is None:
            rows.append(missing)
            continue
        rule = one.rule
        p = decisive[i] if adjusted is None else adjusted[i]
        verdict = rule.decide(c, DecisionContext(p=float(p), margin=test.margin, alpha=plan.alpha,
                                                 signflip_required=family.signflip_required))
        if verdict.label not in rule.verdicts:
            raise ValueError(f"rule {rule.name} gave verdict {verdict.label!r}, not one of its labels "
                             f"{', '.join(rule.verdicts)}")
        verdict = undecided(c) or verdict
        # a Holm family adjusts the sign-flip p and the decisive p (one and the same for a sign-flip rule)
        flip_holm = None if flips_adjusted is None else float(flips_adjusted[i])
        decisive_holm = None if adjusted is None else float(adjusted[i])
        rows.append(replace(
            missing, verdict=verdict.label, missing=(), subset=one.subset, contrast=c,
            t_tost_disagrees=disagrees(c.p_tost, c.p_tost_t, plan.alpha),
            p_tost_holm=decisive_holm if rule.decisive_p == "p_tost" else None,
            p_signflip_holm=decisive_holm if rule.decisive_p == "p_signflip" else flip_holm,
            # how large a difference this row could have seen (80% power at the family's alpha)
            mdd=minimum_detectable_difference(c.se_cluster, alpha=plan.alpha, power=POWER),
            ci_shown=rule.ci_shown, verdict_reason=verdict.reason,
            small_difference_within_margin=verdict.small_difference_within_margin,
            acceptance=checks.get("acceptance"), reader_acceptance=checks.get("reader_acceptance")))
    return rows


def instrument_checks(plan: Plan, test: TestPlan, judge_rates: Mapping[str, Mapping[str, Any]],
                      reader_rates: Mapping[str, Mapping[str, Any]]) -> dict[str, InstrumentControls]:
    """Every instrument a test's outcome rests on, under the row field it is reported in: the judge
    (`acceptance`, for a test naming one) and the reader (`reader_acceptance`, for an answer-level metric),
    each with the plan's thresholds, the measured rates and whether it passed. A row keeps its family's tier
    only when every one passed."""
    checks: dict[str, InstrumentControls] = {}
    if test.acceptance is not None:
        rates = judge_rates.get(test.acceptance.judge)
        checks["acceptance"] = InstrumentControls(
            JUDGE, test.acceptance.judge, test.acceptance.positive_min, test.acceptance.negative_max,
            positive=None if rates is None else rates.get("positive"),
            negative=None if rates is None else rates.get("negative"),
            passed=judge_passed(test.acceptance, rates),
            kappa=None if rates is None else (rates.get("spot_check") or {}).get("kappa"))
    if is_answer_level(test.metric):
        registered = plan.datasets[test.dataset].reader_acceptance
        rates = reader_rates.get(test.dataset)
        checks["reader_acceptance"] = InstrumentControls(
            READER, test.dataset, None if registered is None else registered.positive_min,
            None if registered is None else registered.negative_max,
            positive=None if rates is None else rates.get("positive"),
            negative=None if rates is None else rates.get("negative"),
            passed=reader_passed(registered, rates))
    return checks


def reader_passed(registered: ReaderAcceptance | None, rates: Mapping[str, Any] | None) -> bool:
    """The reader reached positive_min from the gold evidence and stayed at or below negative_max from another
    cluster's; no registered thresholds or no recorded (computable) rates means not passed."""
    if registered is None or rates is None or rates.get("positive") is None or rates.get("negative") is None:
        return False
    return bool(rates["positive"] >= registered.positive_min and rates["negative"] <= registered.negative_max)


def judge_passed(acceptance: Acceptance, rates: Mapping[str, float] | None) -> bool:
    """Both controls met: at least positive_min on the accepted answer, at most negative_max on another
    question's answer, and a human spot check on file whose kappa passed (`spot_check.passed`, written by
    `harness judge-agreement --study`). No recorded rates means not passed."""
    if rates is None or rates.get("positive") is None or rates.get("negative") is None:
        return False
    spot = rates.get("spot_check")
    if not isinstance(spot, Mapping) or spot.get("passed") is not True:
        return False
    return bool(rates["positive"] >= acceptance.positive_min and rates["negative"] <= acceptance.negative_max)


# --- audit: released JSON against a fresh recomputation ---

def check_family(
    released: Mapping[str, Any], recomputed: Mapping[str, Any], *, rel_tol: float = 1e-9
) -> list[Check]:
    """PASS/FAIL per row, the family the subject and the test the item (and one check, item "(family)", for
    the family's settings and status). Both sides are JSON as
    written (`FamilyResult.to_json()`), compared key by key, so the released file is judged as it is on
    disk."""
    fam = recomputed["family"]
    checks = []
    settings_diff = [
        k for k in recomputed
        if k not in ("rows", "harness_version") and not _same(released.get(k), recomputed[k], rel_tol)
    ]
    checks.append(Check.judged(fam, "(family)", not settings_diff,
                               "settings and status match" if not settings_diff
                               else "differs in " + ", ".join(_describe(k, released.get(k), recomputed[k])
                                                              for k in settings_diff)))
    released_rows = {r.get("test"): r for r in released.get("rows", [])}
    for row in recomputed["rows"]:
        old = released_rows.pop(row["test"], None)
        if old is None:
            checks.append(Check.judged(fam, row["test"], False, "row missing from the released statistics"))
            continue
        diff = sorted(k for k in set(row) | set(old) if not _same(old.get(k), row.get(k), rel_tol))
        reason = f" ({row['verdict_reason']})" if row.get("verdict_reason") else ""
        checks.append(Check.judged(fam, row["test"], not diff,
                                   f"verdict {row['verdict']}{reason}" if not diff
                                   else "differs in " + ", ".join(_describe(k, old.get(k), row.get(k))
                                                                  for k in diff)))
    for test in sorted(map(str, released_rows)):
        checks.append(Check.judged(fam, test, False, "released row is not in the plan"))
    return checks


def _same(old: object, new: object, rel_tol: float) -> bool:
    if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None:
        return old == new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return math.isclose(old, new, rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same(o, n, rel_tol) for o, n in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k], rel_tol) for k in old)
    return old == new


def _describe(key: str, old: object, new: object) -> str:
    return f"{key} (released {old!r}, recomputed {new!r})"
