"""Verdict rules (docs/design.md, Verdicts), applied after the statistics (alpha comes from the plan)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.stats.contrast import ContrastResult

EQUIVALENT = "equiv."
DIFFERENT = "diff."
INCONCLUSIVE = "incon."
NO_DIFFERENCE = "n.d."
MISSING = "missing"  # a registered test without per-question results: reported, never decided
# a test on fewer clusters than this has no sampling distribution to resample: its bootstrap CI is a point
# and its sign-flip p is 1, so it is reported with its estimate but never decided (e.g. a one-paper sample)
MIN_CLUSTERS = 2
TOO_FEW_CLUSTERS = "too few clusters"
# every paired difference identical, or an arm constant over its questions (floor or ceiling): the instrument
# did not vary, so any rule would read the collapsed interval as a finding (e.g. equiv. at 0.00)
NO_VARIATION = "no variation"
UNDECIDED = (TOO_FEW_CLUSTERS, NO_VARIATION)  # rows reported with their estimate, never decided
# the labels the rules give are theirs (harness.stats.rules.decided_labels), so a new rule brings its own
# what each label lets a reader conclude (the glossary, harness.report.glossary); a label missing here is
# listed with the rules that give it
VERDICT_MEANINGS = {
    EQUIVALENT: "equivalent: A - B lies within the registered margin (TOST p below alpha, or the 95% CI "
                "inside "
    "the margin under ci95-within-margin)",
    DIFFERENT: "different: the CI excludes 0 (and, where the family requires it, the sign-flip p is below "
    "alpha): A and B differ in the direction of the estimate",
    INCONCLUSIVE: "inconclusive: neither equivalence within the margin nor a difference could be shown",
    NO_DIFFERENCE: "no detectable difference: the rule could not show a difference; not evidence that A and "
                   "B "
    "are equivalent, which only a registered margin (a TOST) could show",
    TOO_FEW_CLUSTERS: f"fewer than {MIN_CLUSTERS} clusters: no sampling distribution, so the row is reported "
    "with its estimate and never decided",
    NO_VARIATION: "every paired difference identical, or an arm constant (floor or ceiling): the instrument "
                  "did "
    "not vary, so the row is never decided",
    MISSING: "the registered test has no per-question results: reported, never decided",
}


@dataclass(frozen=True)
class Decision:
    """A verdict label as a rule (or the undecided check) gives it, with what the row reports beside it."""

    label: str
    # an equiv. row whose 95% CI excludes 0: a real but small difference inside the margin
    small_difference_within_margin: bool = False
    reason: str | None = None  # why an UNDECIDED row has no verdict


def excludes_zero(ci: tuple[float, float]) -> bool:
    lo, hi = ci
    return lo > 0 or hi < 0


def undecided(contrast: ContrastResult) -> Decision | None:
    """The verdict of a contrast that no rule may decide, with the reason, else None (the rule decides):
    fewer than MIN_CLUSTERS clusters, or no variation (`no_variation` holds what did not vary)."""
    n = int(contrast.n_clusters)
    if n < MIN_CLUSTERS:
        return Decision(TOO_FEW_CLUSTERS, reason=f"{n} cluster{'' if n == 1 else 's'}: no sampling "
                        "distribution to resample")
    if contrast.no_variation:
        return Decision(NO_VARIATION, reason=contrast.no_variation)
    return None


def tost_verdict(*, p_tost: float, ci95: tuple[float, float], alpha: float) -> Decision:
    """`p_tost` is the Holm-adjusted p_tost in a Holm family, else the unadjusted one."""
    if p_tost < alpha:
        return Decision(EQUIVALENT, small_difference_within_margin=excludes_zero(ci95))
    if excludes_zero(ci95):
        return Decision(DIFFERENT)
    return Decision(INCONCLUSIVE)


def two_sided_verdict(
    *,
    ci95: tuple[float, float],
    alpha: float,
    p_signflip: float | None = None,
    signflip_required: bool = False,
) -> Decision:
    """diff. if the 95% CI excludes 0 (and, when required, the sign-flip p is below alpha), else n.d."""
    if signflip_required and p_signflip is None:
        raise ValueError("`p_signflip` is required when `signflip_required` is true")
    if excludes_zero(ci95) and (not signflip_required or (p_signflip is not None and p_signflip < alpha)):
        return Decision(DIFFERENT)
    return Decision(NO_DIFFERENCE)


def ci_margin_verdict(*, ci95: tuple[float, float], margin: float) -> Decision:
    """Rule ci95-within-margin (secondary retrievers): equiv. when the unadjusted 95% CI lies strictly
    inside (-margin, +margin), else diff. when it excludes 0, else incon. No p-value is involved."""
    if margin <= 0:
        raise ValueError(f"`margin` must be positive; got {margin}")
    lo, hi = ci95
    if -margin < lo and hi < margin:
        return Decision(EQUIVALENT, small_difference_within_margin=excludes_zero(ci95))
    if excludes_zero(ci95):
        return Decision(DIFFERENT)
    return Decision(INCONCLUSIVE)
