"""Which questions a registered test uses: its plan `subset` resolved against the per-question table.

Strata restrict first (e.g. one FreshStack domain), then a seeded sample of clusters is drawn. A sample
that registers `allow_shortfall` (an arm built on that sample stopped early, e.g. its quota ran out) uses
only the sampled clusters that both arms have, and the clusters it drops are named in the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.stats.contrast import (
    MissingResultsError,
    PairedDifferences,
    ResultTable,
    as_results,
    missing_for,
    paired_differences,
    sample_clusters,
)
from harness.plan.model import TestPlan


@dataclass(frozen=True)
class Selection:
    clusters: set[str] | None  # None: every cluster
    strata: set[str] | None  # None: every stratum
    planned_clusters: int | None  # the registered sample size, when a sample was drawn
    dropped_clusters: tuple[str, ...]  # sampled but missing from an arm (only with allow_shortfall)

    def to_json(self, test: TestPlan) -> dict[str, Any] | None:
        if test.subset is None:
            return None
        out = test.subset.to_json()
        if self.planned_clusters is not None:
            out["n_clusters_used"] = len(self.clusters or ())
        if test.subset.allow_shortfall:
            out["dropped_clusters"] = list(self.dropped_clusters)
        return out


def select_questions(table: ResultTable, test: TestPlan) -> Selection:
    subset = test.subset
    if subset is None:
        return Selection(None, None, None, ())
    strata = set(subset.strata) if subset.strata is not None else None
    if subset.n_clusters is None:
        return Selection(None, strata, None, ())
    assert subset.seed is not None  # the plan loader takes n_clusters only with its seed (harness.plan.load)
    sampled = sample_clusters(table, dataset=test.dataset, n_clusters=subset.n_clusters, seed=subset.seed,
                              strata=strata)
    if not subset.allow_shortfall:
        return Selection(sampled, strata, subset.n_clusters, ())
    completed = sampled.copy()
    for arm, retriever in ((test.a, test.retriever), (test.b, test.retriever_b or test.retriever)):
        completed &= table.clusters_of(test.dataset, arm, retriever, test.metric)
    return Selection(completed, strata, subset.n_clusters, tuple(sorted(sampled - completed)))


def registered_pairs(table: pd.DataFrame | ResultTable, test: TestPlan) -> PairedDifferences:
    """A registered test's paired differences on exactly its registered questions (subset, strata, and
    B's retriever when it names one): what every per-test analysis reads."""
    results = as_results(table)
    missing = missing_for(results, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                          metric=test.metric, retriever_b=test.retriever_b)
    if missing:  # before the subset is drawn: with no rows there are no clusters to draw from
        raise MissingResultsError(missing)
    selection = select_questions(results, test)
    return paired_differences(results, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                              metric=test.metric, subset_clusters=selection.clusters, strata=selection.strata,
                              retriever_b=test.retriever_b)
