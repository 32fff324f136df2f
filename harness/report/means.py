"""Per-arm means with 95% cluster-bootstrap CIs, from the long per-question table (points, x100).

Descriptive, not a registered test: a fixed seed derived per cell and fewer resamples than the plan's
families, both named in the table caption.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.stats.bootstrap import cluster_bootstrap
from harness.plan.model import derive_seed

MEANS_SEED = 20_270
MEANS_RESAMPLES = 2_000


@dataclass(frozen=True)
class ArmMean:
    dataset: str
    arm: str
    retriever: str
    metric: str
    n_questions: int
    n_clusters: int
    mean: float  # points
    ci95: tuple[float, float]  # BCa, points
    seed: int


def arm_means(table: pd.DataFrame, *, stratified: dict[str, bool], resamples: int = MEANS_RESAMPLES) -> list[ArmMean]:
    """One ArmMean per (dataset, arm, retriever, metric) present in `table`, in table order."""
    out = []
    keys = ["dataset", "arm", "retriever", "metric"]
    for (dataset, arm, retriever, metric), rows in table.groupby(keys, sort=False):
        rows = rows.sort_values("qid")
        seed = derive_seed(MEANS_SEED, f"{dataset}/{arm}/{retriever}/{metric}")
        strata = rows["stratum"].to_numpy() if stratified.get(dataset, False) else None
        result = cluster_bootstrap(rows["value"].to_numpy() * 100.0, rows["cluster"].to_numpy(), strata,
                                   resamples=resamples, seed=seed)
        out.append(ArmMean(dataset, arm, retriever, metric, result.n_questions, result.n_clusters,
                           result.estimate, tuple(result.ci95_bca), seed))
    return out
