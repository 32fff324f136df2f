"""Report sections that show outcomes: per-arm means, verdicts, forest plots, budget sweeps, spending guide.

Each first asks `withheld`: while a configured cell is unscored (no interim looks), the section says which
cells are missing and shows no number.
"""

from __future__ import annotations

from harness.files import read_json
from harness.report.figures import budget_sweep_svg, sweep_metrics
from harness.report.means import MEANS_RESAMPLES, MEANS_SEED
from harness.stats.families import FamilyResult
from harness.stats.plots import forest_svg
from harness.stats.verdicts import MISSING
from harness.stats.tables import (
    T_TOST_MARK, acceptance_notes, caption, contrast_label, exploratory_mark, retriever_label, t_tost_notes,
    undecided_notes,
)
from harness.provenance.interim import describe_missing
from harness.report.context import ReportContext
from harness.report.model import Figure, Missing, Section, interval, p_value, points, table
from harness.grid.paths import stats_dir

TIER_NAMES = {
    "confirmatory": "confirmatory",
    "secondary": "pre-specified secondary",
    "exploratory": "exploratory",
}
TIER_MARKS = {"confirmatory": "c", "secondary": "s", "exploratory": "x"}


def withheld(ctx: ReportContext, sec: Section) -> bool:
    allowed, missing = ctx.outcomes
    if not allowed:
        sec.missing.append(Missing(f"withheld, no interim looks: {describe_missing(missing)}",
                                   "make build-arms score"))
    return not allowed


def families(ctx: ReportContext) -> tuple[list[FamilyResult], list[Missing]]:
    """Every family the plan registers, as its results/stats JSON; absent or stale ones become Missing."""
    if ctx.plan is None:
        return [], [Missing("plan/plan.yaml (write the plan first)", "make freeze stats")]
    found, missing = [], []
    for fam in ctx.plan.families:
        path = stats_dir(ctx.study) / f"{fam.id}.json"
        if not path.is_file():
            missing.append(Missing(f"statistics of family {fam.id} ({path.name})", "make stats"))
            continue
        data = FamilyResult.from_json(read_json(path), str(path))
        stamp = data.frozen_config_hash
        if ctx.frozen_hash and stamp and stamp != ctx.frozen_hash:
            missing.append(
                Missing(f"family {fam.id}: statistics from another freeze ({stamp[:12]})", "make stats")
            )
            continue
        found.append(data)
    return found, missing


def per_arm_means(ctx: ReportContext) -> Section:
    sec = Section("means", "Per-arm means")
    if withheld(ctx, sec):
        return sec
    if not ctx.means:
        sec.missing.append(Missing("per-question results", "make score"))
        return sec
    for dataset in dict.fromkeys(m.dataset for m in ctx.means):
        cells = [m for m in ctx.means if m.dataset == dataset]
        order = list(ctx.study.arms)
        arms = sorted(
            dict.fromkeys(m.arm for m in cells),
            key=lambda a: (order.index(a) if a in order else len(order), a),
        )
        by = {(m.metric, m.retriever, m.arm): m for m in cells}
        rows = []
        for metric, retriever in dict.fromkeys((m.metric, m.retriever) for m in cells):
            rows.append([metric, retriever] + [
                f"{points(by[metric, retriever, a].mean)} {interval(by[metric, retriever, a].ci95)}"
                if (metric, retriever, a) in by else "–" for a in arms])
        n = cells[0]
        sec.tables.append(
            table(
                f"means-{dataset}",
                f"Per-arm means on `{dataset}` in points with 95% BCa cluster-bootstrap CIs "
                f"({n.n_questions} questions, {n.n_clusters} clusters; {MEANS_RESAMPLES} resamples, seed "
                "derived from "
                f"{MEANS_SEED} and the cell). Descriptive: the registered tests are in Verdicts.",
                ["metric", "retriever"] + arms,
                rows,
                collapsed=True,
            )
        )
    return sec


def _verdict_rows(fam: FamilyResult) -> list[list]:
    rows = []
    for r in fam.rows:
        head = [r.test, contrast_label(r), r.dataset, retriever_label(r), r.metric]
        margin = "–" if r.margin is None else f"±{r.margin:g}"
        tier = TIER_NAMES.get(r.tier, r.tier)
        c = r.contrast
        if c is None:  # a registered test without per-question results: no statistics to show
            rows.append(head + ["–"] * 8 + [margin, "–", tier, MISSING])
            continue
        rows.append(head + [
            f"{c.n_questions} ({c.n_clusters})", points(c.estimate, 2), interval(c.ci90_bca, 2),
            interval(c.ci95_bca, 2), _with_holm(c.p_tost, r.p_tost_holm), interval(c.ci90_t, 2),
            p_value(c.p_tost_t) + (T_TOST_MARK if r.t_tost_disagrees else ""),
            _with_holm(c.p_signflip, r.p_signflip_holm), margin, points(r.mdd, 2), tier,
            r.verdict + ("†" if r.small_difference_within_margin else "") + exploratory_mark(r)])
    return rows


def _with_holm(p: float | None, holm: float | None) -> str:
    """The raw p, and its Holm-adjusted value where the family adjusted that p."""
    return p_value(p) if holm is None else f"{p_value(p)} ({p_value(holm)})"


def verdicts(ctx: ReportContext) -> Section:
    sec = Section("verdicts", "Verdicts")
    if withheld(ctx, sec):
        return sec
    found, missing = families(ctx)
    sec.missing += missing
    for fam in found:
        if not fam.ran:
            sec.missing.append(Missing(f"family {fam.family} not run: " + "; ".join(fam.missing),
                                       "make build-arms score stats"))
            continue
        sec.tables.append(verdict_table(fam))
    return sec


def verdict_table(fam: FamilyResult):
    """A family that ran, as the Verdicts section shows it, notes included."""
    notes = ["† equivalent within the margin, but the 95% CI excludes 0: a small difference."] \
        if any(r.small_difference_within_margin for r in fam.rows) else []
    notes += t_tost_notes(fam) + undecided_notes(fam) + acceptance_notes(fam)
    return table(
        f"verdicts-{fam.family}",
        caption(fam),
        [
            "test",
            "A - B",
            "dataset",
            "retriever",
            "metric",
            "n (clusters)",
            "estimate",
            "90% CI",
            "95% CI",
            "p TOST (Holm)",
            "90% t CI",
            "p t-TOST",
            "p sign-flip (Holm)",
            "margin",
            "MDD",
            "tier",
            "verdict",
        ],
        _verdict_rows(fam),
        notes,
    )


def forest_plots(ctx: ReportContext) -> Section:
    sec = Section("forest", "Forest plots")
    if withheld(ctx, sec):
        return sec
    found, missing = families(ctx)
    sec.missing += missing
    for fam in found:
        if not fam.ran:
            sec.missing.append(Missing(f"forest plot of family {fam.family} (not run)", "make stats"))
            continue
        sec.figures.append(
            Figure(
                f"forest-{fam.family}",
                f"Family {fam.family} "
                f"({TIER_NAMES.get(fam.tier, fam.tier)}): A - B in points; shaded band "
                "±margin on TOST rows; marker and colour give the verdict.",
                forest_svg(fam),
            )
        )
    return sec


def budget_sweeps(ctx: ReportContext) -> Section:
    sec = Section("sweeps", "Budget sweeps")
    if withheld(ctx, sec):
        return sec
    if not ctx.means:
        sec.missing.append(Missing("per-question results", "make score"))
        return sec
    for dataset, retriever in dict.fromkeys((m.dataset, m.retriever) for m in ctx.means):
        cells = [m for m in ctx.means if m.dataset == dataset and m.retriever == retriever]
        names = sweep_metrics(cells)
        if not names:
            sec.missing.append(Missing(f"{dataset}/{retriever}: a metric at two or more token budgets",
                                       "make score (with budgets in configs/study.yaml)"))
            continue
        sec.figures.append(Figure(f"sweep-{dataset}-{retriever}", f"`{dataset}` under {retriever}: "
                                  f"{', '.join(names)} against the token budget, per arm, with 95% CI bands.",
                                  budget_sweep_svg(cells, dataset=dataset, retriever=retriever,
                                                   arm_order=list(ctx.study.arms))))
    return sec


def spending_guide(ctx: ReportContext) -> Section:
    sec = Section("spending", "Spending guide")
    if withheld(ctx, sec):
        return sec
    found, missing = families(ctx)
    sec.missing += missing
    # every decided row (a missing one has no estimate to rank), with its family
    rows = [(f.family, r, r.contrast) for f in found if f.ran for r in f.rows if r.contrast is not None]
    if not rows:
        sec.missing.append(Missing("a family that ran", "make stats"))
        return sec
    for dataset in dict.fromkeys(r.dataset for _, r, _ in rows):
        ordered = sorted((x for x in rows if x[1].dataset == dataset),
                         key=lambda x: (-x[2].estimate, x[1].test))
        body = [[f"{r.a} instead of {r.b}" if not r.retriever_b else
                 f"{r.a} under {r.retriever} instead of {r.b} under {r.retriever_b}",
                 retriever_label(r), r.metric, f"{c.estimate:+.1f}", interval(r.shown_ci), f"{r.ci_shown}%",
                 r.verdict, f"{TIER_MARKS.get(r.tier, '?')} ({family}/{r.test})"] for family, r, c in ordered]
        sec.tables.append(
            table(
                f"spending-{dataset}",
                f"Where to spend on `{dataset}`, in order: every registered "
                "choice, ordered by what it returned (A - B in points). Tiers: c confirmatory; "
                "s pre-specified secondary; x exploratory.",
                ["choice", "retriever", "metric", "return", "CI", "level", "verdict", "tier (test)"],
                body,
            )
        )
    return sec
