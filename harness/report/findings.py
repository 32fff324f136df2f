"""Each registered test in words, from its decided row: what was compared, on what data, under which retriever
and metric, the estimate and CI, what the registered rule lets a reader conclude, and, for a test left
undecided, how many clusters would likely decide it (docs/pipeline.md, "The study report").

Codes (arms, datasets, retrievers, metrics, test ids) are written in backticks: the report links each one to
its glossary entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from harness.inference.power import POWER, clusters_to_show
from harness.metrics.registry import is_answer_level
from harness.stats.decided import DecidedRow
from harness.stats.families import FamilyResult
from harness.stats.verdicts import (
    DIFFERENT, EQUIVALENT, INCONCLUSIVE, MIN_CLUSTERS, MISSING, NO_DIFFERENCE, NO_VARIATION, TOO_FEW_CLUSTERS,
    excludes_zero,
)

# a test needing more than this many times its clusters is out of any realistic reach
REALISTIC = 10
# a metric at its ceiling or floor for more than this share of an arm's questions can barely tell arms apart
SATURATED = 0.5
CI95_ALPHA = 0.05  # the 95% CI, whatever the plan's alpha: the interval the diff. and margin rules read
EXPLORATORY = "exploratory"


@dataclass(frozen=True)
class Wording:
    """How a sentence spells a study's names out (harness.report.glossary builds it from the registries)."""

    arms: Mapping[str, str]  # arm -> its short name, e.g. "header-led sections"
    metrics: Mapping[tuple[str, str], str]  # (dataset, metric) -> what it measures, in words
    # (dataset, arm) -> its context cost, e.g. "4.0 chunks per document, 212 tokens each"
    costs: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # (dataset, arm, retriever, metric) -> (bound, share): the metric sits at its ceiling (1) or floor (0)
    # for `share` of the arm's questions, where that is most of them (SATURATED)
    saturated: Mapping[tuple[str, str, str, str], tuple[str, float]] = field(default_factory=dict)

    def arm(self, name: str, dataset: str | None = None) -> str:
        said = [x for x in (self.arms.get(name), self.costs.get((dataset or "", name))) if x]
        return f"`{name}` ({'; '.join(said)})" if said else f"`{name}`"

    def metric(self, dataset: str, metric: str) -> str:
        words = self.metrics.get((dataset, metric))
        return f"`{metric}` ({words})" if words else f"`{metric}`"


@dataclass(frozen=True)
class ClustersNeeded:
    """The clusters at which the row would likely be decided (alpha and power as shown), if the true
    difference is the estimate; `total` None: no number of clusters would."""

    now: int
    total: int | None
    shows: str  # the verdict they would likely give
    alpha: float
    sides: int
    holm: int = 1  # alpha is the plan's divided by this many tests (Holm's strictest step)

    @property
    def more(self) -> int | None:
        return None if self.total is None else max(0, self.total - self.now)

    @property
    def realistic(self) -> bool:
        return self.total is not None and self.total <= REALISTIC * self.now


def demoted(row: DecidedRow, fam: FamilyResult) -> bool:
    """Reported as exploratory because an instrument it rests on failed its acceptance controls."""
    return row.tier == EXPLORATORY and fam.tier != EXPLORATORY and any(
        not c.passed for c in row.instrument_checks)


def holm_divisor(fam: FamilyResult) -> int:
    """How many tests Holm's strictest step divides the plan's alpha by (1 without Holm)."""
    return fam.n_tests if fam.multiplicity == "holm" and fam.n_tests > 1 else 1


def clusters_needed(row: DecidedRow, fam: FamilyResult) -> ClustersNeeded | None:
    """For a row its rule left undecided (n.d. or incon.): the clusters that would likely decide it, from the
    observed cluster SE shrinking as 1 / sqrt(clusters). None for any other row."""
    c = row.contrast
    if c is None or row.verdict not in (NO_DIFFERENCE, INCONCLUSIVE):
        return None
    n, se, gap = int(c.n_clusters), float(c.se_cluster), abs(c.estimate)
    if row.verdict == NO_DIFFERENCE:
        # diff. needs the 95% CI to exclude 0 and, where required, the (Holm-adjusted) sign-flip p < alpha
        holm = holm_divisor(fam) if fam.signflip_required else 1
        alpha = min(CI95_ALPHA, fam.alpha / holm) if fam.signflip_required else CI95_ALPHA
        total = clusters_to_show(se, n, gap, alpha=alpha, power=POWER)
        if total is not None and fam.signflip_required:
            total = max(total, signflip_floor(fam))
        return ClustersNeeded(n, total, DIFFERENT, alpha, 2, holm if alpha < CI95_ALPHA else 1)
    margin = row.margin
    if margin is None or gap >= margin:  # equivalence is out of reach: only a difference could be shown
        return ClustersNeeded(n, clusters_to_show(se, n, gap, alpha=CI95_ALPHA, power=POWER), DIFFERENT,
                              CI95_ALPHA, 2)
    if row.ci_shown == "90":  # TOST: each side one-sided at the decisive alpha
        holm = holm_divisor(fam)
        alpha = fam.alpha / holm
        return ClustersNeeded(n, clusters_to_show(se, n, margin - gap, alpha=alpha, power=POWER, sides=1),
                              EQUIVALENT, alpha, 1, holm)
    return ClustersNeeded(n, clusters_to_show(se, n, margin - gap, alpha=CI95_ALPHA, power=POWER), EQUIVALENT,
                          CI95_ALPHA, 2)


def signflip_floor(fam: FamilyResult) -> int:
    """The fewest clusters whose smallest possible sign-flip p (2 of 2^C sign patterns), times Holm's
    largest factor, is below alpha: fewer cannot be decided by the sign-flip test at all."""
    return math.floor(math.log2(2 * holm_divisor(fam) / fam.alpha)) + 1


def conclusion(row: DecidedRow, fam: FamilyResult) -> str:
    """What the row lets a reader conclude, in a clause (the headline joins them)."""
    a, b, on = f"`{row.a}`", f"`{row.b}`", f" on `{row.dataset}`"
    v = row.verdict
    if v == DIFFERENT and row.contrast is not None:
        said = f"{a} {_direction(row)} than {b}{on}"
    elif v == EQUIVALENT:
        said = f"{a} is equivalent to {b}{on} within ±{row.margin:g} points"
    elif v == NO_DIFFERENCE:
        said = f"no detectable difference between {a} and {b}{on}"
    elif v == INCONCLUSIVE:
        said = f"{a} against {b}{on} is inconclusive"
    elif v == MISSING:
        said = f"{a} against {b}{on} has no results"
    else:
        said = f"{a} against {b}{on} cannot be read ({v})"
    return said + (" (exploratory: an instrument failed)" if demoted(row, fam) else "")


def finding(row: DecidedRow, fam: FamilyResult, wording: Wording) -> str:
    """The row's sentence: the comparison, the estimate, the conclusion and, when undecided, what would
    decide it."""
    c = row.contrast
    compared = (
        f"`{row.test}`: {wording.arm(row.a, row.dataset)} against {wording.arm(row.b, row.dataset)} on "
        f"`{row.dataset}` under "
        f"{_retrievers(row)}, by {wording.metric(row.dataset, row.metric)}"
    )
    if c is None:
        lacking = "; ".join(row.missing) or "none"
        return f"{compared}: no per-question results ({lacking}), so nothing is decided."
    level = row.ci_shown or "95"
    lo, hi = row.shown_ci
    parts = [
        f"{compared}: `{row.a}` - `{row.b}` = {c.estimate:+.2f} points, {level}% CI [{lo:.2f}, {hi:.2f}] "
        f"({_count(c.n_questions, 'question')} in {_count(c.n_clusters, 'cluster')})."
    ]
    parts.append(_reading(row, fam))
    needed = clusters_needed(row, fam)
    if needed is not None:
        parts.append(_needed(needed))
    if demoted(row, fam):
        failed = [f"the {x.instrument} ({x.name})" for x in row.instrument_checks if not x.passed]
        parts.append(
            f"Reported as exploratory: {' and '.join(failed)} failed "
            f"{'its' if len(failed) == 1 else 'their'} "
            "acceptance controls, so this is not a registered conclusion."
        )
    return " ".join(parts)


def saturation_note(row: DecidedRow, wording: Wording) -> str | None:
    """Where the row's metric sits at its ceiling or floor for most of an arm's questions: near a bound a
    metric can barely tell arms apart, whatever the verdict (None: neither arm is near one)."""
    bounded = [(arm, *wording.saturated[key]) for arm, retriever in ((row.a, row.retriever),
                                                                    (row.b, row.retriever_b or row.retriever))
               if (key := (row.dataset, arm, retriever, row.metric)) in wording.saturated]
    if not bounded:
        return None
    said = " and ".join(f"its {bound} for {share:.0%} of `{arm}`'s questions"
                        for arm, bound, share in bounded)
    return f"`{row.test}`: `{row.metric}` sits at {said}: near a bound it can barely tell arms apart."


def _retrievers(row: DecidedRow) -> str:
    if row.retriever_b:
        return f"`{row.retriever}` for `{row.a}` and `{row.retriever_b}` for `{row.b}`"
    return f"the `{row.retriever}` retriever"


def _direction(row: DecidedRow) -> str:
    more = row.contrast is not None and row.contrast.estimate > 0
    if is_answer_level(row.metric):
        return "gives better answers" if more else "gives worse answers"
    return "finds more evidence" if more else "finds less evidence"


def _reading(row: DecidedRow, fam: FamilyResult) -> str:
    """What the verdict means under the registered rule, and which requirement failed where that matters."""
    c = row.contrast
    assert c is not None
    a, b, v = f"`{row.a}`", f"`{row.b}`", row.verdict
    if v == DIFFERENT:
        return (
            f"{a} {_direction(row)} than {b} ({v}): the difference is detectable under the registered rule."
        )
    if v == EQUIVALENT:
        said = f"Equivalent ({v}) within the registered margin of ±{row.margin:g} points."
        if row.small_difference_within_margin:
            said += " The 95% CI excludes 0, though: a small real difference inside the margin."
        return said
    if v == NO_DIFFERENCE:
        said = f"No detectable difference ({v})"
        if row.mdd is not None:
            said += f"; differences larger than {row.mdd:.1f} points would likely have been detected"
        said += (
            f". This does not show that {a} is as good as {b}: no equivalence margin is registered for this "
            "test."
        )
        if excludes_zero(c.ci95_bca):
            said += " " + _failed_requirement(row, fam)
        return said
    if v == INCONCLUSIVE:
        return (
            f"Inconclusive ({v}): the CI neither lies within ±{row.margin:g} points nor excludes 0, so "
            "neither "
            "equivalence nor a difference can be concluded."
        )
    if v == TOO_FEW_CLUSTERS:
        return (
            f"Cannot be read ({v}): {row.verdict_reason or 'no sampling distribution'}. More questions "
            f"within these clusters would not decide it; at least {MIN_CLUSTERS} clusters would be needed, "
            "and "
            "their spread cannot be estimated from this one."
        )
    if v == NO_VARIATION:
        return (
            f"Cannot be read ({v}): {row.verdict_reason or 'nothing varied'}. No number of clusters would "
            "decide it while the metric does not vary (a harder question set, or a smaller budget, might)."
        )
    return f"Verdict {v}."


def _failed_requirement(row: DecidedRow, fam: FamilyResult) -> str:
    c = row.contrast
    assert c is not None
    # an enumerated sign-flip test on C clusters can reach no p below 2 / 2^C (the observed signs and their
    # mirror)
    floor = [f"with {c.n_clusters} clusters no sign-flip p can fall below {_p(2.0 ** (1 - c.n_clusters))}"] \
        if c.signflip_exact else []
    if row.p_signflip_holm is not None:
        aside = "; ".join([f"unadjusted {_p(c.p_signflip)}"] + floor)
        p = f"its sign-flip p after Holm is {_p(row.p_signflip_holm)} ({aside})"
    else:
        p = f"its sign-flip p is {_p(c.p_signflip)}" + (f" ({floor[0]})" if floor else "")
    return (
        f"The 95% CI excludes 0, but the rule also requires the sign-flip p below alpha {fam.alpha:g}, and "
        f"{p}."
    )


def _needed(n: ClustersNeeded) -> str:
    holm = f" (Holm's strictest step, 1/{n.holm} of the plan's)" if n.holm > 1 else ""
    at = f"alpha {n.alpha:.3g}{holm}" + (" one-sided" if n.sides == 1 else "") + f" and {POWER:.0%} power"
    target = "a difference" if n.shows == DIFFERENT else "equivalence"
    if n.total is None:
        where = "0" if n.shows == DIFFERENT else "at the margin"
        return f"No number of clusters would show {target} while the estimate is {where}."
    if not n.realistic:
        return (
            f"No realistic number of clusters would decide it: showing {target} at {at} would take about "
            f"{n.total} clusters, {n.total / n.now:.0f} times the {n.now} here, if the true difference is "
            "the "
            "estimate."
        )
    if n.more == 0:
        return (f"By the spread of its clusters the {n.now} here would already show {target} at {at}; the "
                "registered test fell short all the same, so a few more clusters would likely decide it.")
    return (
        f"About {n.more} more clusters ({n.total} in all) would likely show {target} at {at}, if the true "
        "difference is the estimate."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3g}"
