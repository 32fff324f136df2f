"""Decision rules, one registry entry each: how a rule reads a contrast into a verdict and how tables
caption it. Nothing else in the harness compares a rule's name.

What the plan must give for a rule (a margin, a multiplicity) is harness.plan.rules, keyed by the same names:
adding a rule is one entry there and one `Rule` in `RULES` here (docs/extending.md, A decision rule). A rule
reads the whole typed contrast; a plan's rule names are resolved to these objects once (`ruled`), and the
verdict labels the rules can give are read from here (`decided_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.errors import InputError
from harness.plan.model import FamilyPlan, TestPlan
from harness.stats.contrast import ContrastResult
from harness.stats.verdicts import (
    DIFFERENT, EQUIVALENT, INCONCLUSIVE, MISSING, NO_DIFFERENCE, UNDECIDED, Decision, ci_margin_verdict,
    tost_verdict, two_sided_verdict,
)


@dataclass(frozen=True)
class DecisionContext:
    """What the family adds when a rule reads a contrast: the rule's decisive p after the family's
    multiplicity step, the test's margin, the plan's alpha and whether diff. also needs the sign-flip p."""

    p: float  # the rule's `decisive_p`, Holm-adjusted in a Holm family
    margin: float | None  # the test's registered margin (the contrast holds one only under a TOST rule)
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
    # how it reads the whole contrast (every interval and p it computed) in its family's context
    decide: Callable[[ContrastResult, DecisionContext], Decision]
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
    if margin is None:
        return None
    if abs(difference) < margin:
        return EQUIVALENT
    return DIFFERENT if abs(difference) > margin else None


def _zero_truth(difference: float, _margin: float | None) -> str:
    return NO_DIFFERENCE if difference == 0 else DIFFERENT


def _tost(c: ContrastResult, ctx: DecisionContext) -> Decision:
    return tost_verdict(p_tost=ctx.p, ci95=c.ci95_bca, alpha=ctx.alpha)


def _two_sided(c: ContrastResult, ctx: DecisionContext) -> Decision:
    return two_sided_verdict(ci95=c.ci95_bca, alpha=ctx.alpha, p_signflip=ctx.p,
                             signflip_required=ctx.signflip_required)


def _ci95_within_margin(c: ContrastResult, ctx: DecisionContext) -> Decision:
    if ctx.margin is None:
        raise ValueError("rule ci95-within-margin needs the test's margin")
    return ci_margin_verdict(ci95=c.ci95_bca, margin=ctx.margin)


def _tost_caption(_signflip: bool) -> str:
    return "TOST rows show the 90% BCa CI against the margin; equiv. needs p_tost < alpha"


def _two_sided_caption(signflip: bool) -> str:
    return "two-sided rows show the 95% BCa CI; diff. needs it to exclude 0" + (
        " and the sign-flip p < alpha" if signflip else "")


def _ci95_within_margin_caption(_signflip: bool) -> str:
    return ("margin rows show the unadjusted 95% BCa CI; equiv. needs it inside the margin, else diff. needs "
            "it to exclude 0")


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule(name="tost", decisive_p="p_tost", ci_shown="90", verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE),
         decide=_tost, caption=_tost_caption, truth=_margin_truth),
    Rule(name="two-sided", decisive_p="p_signflip", ci_shown="95", verdicts=(DIFFERENT, NO_DIFFERENCE),
         decide=_two_sided, caption=_two_sided_caption, truth=_zero_truth),
    # the rule the paper applies to its secondary retrievers (no TOST was registered there): equiv. when the
    # unadjusted 95% CI lies inside (-margin, +margin), else diff. when it excludes 0, else incon.
    Rule(name="ci95-within-margin", decisive_p="p_signflip", ci_shown="95",
         verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE), decide=_ci95_within_margin,
         caption=_ci95_within_margin_caption, truth=_margin_truth),
)}


def decided_labels() -> tuple[str, ...]:
    """Every label a registered rule can give, in registry order (read at call time: a rule added to RULES
    brings its labels with it)."""
    return tuple(dict.fromkeys(label for r in RULES.values() for label in r.verdicts))


def verdict_labels() -> tuple[str, ...]:
    """Every verdict label a row can carry: the rules' labels, the undecided ones and `missing`."""
    return decided_labels() + UNDECIDED + (MISSING,)


def rule(name: str) -> Rule:
    """The registered rule `name`; an unknown name (e.g. in a hand-edited statistics file) is an error."""
    if name not in RULES:
        raise InputError(f"unknown decision rule {name!r} (known: {', '.join(RULES)})")
    return RULES[name]


@dataclass(frozen=True)
class RuledTest:
    """A registered test with its decision rule resolved (the plan names it; `ruled` looks it up once)."""

    test: TestPlan
    rule: Rule


@dataclass(frozen=True)
class RuledFamily:
    family: FamilyPlan
    tests: tuple[RuledTest, ...]  # in plan order


def ruled(family: FamilyPlan) -> RuledFamily:
    """The family with each test's rule object: the one place statistics look a plan's rule name up."""
    return RuledFamily(family, tuple(RuledTest(test, rule(test.rule)) for test in family.tests))
