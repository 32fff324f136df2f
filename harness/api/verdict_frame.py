"""`harness.Study(...).verdicts()`: every registered test of the plan (and its amendments) as one row, read
from the released statistics (results/stats/<family>.json) through the report's own reader."""

from __future__ import annotations

import pandas as pd

from harness.api.outcome_html import outcome_html
from harness.errors import HarnessError
from harness.plan.model import FamilyPlan
from harness.report.context import ReportContext
from harness.report.sections_outcomes import families
from harness.stats.decided import DecidedRow
from harness.stats.families import FamilyResult
from harness.stats.tables import CSV_COLUMNS, flat_record
from harness.stats.verdicts import MISSING
from harness.study import Study

# the family, the columns of results/stats/<family>.csv, and what a `missing` row lacks
COLUMNS = ("family", *CSV_COLUMNS, "missing")


class VerdictFrame(pd.DataFrame):
    """A DataFrame that Jupyter shows as the report's verdict table. What is derived from it (a selection,
    a sort) is a plain DataFrame."""

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    def _repr_html_(self) -> str:
        return outcome_html(self, name="verdicts", caption=(
            "Every registered test: A - B in points, the BCa CI at the level its rule reads, p-values raw "
            "(Holm-adjusted in brackets where the family adjusts them)."))


def _unrun(family: FamilyPlan, result: FamilyResult) -> list[DecidedRow]:
    """The rows of a family that did not run (none of its tests had per-question results): each `missing`."""
    return [DecidedRow(test=t.id, rule=t.rule, dataset=t.dataset, a=t.a, b=t.b, retriever=t.retriever,
                       metric=t.metric, margin=t.margin, tier=family.tier, source=t.source, verdict=MISSING,
                       retriever_b=t.retriever_b, missing=result.missing) for t in family.tests]


def verdict_frame(study: Study) -> VerdictFrame:
    """One row per registered test, in plan order; statistics absent or from another freeze are an error."""
    context = ReportContext(study)
    found, absent = families(context)
    if absent:
        raise HarnessError(f"{study.root}: " + " ".join(m.sentence() for m in absent))
    records = []
    for result in found:
        plan = context.plan.family(result.family)
        for row in result.rows if result.ran else _unrun(plan, result):
            flat = flat_record(row.to_json())
            records.append({"family": result.family, **{c: flat.get(c) for c in CSV_COLUMNS},
                            "missing": "; ".join(row.missing) or None})
    return VerdictFrame(pd.DataFrame.from_records(records, columns=list(COLUMNS)))
