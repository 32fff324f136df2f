"""The metric sets a dataset names in `metric_set:` (docs/design.md, Evidence metrics): what each one is.

This is the declared half: the names the config checks, and the facts the config, the answer stage,
`harness init` and the rehearsal read by name. How a set scores a ranking (its metrics, cut-offs and
default budgets) is attached by harness.metrics.registry under the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.config.fields import ValueCheck, MapOf, OneOf, Where

# How a set's gold is given, which also shapes the JSONL twin the rehearsal simulates for it
# (harness.rehearsal.twin_data): evidence strings located in one paper (Qasper-like), or gold sections of
# pooled documents per domain (FreshStack-like)
EVIDENCE_STRINGS, GOLD_SECTIONS = "evidence strings", "gold sections"


@dataclass(frozen=True)
class MetricSetSpec:
    reader_budget: int  # tokens of context the fixed reader answers from: the default of `reader.budgets`
    margin: int  # points: the equivalence margin `harness init` registers
    primary_metric: str  # the primary metric `harness init` registers
    assembles: bool  # `assembly:` options (how a ranking fills the budgets) apply to it
    gold: str  # EVIDENCE_STRINGS or GOLD_SECTIONS


# reader budgets: the paper's answer-level budgets (section 4.4); margins: the flagship's
METRIC_SETS: dict[str, MetricSetSpec] = {
    "qasper": MetricSetSpec(reader_budget=512, margin=5, primary_metric="rec@512t", assembles=True,
                            gold=EVIDENCE_STRINGS),
    "freshstack": MetricSetSpec(reader_budget=1024, margin=4, primary_metric="prec@1024t", assembles=False,
                                gold=GOLD_SECTIONS),
}


def reader_budgets() -> dict[str, int]:
    """metric set -> the reader's default budget."""
    return {name: spec.reader_budget for name, spec in METRIC_SETS.items()}


class MetricSetName(ValueCheck):
    """One of METRIC_SETS (those whose gold is `gold`, when given), read when checking, so a set registered
    after import is known."""

    def __init__(self, gold: str | None = None):
        self.gold = gold

    def _names(self) -> OneOf:
        return OneOf(tuple(n for n, spec in METRIC_SETS.items() if self.gold in (None, spec.gold)))

    @property
    def expected(self) -> str:
        return self._names().expected

    def __call__(self, value: Any, where: Where) -> Any:
        return self._names()(value, where)


class ByMetricSet(ValueCheck):
    """A mapping keyed by metric set (budgets), the names read from METRIC_SETS when checking."""

    def __init__(self, values: ValueCheck):
        self.values = values

    @property
    def expected(self) -> str:
        return MapOf(self.values, keys=tuple(METRIC_SETS)).expected

    def __call__(self, value: Any, where: Where) -> Any:
        return MapOf(self.values, keys=tuple(METRIC_SETS))(value, where)
