"""The report's first section: the answer to the study's question on one screen.

A headline answering each confirmatory family's question in words; one sentence per registered confirmatory
and pre-specified secondary test (harness.report.findings); the counts: questions, clusters, dropped
questions, instruments passed; the tests as a table (estimate, the CI its rule reads, verdict, tier) and one
forest plot of them all. Every code in it links to the Glossary section. Instruments are counted from
INSTRUMENT_CHECKS, functions of the report context each returning its checks, so a new instrument adds one
function there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.errors import HarnessError
from harness.report.context import ReportContext
from harness.report.findings import conclusion, finding, saturation_note
from harness.report.glossary import sentence_wording
from harness.report.model import Figure, Missing, Section, interval, points, table
from harness.report.sections_inputs import QUESTION_DROP
from harness.report.sections_outcomes import TIER_NAMES, families, withheld
from harness.metrics.registry import is_answer_level
from harness.stats.families import judge_passed, reader_passed
from harness.stats.io import load_judge_rates, load_reader_rates
from harness.stats.plots import forest_svg
from harness.stats.tables import SMALL_MARK, contrast_label
from harness.stats.verdicts import NO_DIFFERENCE

SUMMARY_TIERS = ("confirmatory", "secondary")  # registered before outcomes with a decision rule
SUMMARY_HEADER = ("test", "A - B", "dataset", "estimate", "CI", "verdict", "tier")


@dataclass(frozen=True)
class InstrumentCheck:
    name: str
    passed: bool  # rates, thresholds and what a failure demotes are in the Instruments section


def judge_acceptance(ctx: ReportContext) -> list[InstrumentCheck]:
    """One check per judge the plan's tests name: its controls and human spot check against the thresholds."""
    if ctx.plan is None:
        return []
    accepts = {}
    for fam in ctx.plan.families:
        for test in fam.tests:
            if test.acceptance is not None:
                accepts.setdefault(test.acceptance.judge, test.acceptance)
    if not accepts:
        return []
    try:
        rates = load_judge_rates(ctx.study)
    except HarnessError:  # the Instruments section names the unreadable record
        return [InstrumentCheck(f"judge {j}", False) for j in sorted(accepts)]
    return [InstrumentCheck(f"judge {judge}", judge_passed(acc, rates.get(judge)))
            for judge, acc in sorted(accepts.items())]


def reader_acceptance(ctx: ReportContext) -> list[InstrumentCheck]:
    """One check per dataset with an answer-level test: the reader's controls against the plan's
    `datasets.<name>.reader_acceptance`."""
    if ctx.plan is None:
        return []
    datasets = sorted(
        {t.dataset for fam in ctx.plan.families for t in fam.tests if is_answer_level(t.metric)}
    )
    if not datasets:
        return []
    try:
        rates = load_reader_rates(ctx.study)
    except HarnessError:
        return [InstrumentCheck(f"reader on {d}", False) for d in datasets]
    return [InstrumentCheck(f"reader on {name}",
                            reader_passed(ctx.plan.datasets[name].reader_acceptance, rates.get(name)))
            for name in datasets]


INSTRUMENT_CHECKS = (reader_acceptance, judge_acceptance)


def summary(ctx: ReportContext) -> Section:
    sec = Section("summary", "Summary")
    if ctx.plan is None:
        sec.paragraphs.append(_counts(ctx))
        sec.missing.append(Missing("plan/plan.yaml (write the plan first)", "make freeze"))
        return sec
    registered = [(fam, test) for fam in ctx.plan.families if fam.tier in SUMMARY_TIERS for test in fam.tests]
    allowed = not withheld(ctx, sec)
    found, _ = families(ctx) if allowed else ([], [])  # the Verdicts section names what is missing
    rows = {(f.family, r.test): r for f in found if f.ran for r in f.rows}
    decided_by = {(f.family, r.test): f for f in found if f.ran for r in f.rows}
    wording = sentence_wording(ctx)
    sec.paragraphs.append(_answer(ctx, rows, decided_by, allowed))
    sec.paragraphs.append(_counts(ctx))
    sec.bullets += [finding(rows[key], decided_by[key], wording) for fam, test in registered
                    if (key := (fam.id, test.id)) in rows]
    body = []
    for fam, test in registered:
        r = rows.get((fam.id, test.id))
        head = [test.id, contrast_label(r or test), test.dataset]
        if r is None or r.contrast is None:
            body.append(head + ["–", "–", "withheld" if not allowed else "not run", TIER_NAMES[fam.tier]])
            continue
        body.append(head + [points(r.contrast.estimate, 2), f"{interval(r.shown_ci, 2)} {r.ci_shown}%",
                            r.verdict + (SMALL_MARK if r.small_difference_within_margin else ""),
                            TIER_NAMES.get(r.tier, r.tier)])
    sec.tables.append(
        table(
            "summary-tests",
            "Every registered confirmatory and pre-specified secondary test "
            "(A - B in points; the CI its rule reads; details in Verdicts).",
            SUMMARY_HEADER,
            body,
            notes=_notes(body) + [note for fam, test in registered if (key := (fam.id, test.id)) in rows
                                  and (note := saturation_note(rows[key], wording)) is not None],
            collapsed=False,
        )
    )  # the answer: never folded away
    plotted = [r for (fam, test) in registered
               if (r := rows.get((fam.id, test.id))) and r.contrast is not None]
    if plotted:
        combined = replace(found[0], family="summary", rows=tuple(plotted))
        sec.figures.append(
            Figure(
                "forest-summary",
                "Every test above: A - B in points; shaded band ±margin on "
                "TOST rows; marker and colour give the verdict.",
                forest_svg(combined, title="Registered tests", compact=True),
            )
        )
    return sec


def _notes(body: list[list[str]]) -> list[str]:
    return [f"{SMALL_MARK} equivalent within the margin, but the 95% CI excludes 0: a small difference."] \
        if any(row[SUMMARY_HEADER.index("verdict")].endswith(SMALL_MARK) for row in body) else []


def _answer(ctx: ReportContext, rows: dict, decided_by: dict, allowed: bool) -> str:
    """The study's question (each confirmatory family's description, else the secondary ones') and what the
    registered tests found, in one paragraph."""
    tiers = [fam.tier for fam in ctx.plan.families]
    lead = "confirmatory" if "confirmatory" in tiers else SUMMARY_TIERS[-1]
    said = []
    for fam in ctx.plan.families:
        if fam.tier != lead:
            continue
        if not allowed:
            said.append(
                f"{fam.description.rstrip()} Not yet answered: outcomes are withheld until every cell is "
                "scored."
            )
            continue
        keys = [key for t in fam.tests if (key := (fam.id, t.id)) in rows]
        found = [conclusion(rows[key], decided_by[key]) for key in keys]
        answer = "; ".join(found) if found else "not yet answered: its statistics are missing (Verdicts)"
        said.append(f"{fam.description.rstrip()} {answer[:1].upper()}{answer[1:]}.")
        if any(rows[key].verdict == NO_DIFFERENCE for key in keys):
            said.append("A test with no detectable difference does not show the arms equivalent: only a "
                        "registered margin could.")
    return " ".join(said) or "The plan registers no confirmatory or secondary family."


def _counts(ctx: ReportContext) -> str:
    parts = []
    for name, ds in ctx.datasets.items():
        dropped = sum(v for k, v in ds.counts.items() if k.startswith(QUESTION_DROP))
        parts.append(
            f"`{name}` {len(ds.questions)} questions in {len({q.cluster for q in ds.questions})} clusters, "
            f"{dropped} dropped"
        )
    checks = [c for check in INSTRUMENT_CHECKS for c in check(ctx)]
    if checks:
        failed = [c for c in checks if not c.passed]
        parts.append(
            f"instruments passed {len(checks) - len(failed)} of {len(checks)}"
            + (
                f" (failed: {', '.join(c.name for c in failed)}; rates and thresholds under Instruments)"
                if failed
                else ""
            )
        )
    else:
        parts.append("no instrument check registered")
    return "; ".join(parts) + "."
