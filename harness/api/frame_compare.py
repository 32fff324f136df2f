"""`harness.compare`: one paired contrast A - B on any long-format table, with the statistics of
`harness compare` (BCa cluster bootstrap, cluster sign-flip, TOST with a margin) and, given a registered
rule, its verdict. Ad hoc: no multiplicity adjustment, and no study guards the table (docs/api.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.api.commands import command_parser
from harness.api.outcome_html import outcome_html
from harness.cli.compare import check_numbers
from harness.errors import HarnessError
from harness.grid.results import COLUMNS, check_per_question
from harness.plan.rules import RULE_TERMS
from harness.stats.contrast import ContrastResult
from harness.stats.contrast import compare as contrast
from harness.stats.rules import DecisionContext, rule as registered_rule
from harness.stats.tables import flat_record
from harness.stats.verdicts import undecided

REQUIRED = ("arm", "qid", "metric", "value")  # plus the `cluster=` column unless cluster=None
WHERE = "harness.compare"
NOT_GIVEN = "-"  # the dataset or retriever of a table without that column (the table's ids must not be empty)


@dataclass(frozen=True)
class FrameComparison:
    """The contrast (`harness compare`'s record) and, when a rule was given, its ad hoc verdict."""

    contrast: ContrastResult
    rule: str | None = None
    alpha: float | None = None
    verdict: str | None = None
    verdict_reason: str | None = None  # why no rule may decide it (too few clusters, no variation)
    small_difference_within_margin: bool = False
    ci_shown: str = "95"  # the BCa CI level the rule reads (no rule: the 95% one)

    def to_json(self) -> dict[str, Any]:
        decided = {} if self.rule is None else {
            "rule": self.rule, "alpha": self.alpha, "ci_shown": self.ci_shown, "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "small_difference_within_margin": self.small_difference_within_margin}
        return self.contrast.to_json() | decided

    def to_frame(self) -> pd.DataFrame:
        """One row: the JSON record, each interval split into <key>_lo and <key>_hi."""
        return pd.DataFrame([flat_record(self.to_json())])

    def _repr_html_(self) -> str:
        what = f"rule {self.rule} at alpha {self.alpha:g}, unadjusted" if self.rule else "no rule, no verdict"
        return outcome_html(self.to_frame().assign(ci_shown=self.ci_shown), name="comparison",
                            caption=f"A - B in points, paired by qid; ad hoc ({what}).")


def _one(frame: pd.DataFrame, column: str, given: str | None) -> str:
    """The dataset or retriever the contrast is on: `given`, else the column's only value (NOT_GIVEN without
    the column: the whole table is one)."""
    if column not in frame.columns:
        if given is not None:
            raise HarnessError(f"{WHERE}: {column}={given!r}, but the table has no {column!r} column")
        return NOT_GIVEN
    if given is not None:
        return given
    values = sorted(map(str, frame[column].dropna().unique()))
    if len(values) != 1:
        raise HarnessError(f"{WHERE}: the table holds {len(values)} values of {column!r} "
                           f"({', '.join(values[:5])}{' ...' if len(values) > 5 else ''}): pass {column}=")
    return values[0]


def _text(column: pd.Series) -> pd.Series:
    """Integer ids as strings (a qid of 3 is "3"); anything else is checked as it is."""
    return column.astype(str) if pd.api.types.is_integer_dtype(column) else column


def long_table(frame: pd.DataFrame, *, dataset: str, retriever: str, cluster: str | None,
               strata: str | None) -> pd.DataFrame:
    """The frame in the per-question table's columns (harness.grid.results), checked as that table is."""
    needed = [*REQUIRED, *([cluster] if cluster is not None else [])]
    if strata is not None and strata != "stratum":  # the default column may be absent: then no strata
        needed.append(strata)
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        hint = " (cluster=None makes each question its own cluster)" if cluster in absent else ""
        raise HarnessError(f"{WHERE}: the table has no column {', '.join(map(repr, absent))}{hint}; "
                           f"its columns are {', '.join(map(str, frame.columns))}")
    n = len(frame)
    table = pd.DataFrame({
        "dataset": frame["dataset"] if "dataset" in frame.columns else [dataset] * n,
        "arm": frame["arm"],
        "retriever": frame["retriever"] if "retriever" in frame.columns else [retriever] * n,
        "qid": frame["qid"],
        "cluster": frame["qid"] if cluster is None else frame[cluster],
        "stratum": frame[strata] if strata is not None and strata in frame.columns else [""] * n,
        "metric": frame["metric"],
        "value": frame["value"],
    }, columns=list(COLUMNS)).reset_index(drop=True)
    table = table.assign(**{c: _text(table[c]) for c in COLUMNS if c != "value"})
    check_per_question(table, "the table given to harness.compare")
    return table


def compare(frame: pd.DataFrame, *, a: str, b: str, metric: str, cluster: str | None = "cluster",
            strata: str | None = "stratum", margin: float | None = None, rule: str | None = None,
            dataset: str | None = None, retriever: str | None = None, alpha: float = 0.05,
            signflip_required: bool = False, seed: int | None = None, resamples: int | None = None,
            max_flips: int | None = None) -> FrameComparison:
    """A - B in points on `metric`, questions paired by qid (docs/api.md, harness.compare).

    `cluster`: the column of each question's cluster (None: each question is its own); `strata`: the column
    resampled stratum by stratum (default `stratum`, where the table has it; None: no strata). `dataset` and
    `retriever` pick one where the table holds several. `margin` adds TOST; `rule` (a registered decision
    rule) decides a verdict at `alpha`, unadjusted. `seed`, `resamples` and `max_flips` default to
    `harness compare`'s."""
    defaults = command_parser("compare", WHERE)
    seed = defaults.get_default("seed") if seed is None else seed
    resamples = defaults.get_default("resamples") if resamples is None else resamples
    max_flips = defaults.get_default("max_flips") if max_flips is None else max_flips
    check_numbers(resamples, max_flips, margin, keywords=True)
    decides = None if rule is None else registered_rule(rule)
    if rule is not None and RULE_TERMS[rule].needs_margin and margin is None:
        raise HarnessError(f"{WHERE}: rule {rule!r} needs margin= (an equivalence margin in points)")
    if not isinstance(frame, pd.DataFrame):
        raise HarnessError(f"{WHERE}: expected a pandas DataFrame; got {type(frame).__name__}")
    dataset, retriever = _one(frame, "dataset", dataset), _one(frame, "retriever", retriever)
    table = long_table(frame, dataset=dataset, retriever=retriever, cluster=cluster, strata=strata)
    try:
        result = contrast(table, dataset=dataset, retriever=retriever, a=a, b=b, metric=metric, seed=seed,
                          resamples=resamples, max_flips=max_flips, margin=margin,
                          stratified=strata is not None and strata in frame.columns)
    except ValueError as e:  # a bad seed or margin, as `harness compare` reports it
        raise HarnessError(f"{WHERE}: {e}") from None
    if decides is None:
        return FrameComparison(result)
    p = getattr(result, decides.decisive_p)
    decision = undecided(result) or decides.decide(result, DecisionContext(
        p=float(p), margin=margin, alpha=alpha, signflip_required=signflip_required))
    return FrameComparison(result, rule=rule, alpha=alpha, verdict=decision.label,
                           verdict_reason=decision.reason,
                           small_difference_within_margin=decision.small_difference_within_margin,
                           ci_shown=decides.ci_shown)
