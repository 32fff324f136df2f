"""What a rehearsal prints: each stage's time, memory and counts, then every family and test, ran or
blocked."""

from __future__ import annotations

from dataclasses import dataclass

from harness.rehearsal.stages import StageRun
from harness.stats.families import FamilyResult
from harness.stats.verdicts import MISSING, UNDECIDED
from harness.timing import EITHER

COUNTED = ("chunk sets", "cells", "rows", "LLM calls", "contrasts")


@dataclass(frozen=True)
class TestOutcome:
    family: str
    test: str
    verdict: str | None  # None: blocked
    reason: str  # why it is blocked, or why no rule could decide it (an UNDECIDED verdict); else ""


def outcomes(families: list[FamilyResult], registered: dict[str, list[str]]) -> list[TestOutcome]:
    """Every registered test (family -> test ids, in plan order): its verdict on the twin, or why it has none.
    A family with no statistics file, or one not run, blocks all of its tests."""
    by_family = {f.family: f for f in families}
    out = []
    for family, tests in registered.items():
        released = by_family.get(family)
        rows = {r.test: r for r in (released.rows if released else ())}
        for test in tests:
            row = rows.get(test)
            if released is None:
                out.append(
                    TestOutcome(family, test, None, "the stats stage wrote no statistics for its family")
                )
            elif row is None:
                missing = "; ".join(released.missing) or "no rows"
                out.append(
                    TestOutcome(family, test, None, f"family not run: no per-question results for {missing}")
                )
            elif row.verdict == MISSING:
                out.append(TestOutcome(family, test, None,
                                       "no per-question results for " + "; ".join(row.missing or ["?"])))
            else:
                out.append(TestOutcome(family, test, row.verdict, str(row.verdict_reason or "")
                                       if row.verdict in UNDECIDED else ""))
    return out


def stage_table(runs: list[StageRun]) -> str:
    """Per stage: wall time, peak memory, the share of wall time outside model and encoder calls, counts."""
    lines = ["| stage | wall s | peak MiB | own work | " + " | ".join(COUNTED) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(COUNTED)]
    for r in runs:
        lines.append(f"| {r.stage} | {r.wall_s:.1f} | {r.peak_mib:.0f} | {r.own_share:.0%} | "
                     + " | ".join(str(r.counts.get(k, 0)) for k in COUNTED) + " |")
    total = sum(r.wall_s for r in runs)
    peak = max((r.peak_mib for r in runs), default=0.0)
    waited = sum(r.waiting_s.get(EITHER, 0.0) for r in runs)
    own = max(0.0, total - waited) / total if total else 0.0
    lines.append(
        f"| **all** | {total:.1f} | {peak:.0f} | {own:.0%} | " + " | ".join("" for _ in COUNTED) + " |"
    )
    return "\n".join(lines)


def outcome_table(results: list[TestOutcome]) -> str:
    lines = ["| family | test | on the twin |", "|---|---|---|"]
    for o in results:
        shown = (
            f"BLOCKED: {o.reason}"
            if o.verdict is None
            else f"{o.verdict}: {o.reason}"
            if o.reason
            else o.verdict
        )
        lines.append(f"| {o.family} | {o.test} | {shown} |")
    return "\n".join(lines)


def headline(results: list[TestOutcome]) -> str:
    blocked = [o for o in results if o.verdict is None]
    families = {o.family for o in results}
    if not blocked:
        text = f"every registered test ran on the twin ({len(results)} tests in {len(families)} families)"
    else:
        text = (
            f"{len(blocked)} of {len(results)} registered tests are BLOCKED on the twin "
            f"(families: {', '.join(sorted({o.family for o in blocked}))}): the plan cannot produce their "
            "verdicts from what the configured arms and retrievers write"
        )
    undecided = [o for o in results if o.verdict in UNDECIDED]
    if undecided:  # not a fault of the plan, but a test the rehearsal could not exercise: say which
        text += (f"; {len(undecided)} ran but no rule could decide them on the twin "
                 f"({', '.join(o.test for o in undecided)}): the simulated data or stand-in models gave them "
                 "nothing to compare, so the rehearsal did not exercise their decision (try --real-encoders)")
    return text
