"""Decision rules, one registry entry each: how a rule reads a contrast into a verdict, what the plan
requires of it, and how tables caption it. Nothing else in the harness compares a rule's name.

To add a rule, add one `Rule` to `RULES` (and a test); the plan schema, the families, the tables, the
plots and the report look it up here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.errors import InputError
from harness.stats.verdicts import (
    DIFFERENT, EQUIVALENT, INCONCLUSIVE, NO_DIFFERENCE, Verdict, ci_margin_verdict, tost_verdict, two_sided_verdict,
)


@dataclass(frozen=True)
class Evidence:
    """What a rule decides from: one contrast's row, its decisive p after the family's multiplicity step."""

    p: float  # the rule's `decisive_p`, Holm-adjusted in a Holm family
    ci95: tuple[float, float]
    margin: float | None
    alpha: float
    signflip_required: bool


@dataclass(frozen=True)
class Rule:
    name: str  # as written in plan.yaml (`decision.rule`, a test's `rule`)
    title: str  # in messages: "required for a <title> test"
    # the p Holm acts on; its adjusted value is written to "<decisive_p>_holm". p_tost is computed against
    # the margin only for a rule that decides on it.
    decisive_p: str
    needs_margin: bool
    ci_shown: str  # the BCa CI level tables and the spending guide show for its rows ("90" or "95")
    verdicts: tuple[str, ...]  # every label `decide` can give (besides "too few clusters")
    decide: Callable[[Evidence], Verdict]
    caption: Callable[[bool], str]  # its clause in a family's caption, given the family's signflip_required
    # why the rule only takes multiplicity: none (it judges unadjusted values); "" when any multiplicity fits
    unadjusted_only: str = ""
    # in a Holm family its tests need decision.signflip_required: true
    holm_needs_signflip: bool = False

    @property
    def computes_p_tost(self) -> bool:
        return self.decisive_p == "p_tost"


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule(
        name="tost", title="TOST", decisive_p="p_tost", needs_margin=True, ci_shown="90",
        verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE),
        decide=lambda e: tost_verdict(p_tost=e.p, ci95=e.ci95, alpha=e.alpha),
        caption=lambda _signflip: "TOST rows show the 90% BCa CI against the margin; equiv. needs p_tost < alpha",
    ),
    Rule(
        name="two-sided", title="two-sided", decisive_p="p_signflip", needs_margin=False, ci_shown="95",
        verdicts=(DIFFERENT, NO_DIFFERENCE),
        decide=lambda e: two_sided_verdict(ci95=e.ci95, alpha=e.alpha, p_signflip=e.p,
                                           signflip_required=e.signflip_required),
        caption=lambda signflip: "two-sided rows show the 95% BCa CI; diff. needs it to exclude 0"
        + (" and the sign-flip p < alpha" if signflip else ""),
        holm_needs_signflip=True,
    ),
    # the rule the paper applies to its secondary retrievers (no TOST was registered there): equiv. when the
    # unadjusted 95% CI lies inside (-margin, +margin), else diff. when it excludes 0, else incon.
    Rule(
        name="ci95-within-margin", title="ci95-within-margin", decisive_p="p_signflip", needs_margin=True,
        ci_shown="95", verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE),
        decide=lambda e: ci_margin_verdict(ci95=e.ci95, margin=e.margin),
        caption=lambda _signflip: "margin rows show the unadjusted 95% BCa CI; equiv. needs it inside the margin, "
        "else diff. needs it to exclude 0",
        unadjusted_only="judges unadjusted 95% CIs",
    ),
)}


def rule(name: str) -> Rule:
    """The registered rule `name`; an unknown name (e.g. in a hand-edited statistics file) is an error."""
    if name not in RULES:
        raise InputError(f"unknown decision rule {name!r} (known: {', '.join(RULES)})")
    return RULES[name]
