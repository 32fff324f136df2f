"""Run the plan's families: one contrast per test, then Holm and verdicts as the plan's rules say.

The JSON written per family (results/stats/<family>.json) is `FamilyResult.to_json()`; tables, plots and
`harness audit` read that JSON, never recompute their own numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness import __version__
from harness.stats.contrast import ResultTable, as_results, compare, missing_for, sample_clusters
from harness.stats.holm import holm
from harness.stats.plan import FamilyPlan, Plan, derive_seed
from harness.stats.verdicts import tost_verdict, two_sided_verdict

RAN, NOT_RUN = "ran", "not run"


@dataclass(frozen=True)
class FamilyResult:
    family: FamilyPlan
    settings: dict
    status: str
    missing: tuple[str, ...]
    rows: tuple[dict, ...]

    def to_json(self) -> dict:
        return {**self.settings, "status": self.status, "missing": list(self.missing), "rows": list(self.rows)}


def family_settings(plan: Plan, family: FamilyPlan) -> dict:
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


def run_family(plan: Plan, family: FamilyPlan, table: pd.DataFrame | ResultTable) -> FamilyResult:
    settings = family_settings(plan, family)
    table = as_results(table)
    missing = []
    for test in family.tests:
        missing += missing_for(table, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                               metric=test.metric)
    missing = sorted(set(missing))
    if missing:
        return FamilyResult(family, settings, NOT_RUN, tuple(missing), ())
    contrasts = []
    for test in family.tests:
        subset = None
        if test.subset is not None:
            subset = sample_clusters(table, dataset=test.dataset, n_clusters=test.subset.n_clusters,
                                     seed=test.subset.seed)
        result = compare(
            table, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever, metric=test.metric,
            seed=derive_seed(family.seed, test.id), resamples=plan.resamples, max_flips=plan.max_flips,
            margin=test.margin, stratified=plan.datasets[test.dataset].stratified, subset_clusters=subset,
        )
        contrasts.append((test, result.to_json()))
    rows = _decide(plan, family, contrasts)
    return FamilyResult(family, settings, RAN, (), tuple(rows))


def run_plan(plan: Plan, table: pd.DataFrame, only: list[str] | None = None) -> list[FamilyResult]:
    families = plan.families if not only else [plan.family(f) for f in only]
    results = as_results(table)
    return [run_family(plan, fam, results) for fam in families]


def _decide(plan: Plan, family: FamilyPlan, contrasts: list[tuple]) -> list[dict]:
    """Holm over each row's decisive p (p_tost for TOST rows, sign-flip p for two-sided rows), then verdicts."""
    decisive = np.array([c["p_tost"] if t.rule == "tost" else c["p_signflip"] for t, c in contrasts])
    adjusted = holm(decisive) if family.multiplicity == "holm" else None
    rows = []
    for i, (test, c) in enumerate(contrasts):
        row = {"test": test.id, "rule": test.rule, **c, "margin": test.margin, "p_tost": c.get("p_tost"),
               "p_tost_holm": None, "p_signflip_holm": None, "tier": family.tier, "source": test.source,
               "subset": None if test.subset is None else {"n_clusters": test.subset.n_clusters,
                                                          "seed": test.subset.seed}}
        p = decisive[i] if adjusted is None else adjusted[i]
        ci95 = tuple(c["ci95_bca"])
        if test.rule == "tost":
            if adjusted is not None:
                row["p_tost_holm"] = float(adjusted[i])
            verdict = tost_verdict(p_tost=float(p), ci95=ci95, alpha=plan.alpha)
            row["ci_shown"] = "90"
        else:
            if adjusted is not None:
                row["p_signflip_holm"] = float(adjusted[i])
            verdict = two_sided_verdict(ci95=ci95, alpha=plan.alpha, p_signflip=float(p),
                                        signflip_required=family.signflip_required)
            row["ci_shown"] = "95"
        row["verdict"] = verdict.label
        row["small_difference_within_margin"] = verdict.small_difference_within_margin
        rows.append(row)
    return rows


# --- audit: released JSON against a fresh recomputation ---

@dataclass(frozen=True)
class RowCheck:
    family: str
    test: str  # "(family)" for family-level settings and status
    passed: bool
    detail: str


def check_family(released: dict, recomputed: dict, *, rel_tol: float = 1e-9) -> list[RowCheck]:
    """PASS/FAIL per row (and one check for the family's settings and status)."""
    fam = recomputed["family"]
    checks = []
    settings_diff = [
        k for k in recomputed
        if k not in ("rows", "harness_version") and not _same(released.get(k), recomputed[k], rel_tol)
    ]
    checks.append(RowCheck(fam, "(family)", not settings_diff,
                           "settings and status match" if not settings_diff
                           else "differs in " + ", ".join(_describe(k, released.get(k), recomputed[k])
                                                          for k in settings_diff)))
    released_rows = {r.get("test"): r for r in released.get("rows", [])}
    for row in recomputed["rows"]:
        old = released_rows.pop(row["test"], None)
        if old is None:
            checks.append(RowCheck(fam, row["test"], False, "row missing from the released statistics"))
            continue
        diff = sorted(k for k in set(row) | set(old) if not _same(old.get(k), row.get(k), rel_tol))
        checks.append(RowCheck(fam, row["test"], not diff,
                               f"verdict {row['verdict']}" if not diff
                               else "differs in " + ", ".join(_describe(k, old.get(k), row.get(k)) for k in diff)))
    for test in sorted(map(str, released_rows)):
        checks.append(RowCheck(fam, test, False, "released row is not in the plan"))
    return checks


def _same(old, new, rel_tol: float) -> bool:
    if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None:
        return old == new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return math.isclose(old, new, rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same(o, n, rel_tol) for o, n in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k], rel_tol) for k in old)
    return old == new


def _describe(key: str, old, new) -> str:
    return f"{key} (released {old!r}, recomputed {new!r})"
