"""The decision rules a plan may name, and what the plan must give for each.

How a rule reads a contrast (its verdicts, labels and captions) is harness.stats.rules, keyed by the same
names (tests/test_stats_rules.py checks both tables agree). Adding a rule is one `RuleTerms` here and one
`Rule` there (docs/extending.md, A decision rule); e.g. a rule "ci90-inside" judging the unadjusted 90% CI
against a margin:

    RuleTerms(name="ci90-inside", title="CI90-inside", needs_margin=True,
              unadjusted_only="judges unadjusted 90% CIs")                     # harness/plan/rules.py
    Rule(name="ci90-inside", decisive_p="p_signflip", ci_shown="90",
         verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE), decide=..., ...)      # harness/stats/rules.py
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleTerms:
    name: str  # as written in plan.yaml (`decision.rule`, a test's `rule`)
    title: str  # in messages: "required for a <title> test"
    needs_margin: bool  # a test under the rule must give `margin`, and only such tests may
    # why the rule only takes multiplicity: none (it judges unadjusted values); "" when any multiplicity fits
    unadjusted_only: str = ""
    # in a Holm family its tests need decision.signflip_required: true
    holm_needs_signflip: bool = False


RULE_TERMS: dict[str, RuleTerms] = {r.name: r for r in (
    RuleTerms(name="tost", title="TOST", needs_margin=True),
    RuleTerms(name="two-sided", title="two-sided", needs_margin=False, holm_needs_signflip=True),
    RuleTerms(name="ci95-within-margin", title="ci95-within-margin", needs_margin=True,
              unadjusted_only="judges unadjusted 95% CIs"),
)}
