"""One registered test as its family decided it: the typed row of results/stats/<family>.json.

`decide_family` (harness.stats.families) builds each row; the tables, plots, report, rehearsal and CLI read
its fields, and `to_json()` / `from_json()` are the file's row, key for key and in the order it always had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.errors import InputError
from harness.stats.contrast import ContrastResult
from harness.stats.verdicts import MISSING


@dataclass(frozen=True)
class InstrumentControls:
    """One instrument a test's outcome rests on (the judge, or the reader on a dataset): the plan's
    thresholds, the measured control rates and whether both were met."""

    instrument: str  # "judge" (row field `acceptance`) or "reader" (row field `reader_acceptance`)
    name: str  # the judge's name, or the dataset the reader answered on
    positive_min: float | None
    negative_max: float | None
    positive: float | None
    negative: float | None
    passed: bool
    kappa: float | None = None  # the judge's human spot check; the reader has none

    def to_json(self) -> dict[str, Any]:
        if self.instrument == JUDGE:
            return {"judge": self.name, "positive_min": self.positive_min, "negative_max": self.negative_max,
                    "positive": self.positive, "negative": self.negative, "kappa": self.kappa,
                    "passed": self.passed}
        return {"dataset": self.name, "positive_min": self.positive_min, "negative_max": self.negative_max,
                "positive": self.positive, "negative": self.negative, "passed": self.passed}

    @classmethod
    def from_json(cls, instrument: str, data: Mapping[str, Any], where: str) -> InstrumentControls:
        named_by = "judge" if instrument == JUDGE else "dataset"
        absent = [k for k in (named_by, "passed") if k not in data]
        if absent:
            raise InputError(f"{where}: not an instrument check; missing {', '.join(absent)}")
        return cls(instrument, str(data[named_by]), data.get("positive_min"), data.get("negative_max"),
                   data.get("positive"), data.get("negative"), bool(data["passed"]), data.get("kappa"))


JUDGE, READER = "judge", "reader"
# what each instrument check is (the glossary, harness.report.glossary; docs/instruments.md)
INSTRUMENT_MEANINGS = {
    READER: "the fixed LLM that answers from the retrieved text; its positive control (answering from the "
    "gold evidence) must score high and its negative control (another cluster's evidence) low, or the "
    "answer-level tests on that dataset are reported as exploratory",
    JUDGE: "the LLM that grades answers against nuggets; it must pass its positive and negative controls and "
    "agree with a human spot check (Cohen's kappa), or the tests it grades are reported as exploratory",
}


@dataclass(frozen=True)
class DecidedRow:
    """A registered test, its contrast (None: the test had no per-question results), the Holm-adjusted
    p-values of a Holm family, the verdict and the instrument checks its tier rests on."""

    test: str
    rule: str
    dataset: str
    a: str
    b: str
    retriever: str
    metric: str
    margin: float | None  # the test's registered margin (a contrast computes p_tost only under a TOST rule)
    tier: str  # the family's, or "exploratory" when an instrument check failed or the test was demoted
    source: str
    verdict: str
    retriever_b: str | None = None
    subset: dict[str, Any] | None = None  # the registered subset as drawn (harness.stats.subsets)
    missing: tuple[str, ...] = ()  # a `missing` row: what it lacks
    contrast: ContrastResult | None = None
    p_tost_holm: float | None = None
    p_signflip_holm: float | None = None
    t_tost_disagrees: bool | None = None  # harness.inference.t_tost.disagrees
    mdd: float | None = None  # minimum detectable difference, points (None in statistics older than it)
    ci_shown: str | None = None  # the BCa CI level the rule reads and tables show ("90" or "95")
    verdict_reason: str | None = None  # why no rule could decide the row (an UNDECIDED verdict)
    small_difference_within_margin: bool = False
    acceptance: InstrumentControls | None = None  # the judge, for a test naming one
    reader_acceptance: InstrumentControls | None = None  # the reader, for an answer-level metric
    demoted: str | None = None  # why the test is exploratory: added by a post-outcome amendment

    @property
    def instrument_checks(self) -> tuple[InstrumentControls, ...]:
        return tuple(c for c in (self.acceptance, self.reader_acceptance) if c is not None)

    @property
    def shown_ci(self) -> tuple[float, float]:
        """The interval its rule reads: the 90% BCa CI for a rule showing 90, else the 95% one."""
        if self.contrast is None:
            raise ValueError(f"test {self.test} has no contrast (verdict {self.verdict})")
        return self.contrast.ci90_bca if self.ci_shown == "90" else self.contrast.ci95_bca

    def to_json(self) -> dict[str, Any]:
        base: dict[str, Any] = {
            "test": self.test, "rule": self.rule, "dataset": self.dataset, "a": self.a, "b": self.b,
            "retriever": self.retriever, "metric": self.metric, "margin": self.margin,
            **({"retriever_b": self.retriever_b} if self.retriever_b else {}),
            "tier": self.tier, "source": self.source, **({"demoted": self.demoted} if self.demoted else {})}
        c = self.contrast
        if c is None:
            return base | {"verdict": self.verdict, "missing": list(self.missing), "subset": self.subset}
        contrast = c.to_json()
        row = {**base, **contrast, "subset": self.subset, "margin": self.margin, "p_tost": c.p_tost,
               "ci90_t": contrast.get("ci90_t"), "p_tost_t": c.p_tost_t, "t_df": c.t_df,
               "t_tost_disagrees": self.t_tost_disagrees, "p_tost_holm": self.p_tost_holm,
               "p_signflip_holm": self.p_signflip_holm, "mdd": self.mdd, "ci_shown": self.ci_shown,
               "verdict": self.verdict, "verdict_reason": self.verdict_reason,
               "small_difference_within_margin": self.small_difference_within_margin}
        for field, check in (("acceptance", self.acceptance), ("reader_acceptance", self.reader_acceptance)):
            if check is not None:
                row[field] = check.to_json()
        return row

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> DecidedRow:
        """A written row read back; `where` names it (file and row) in errors."""
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: a row must be an object; got {type(data).__name__}")
        absent = [k for k in ("test", "rule", "dataset", "a", "b", "retriever", "metric", "tier", "source",
                              "verdict") if k not in data]
        if absent:
            raise InputError(f"{where}: not a decided row; missing {', '.join(absent)}")
        ident = {k: data[k] for k in ("test", "rule", "dataset", "a", "b", "retriever", "metric", "tier",
                                      "source", "verdict")}
        ident |= {"margin": data.get("margin"), "retriever_b": data.get("retriever_b"),
                  "subset": data.get("subset"), "demoted": data.get("demoted")}
        if data["verdict"] == MISSING:
            return cls(**ident, missing=tuple(data.get("missing") or ()))
        # a contrast holds the margin only where it computed p_tost against it (a TOST rule)
        contrast = ContrastResult.from_json(
            {**data, "margin": data.get("margin") if data.get("p_tost") is not None else None}, where)
        judge, reader = (None if data.get(field) is None else
                         InstrumentControls.from_json(instrument, data[field], f"{where}, {field}")
                         for field, instrument in (("acceptance", JUDGE), ("reader_acceptance", READER)))
        return cls(**ident, contrast=contrast, p_tost_holm=data.get("p_tost_holm"),
                   p_signflip_holm=data.get("p_signflip_holm"), t_tost_disagrees=data.get("t_tost_disagrees"),
                   mdd=data.get("mdd"), ci_shown=data.get("ci_shown"),
                   verdict_reason=data.get("verdict_reason"),
                   small_difference_within_margin=bool(data.get("small_difference_within_margin")),
                   acceptance=judge, reader_acceptance=reader)
