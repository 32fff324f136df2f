"""Decision rules, one registry entry each: how a rule reads a contrast into a verdict and how tables
caption it. Nothing else in the harness compares a rule's name.

What the plan must give for a rule (a margin, a multiplicity) is harness.plan.rules, keyed by the same names:
adding a rule is one entry there and one `Rule` in `RULES` here (and a test); the families, the tables, the
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
    # the p Holm acts on; its adjusted value is written to "<decisive_p>_holm". p_tost is computed against
    # the margin only for a rule that decides on it.
    decisive_p: str
    ci_shown: str  # the BCa CI level tables and the spending guide show for its rows ("90" or "95")
    verdicts: tuple[str, ...]  # every label `decide` can give (a label of verdicts.UNDECIDED overrides it)
    decide: Callable[[Evidence], Verdict]
    caption: Callable[[bool], str]  # its clause in a family's caption, given the family's signflip_required
    # the verdict that states the truth about a true difference (points) under the test's margin, or None
    # where no verdict does (e.g. a difference exactly at the margin): what the known-effects replicates
    # (harness.stats.replicates) count as correct. A rule without it has no correct share.
    truth: Callable[[float, float | None], str | None] | None = None

    @property
    def computes_p_tost(self) -> bool:
        return self.decisive_p == "p_tost"


def _margin_truth(difference: float, margin: float | None) -> str | None:
    """Inside the margin the truth is equivalence, beyond it a difference; at the margin neither."""
    if abs(difference) < margin:
        return EQUIVALENT
    return DIFFERENT if abs(difference) > margin else None


def _zero_truth(difference: float, _margin: float | None) -> str:
    return NO_DIFFERENCE if difference == 0 else DIFFERENT


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule(
        name="tost", decisive_p="p_tost", ci_shown="90",
        verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE),
        decide=lambda e: tost_verdict(p_tost=e.p, ci95=e.ci95, alpha=e.alpha),
        caption=lambda _signflip: "TOST rows show the 90% BCa CI against the margin; equiv. needs p_tost < alpha",
        truth=_margin_truth,
    ),
    Rule(
        name="two-sided", decisive_p="p_signflip", ci_shown="95",
        verdicts=(DIFFERENT, NO_DIFFERENCE),
        decide=lambda e: two_sided_verdict(ci95=e.ci95, alpha=e.alpha, p_signflip=e.p,
                                           signflip_required=e.signflip_required),
        caption=lambda signflip: "two-sided rows show the 95% BCa CI; diff. needs it to exclude 0"
        + (" and the sign-flip p < alpha" if signflip else ""),
        truth=_zero_truth,
    ),
    # the rule the paper applies to its secondary retrievers (no TOST was registered there): equiv. when the
    # unadjusted 95% CI lies inside (-margin, +margin), else diff. when it excludes 0, else incon.
    Rule(
        name="ci95-within-margin", decisive_p="p_signflip", ci_shown="95",
        verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE),
        decide=lambda e: ci_margin_verdict(ci95=e.ci95, margin=e.margin),
        caption=lambda _signflip: "margin rows show the unadjusted 95% BCa CI; equiv. needs it inside the margin, "
        "else diff. needs it to exclude 0",
        truth=_margin_truth,
    ),
)}


def rule(name: str) -> Rule:
    """The registered rule `name`; an unknown name (e.g. in a hand-edited statistics file) is an error."""
    if name not in RULES:
        raise InputError(f"unknown decision rule {name!r} (known: {', '.join(RULES)})")
    return RULES[name]
