"""A post-outcome amendment adds no confirmatory test, and cannot move the Holm adjustment of the tests
registered before any outcome (harness.stats.demotion)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.plan.load import load_study_plan
from harness.stats.demotion import demoted
from harness.study import Study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
WHY = "demoted: amendment 0009 registered after the first outcome"


def _plan_with_a_late_test():
    plan = load_study_plan(Study.at(DEMO))
    family = next(f for f in plan.families if f.tier == "confirmatory" and f.multiplicity == "holm"
                  and len(f.tests) >= 2)
    late = replace(family.tests[-1], source="amendment 0009")
    families = tuple(replace(f, tests=f.tests[:-1] + (late,)) if f is family else f for f in plan.families)
    return replace(plan, families=families), family, late


def test_a_late_test_in_a_registered_family_is_decided_in_an_exploratory_family_of_its_own():
    plan, family, late = _plan_with_a_late_test()
    decided = {f.id: f for f in demoted(plan, {"amendment 0009": WHY}).families}
    kept = decided[family.id]
    assert kept.tier == "confirmatory" and kept.demoted is None
    assert [t.id for t in kept.tests] == [t.id for t in family.tests[:-1]]  # its Holm set as registered
    own = decided[f"{family.id}-late-0009"]
    assert (own.tier, own.demoted, own.source, own.multiplicity) == ("exploratory", WHY, "amendment 0009",
                                                                      family.multiplicity)
    assert [(t.id, t.demoted) for t in own.tests] == [(late.id, WHY)]


def test_without_post_outcome_amendments_the_plan_is_unchanged():
    plan, _, _ = _plan_with_a_late_test()
    assert demoted(plan, {}) is plan
    assert demoted(plan, {"amendment 0010": "demoted: amendment 0010 ..."}) == plan


def test_a_late_family_id_never_takes_an_existing_one():
    plan, family, late = _plan_with_a_late_test()
    clash = replace(family, id=f"{family.id}-late-0009", tests=family.tests[:1], source="plan")
    plan = replace(plan, families=plan.families + (clash,))
    ids = [f.id for f in demoted(plan, {"amendment 0009": WHY}).families]
    assert len(ids) == len(set(ids)) and f"{family.id}-late-0009-2" in ids


def test_a_post_outcome_amendments_secondary_family_stays_as_registered():
    """Secondary hypotheses about arms not yet built may be registered after other outcomes were seen (the
    demo's and the flagship's later amendments): only a confirmatory claim is demoted."""
    plan = load_study_plan(Study.at(DEMO))
    secondary = next(f for f in plan.families if f.tier == "secondary")
    reasons = {secondary.source: f"demoted: {secondary.source} registered after the first outcome"}
    assert {f.id: f for f in demoted(plan, reasons).families}[secondary.id] == secondary
    confirmatory = replace(secondary, tier="confirmatory")
    plan = replace(plan, families=tuple(confirmatory if f is secondary else f for f in plan.families))
    lowered = {f.id: f for f in demoted(plan, reasons).families}[secondary.id]
    assert (lowered.tier, lowered.demoted) == ("exploratory", reasons[secondary.source])
