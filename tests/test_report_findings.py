"""Each registered test in a sentence (harness.report.findings), from decided rows built here: every verdict,
the requirement an n.d. row with a CI excluding 0 failed, the instrument that demoted a row, and the clusters
that would likely decide an undecided one."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from scipy.special import ndtri

from harness.inference.power import clusters_to_show, minimum_detectable_difference
from harness.report.findings import Wording, clusters_needed, conclusion, finding, signflip_floor
from harness.stats.contrast import ContrastResult
from harness.stats.decided import READER, DecidedRow, InstrumentControls
from harness.stats.families import FamilyResult, Status
from harness.stats.verdicts import (
    DIFFERENT, EQUIVALENT, INCONCLUSIVE, MISSING, NO_DIFFERENCE, NO_VARIATION, TOO_FEW_CLUSTERS,
)

NAMES = Wording(arms={"S": "header-led sections", "F512c": "512-character windows"},
              metrics={("corpus", "rec@512t"): "evidence found in 512 tokens"})


def contrast(estimate: float, ci95: tuple[float, float], *, ci90=None, se: float = 2.0, clusters: int = 20,
             p: float = 0.5, exact: bool = False, no_variation: str | None = None) -> ContrastResult:
    return ContrastResult(
        dataset="corpus",
        a="S",
        b="F512c",
        retriever="hybrid",
        metric="rec@512t",
        n_questions=clusters * 2,
        n_clusters=clusters,
        n_strata=1,
        estimate=estimate,
        ci90_bca=ci90 or ci95,
        ci95_bca=ci95,
        ci90_percentile=ci90 or ci95,
        ci95_percentile=ci95,
        z0=0.0,
        acceleration=0.0,
        resamples=1000,
        seed=1,
        p_signflip=p,
        signflip_exact=exact,
        signflip_flips=1000,
        se_cluster=se,
        no_variation=no_variation,
    )


def row(verdict: str, c: ContrastResult | None, *, rule: str = "two-sided", margin: float | None = None,
        tier: str = "confirmatory", **kw) -> DecidedRow:
    mdd = None if c is None else minimum_detectable_difference(c.se_cluster, alpha=0.05)
    return DecidedRow(test="H3", rule=rule, dataset="corpus", a="S", b="F512c", retriever="hybrid",
                      metric="rec@512t", margin=margin, tier=tier, source="plan", verdict=verdict, contrast=c,
                      mdd=mdd, ci_shown="90" if rule == "tost" else "95", **kw)


def family(*rows: DecidedRow, n_tests: int = 1, signflip: bool = True, rule: str = "two-sided",
           tier: str = "confirmatory") -> FamilyResult:
    return FamilyResult(
        family="structure",
        description="Do S and F512c differ?",
        tier=tier,
        multiplicity="holm",
        rule=rule,
        signflip_required=signflip,
        alpha=0.05,
        seed=1,
        resamples=1000,
        max_flips=1000,
        source="plan",
        n_tests=n_tests,
        study="s",
        harness_version="0",
        status=Status.RAN,
        missing=(),
        rows=rows,
    )


def sentence(r: DecidedRow, fam: FamilyResult | None = None) -> str:
    return finding(r, fam or family(r), NAMES)


def test_every_sentence_says_what_was_compared_and_the_estimate():
    r = row(DIFFERENT, contrast(6.5, (2.0, 11.0), p=0.001), p_signflip_holm=0.002)
    said = sentence(r)
    assert said.startswith(
        "`H3`: `S` (header-led sections) against `F512c` (512-character windows) on `corpus` "
        "under the `hybrid` retriever, by `rec@512t` (evidence found in 512 tokens): `S` - "
        "`F512c` = +6.50 points, 95% CI [2.00, 11.00] (40 questions in 20 clusters)."
    )
    assert "`S` finds more evidence than `F512c` (diff.)" in said
    assert "more clusters" not in said  # decided: nothing to add
    assert conclusion(r, family(r)) == "`S` finds more evidence than `F512c` on `corpus`"


def test_each_arm_is_spelled_out_with_its_context_cost_where_known():
    wording = Wording(
        NAMES.arms, NAMES.metrics, {("corpus", "S"): "4.2 chunks per document, 291 tokens each"}
    )
    said = finding(row(NO_DIFFERENCE, contrast(1.0, (-2.0, 4.0))), family(), wording)
    assert said.startswith(
        "`H3`: `S` (header-led sections; 4.2 chunks per document, 291 tokens each) against "
        "`F512c` (512-character windows) on `corpus`"
    )


def test_a_difference_on_an_answer_metric_is_said_of_answers():
    r = replace(row(DIFFERENT, contrast(-4.0, (-7.0, -1.0))), metric="answer_f1@512t")
    assert "`S` gives worse answers than `F512c` (diff.)" in sentence(r)


def test_no_detectable_difference_names_the_mdd_and_refuses_equivalence():
    r = row(NO_DIFFERENCE, contrast(-1.47, (-5.14, 1.38), se=1.5))
    said = sentence(r)
    mdd = minimum_detectable_difference(1.5, alpha=0.05)
    assert (
        f"No detectable difference (n.d.); differences larger than {mdd:.1f} points would likely have been "
        "detected." in said
    )
    assert "This does not show that `S` is as good as `F512c`: no equivalence margin is registered" in said
    assert "requires the sign-flip p" not in said  # the CI contains 0: nothing else failed


def test_an_nd_row_whose_ci_excludes_zero_names_the_sign_flip_after_holm():
    r = row(NO_DIFFERENCE, contrast(14.93, (8.68, 19.79), se=3.0, clusters=8, p=0.0156, exact=True),
            p_signflip_holm=0.0625)
    said = sentence(r, family(r, n_tests=4))
    assert (
        "The 95% CI excludes 0, but the rule also requires the sign-flip p below alpha 0.05, and its "
        "sign-flip "
        "p after Holm is 0.0625 (unadjusted 0.0156; with 8 clusters no sign-flip p can fall below 0.00781)."
    ) in said


def test_equivalent_and_its_small_difference():
    r = row(EQUIVALENT, contrast(1.0, (0.2, 1.8), ci90=(0.4, 1.6)), rule="tost", margin=5.0,
            small_difference_within_margin=True)
    said = sentence(r, family(r, rule="tost", signflip=False))
    assert "90% CI [0.40, 1.60]" in said
    assert "Equivalent (equiv.) within the registered margin of ±5 points." in said
    assert "a small real difference inside the margin" in said
    assert conclusion(r, family(r)) == "`S` is equivalent to `F512c` on `corpus` within ±5 points"


def test_inconclusive():
    r = row(INCONCLUSIVE, contrast(-2.0, (-9.0, 5.0), ci90=(-8.0, 4.0), se=3.0), rule="tost", margin=5.0)
    said = sentence(r, family(r, rule="tost", signflip=False))
    assert "Inconclusive (incon.): the CI neither lies within ±5 points nor excludes 0" in said
    assert "would likely show equivalence at alpha 0.05 one-sided and 80% power" in said


def test_rows_no_rule_may_decide_say_why_and_that_clusters_will_not_help():
    few = row(TOO_FEW_CLUSTERS, contrast(-25.0, (-25.0, -25.0), se=0.0, clusters=1),
              verdict_reason="1 cluster: no sampling distribution to resample")
    said = sentence(few)
    assert "(6 questions" not in said and "(2 questions in 1 cluster)" in said
    assert "Cannot be read (too few clusters): 1 cluster: no sampling distribution to resample." in said
    flat = row(
        NO_VARIATION,
        contrast(0.0, (0.0, 0.0), se=0.0, no_variation="arm S is 100.00 points (ceiling)"),
        verdict_reason="arm S is 100.00 points (ceiling)",
    )
    said = sentence(flat)
    assert "Cannot be read (no variation): arm S is 100.00 points (ceiling). No number of clusters" in said
    assert clusters_needed(few, family(few)) is None and clusters_needed(flat, family(flat)) is None


def test_a_missing_row_says_what_it_lacks():
    r = row(MISSING, None, missing=("corpus/S/hybrid",))
    assert sentence(r).endswith(": no per-question results (corpus/S/hybrid), so nothing is decided.")
    assert conclusion(r, family(r)) == "`S` against `F512c` on `corpus` has no results"


def test_a_failed_instrument_demotes_the_row_and_the_sentence_says_which():
    reader = InstrumentControls(READER, "corpus", 0.5, 0.1, 0.2, 0.0, passed=False)
    r = replace(row(DIFFERENT, contrast(6.5, (2.0, 11.0), p=0.001), tier="exploratory"),
                metric="answer_f1@512t", reader_acceptance=reader)
    said = sentence(r)
    assert said.endswith(
        "Reported as exploratory: the reader (corpus) failed its acceptance controls, so this is "
        "not a registered conclusion."
    )
    assert conclusion(r, family(r)).endswith("(exploratory: an instrument failed)")
    passed = replace(r, reader_acceptance=replace(reader, passed=True), tier="confirmatory")
    assert "Reported as exploratory" not in sentence(passed)


# --- the clusters that would likely decide an undecided row ---


def test_clusters_to_show_is_the_mdd_formula_solved_for_clusters():
    z = float(ndtri(0.975) + ndtri(0.8))
    # 20 clusters, SE 2: the MDD is z * 2 = 5.6 points; a 2.8-point gap needs four times the clusters
    assert clusters_to_show(2.0, 20, z * 2.0 / 2, alpha=0.05) == 80
    assert clusters_to_show(2.0, 20, z * 2.0, alpha=0.05) == 20
    assert clusters_to_show(2.0, 20, 0.0, alpha=0.05) is None
    one_sided = float(ndtri(0.95) + ndtri(0.8))
    assert clusters_to_show(1.0, 10, one_sided, alpha=0.05, sides=1) == 10
    with pytest.raises(ValueError):
        clusters_to_show(-1.0, 10, 1.0, alpha=0.05)


def test_an_nd_row_needs_the_clusters_its_gap_and_holm_ask_for():
    r = row(NO_DIFFERENCE, contrast(-1.47, (-5.14, 1.38), se=1.5, clusters=20))
    needed = clusters_needed(r, family(r, n_tests=2))
    z = float(ndtri(1 - 0.025 / 2) + ndtri(0.8))  # Holm's strictest step over 2 tests: alpha 0.025
    assert (needed.shows, needed.alpha, needed.holm) == (DIFFERENT, 0.025, 2)
    assert needed.total == math.ceil(20 * (z * 1.5 / 1.47) ** 2) and needed.more == needed.total - 20
    assert needed.realistic
    said = sentence(r, family(r, n_tests=2))
    assert (
        f"About {needed.more} more clusters ({needed.total} in all) would likely show a difference at alpha "
        "0.025 (Holm's strictest step, 1/2 of the plan's) and 80% power, if the true difference is the "
        "estimate."
    ) in said


def test_a_gap_out_of_reach_is_said_so():
    r = row(NO_DIFFERENCE, contrast(0.1, (-4.0, 4.2), se=2.0, clusters=20))
    needed = clusters_needed(r, family(r))
    assert not needed.realistic and needed.total > 10 * 20
    assert "No realistic number of clusters would decide it" in sentence(r)
    zero = row(NO_DIFFERENCE, contrast(0.0, (-4.0, 4.0), se=2.0))
    assert clusters_needed(zero, family(zero)).total is None
    assert "No number of clusters would show a difference while the estimate is 0." in sentence(zero)


def test_few_clusters_cannot_pass_the_sign_flip_however_small_the_se():
    r = row(NO_DIFFERENCE, contrast(14.93, (8.68, 19.79), se=0.5, clusters=4, p=0.125, exact=True))
    fam = family(r, n_tests=4)
    assert signflip_floor(fam) == 8  # 4 x 2/2^8 = 0.031 < 0.05, while 4 x 2/2^7 = 0.0625 is not
    assert clusters_needed(r, fam).total == 8


def test_an_incon_row_beyond_the_margin_needs_a_difference_inside_it_equivalence():
    beyond = row(INCONCLUSIVE, contrast(-7.6, (-27.1, 6.6), se=8.0, clusters=8), rule="tost", margin=5.0)
    fam = family(beyond, rule="tost", signflip=False, n_tests=2)
    needed = clusters_needed(beyond, fam)
    assert (needed.shows, needed.alpha, needed.sides) == (DIFFERENT, 0.05, 2)
    inside = row(INCONCLUSIVE, contrast(-2.0, (-12.5, 8.3), se=4.0, clusters=8), rule="tost", margin=5.0)
    needed = clusters_needed(inside, fam)
    z = float(ndtri(1 - 0.025) + ndtri(0.8))
    assert (needed.shows, needed.alpha, needed.sides) == (EQUIVALENT, 0.025, 1)
    assert needed.total == math.ceil(8 * (z * 4.0 / 3.0) ** 2)


def test_a_metric_at_its_ceiling_for_most_questions_is_flagged():
    from harness.report.findings import saturation_note

    r = row(NO_DIFFERENCE, contrast(0.5, (-1.0, 2.0)))
    assert saturation_note(r, NAMES) is None
    wording = replace(NAMES, saturated={("corpus", "S", "hybrid", "rec@512t"): ("ceiling", 0.92),
                                        ("corpus", "F512c", "hybrid", "rec@512t"): ("ceiling", 0.875)})
    assert saturation_note(r, wording) == (
        "`H3`: `rec@512t` sits at its ceiling for 92% of `S`'s questions and its ceiling for 88% of "
        "`F512c`'s questions: near a bound it can barely tell arms apart.")


def test_saturated_metrics_counts_the_share_of_each_tested_arm_at_one_or_zero():
    from types import SimpleNamespace

    import pandas as pd

    from harness.report.glossary import saturated_metrics

    test = SimpleNamespace(dataset="corpus", a="S", b="F512c", retriever="hybrid", retriever_b=None,
                           metric="rec@512t")
    values = {"S": [1.0, 1.0, 1.0, 0.5], "F512c": [1.0, 0.5, 0.0, 0.5], "P": [1.0] * 4}
    table = pd.DataFrame([{"dataset": "corpus", "arm": arm, "retriever": "hybrid", "qid": f"q{i}",
                           "metric": "rec@512t", "value": v} for arm, vs in values.items()
                          for i, v in enumerate(vs)])
    ctx = SimpleNamespace(plan=SimpleNamespace(families=[SimpleNamespace(tests=[test])]), per_question=table)
    # S: 3 of 4 at the ceiling; F512c: 1 of 4 each way, so not most; P is not tested
    assert saturated_metrics(ctx) == {("corpus", "S", "hybrid", "rec@512t"): ("ceiling", 0.75)}
