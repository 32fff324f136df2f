"""Per-arm means with 95% cluster-bootstrap CIs, from the long per-question table (points, x100).

Descriptive, not a registered test: a fixed seed derived per cell and fewer resamples than the plan's
families, both named in the table caption.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.inference.bootstrap import cluster_bootstrap
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


def arm_means(
    table: pd.DataFrame, *, stratified: dict[str, bool], resamples: int = MEANS_RESAMPLES
) -> list[ArmMean]:
    """One ArmMean per (dataset, arm, retriever, metric) present in `table`, in table order."""
    out = []
    keys = ["dataset", "arm", "retriever", "metric"]
    if table.empty:
        return out
    # one sort of the whole table by (group, qid) instead of a groupby and a sort per group: a paper-scale
    # table has millions of rows in thousands of groups. Within a group the rows go in qid order (unique
    # there), so the per-cluster sums, and the interval to the last bit, do not depend on the table's order
    group = table.groupby(keys, sort=False).ngroup().to_numpy()
    qid_rank, _ = pd.factorize(table["qid"], sort=True)
    order = np.lexsort((qid_rank, group))
    starts = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0])
    ends = np.r_[starts[1:], len(order)]
    columns = {c: table[c].to_numpy()[order] for c in (*keys, "value", "cluster", "stratum")}
    for start, end in zip(starts, ends):
        dataset, arm, retriever, metric = (columns[c][start] for c in keys)
        seed = derive_seed(MEANS_SEED, f"{dataset}/{arm}/{retriever}/{metric}")
        strata = columns["stratum"][start:end] if stratified.get(dataset, False) else None
        result = cluster_bootstrap(
            columns["value"][start:end].astype(float) * 100.0,
            columns["cluster"][start:end],
            strata,
            resamples=resamples,
            seed=seed,
        )
        out.append(ArmMean(dataset, arm, retriever, metric, result.n_questions, result.n_clusters,
                           result.estimate, tuple(result.ci95_bca), seed))
    return out
