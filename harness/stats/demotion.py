"""An amendment registered after the first outcome adds no confirmatory test (docs/integrity.md, "A
post-outcome amendment is demoted").

The timeline (harness.provenance.timeline) labels each amendment pre- or post-outcome from what cannot be
moved by editing the amendment: its registration time against FIRST_OUTCOME.json, the freeze the first
outcome was written under, and the amendment's own `before_outcomes: false`. Every confirmatory family a
post-outcome amendment adds becomes exploratory; a test it adds to a confirmatory family registered earlier
is decided in an exploratory family of its own, outside that family's Holm adjustment. Each keeps the reason,
which `harness stats` writes into the family's statistics and the report shows. Secondary and exploratory
families stay as registered (a study may register secondary hypotheses about arms not yet built after seeing
other outcomes, as the flagship's amendments do), labelled post-outcome by the timeline. `stats` and the
audit both decide from the plan this module returns, so a released record whose tier was set back fails the
audit's row comparison.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from harness.plan.load import load_study_plan
from harness.plan.model import Plan
from harness.plan.schema import TIERS
from harness.provenance.timeline import timeline
from harness.study import Study

CONFIRMATORY, EXPLORATORY = TIERS[0], TIERS[-1]


def demotion_reasons(study: Study) -> dict[str, str]:
    """The `source` of each post-outcome amendment's families and tests ("amendment NNNN") -> why they are
    exploratory."""
    reasons = {}
    for entry in timeline(study):
        if entry.id == "plan" or entry.before_outcomes:
            continue
        number = entry.id.split("-", 1)[0]
        reasons[f"amendment {number}"] = f"demoted: amendment {number} registered after the first outcome"
    return reasons


def demoted(plan: Plan, reasons: Mapping[str, str]) -> Plan:
    """The plan with the confirmatory families and tests of the given sources lowered to exploratory, each
    with its reason. A test a post-outcome amendment added to a confirmatory family registered before the
    outcome leaves that family for one of its own (`<family>-late-<amendment>`, exploratory): in the family
    it would change the Holm adjustment, and so the verdicts, of the tests registered before any outcome.
    Secondary and exploratory families are kept as registered: the timeline labels their amendment."""
    if not reasons:
        return plan
    taken = {f.id for f in plan.families}
    families = []
    for family in plan.families:
        if family.tier != CONFIRMATORY:
            families.append(family)
            continue
        reason = reasons.get(family.source)
        if reason is not None:
            tests = tuple(replace(t, demoted=reasons.get(t.source, reason)) for t in family.tests)
            families.append(replace(family, tier=EXPLORATORY, demoted=reason, tests=tests))
            continue
        kept = tuple(t for t in family.tests if t.source not in reasons)
        families.append(replace(family, tests=kept) if len(kept) < len(family.tests) else family)
        for source in sorted({t.source for t in family.tests if t.source in reasons}):
            late_id = _unused(f"{family.id}-late-{source.split()[-1]}", taken)
            late = tuple(replace(t, demoted=reasons[source]) for t in family.tests if t.source == source)
            families.append(replace(family, id=late_id, tier=EXPLORATORY, demoted=reasons[source],
                                    source=source, tests=late))
    return replace(plan, families=tuple(families))


def _unused(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3`... when the plan already has a family of that id."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def decided_plan(study: Study) -> Plan:
    """The plan `stats`, the audit and the report decide with: post-outcome additions demoted."""
    return demoted(load_study_plan(study), demotion_reasons(study))
