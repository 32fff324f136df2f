"""Per-arm means (harness.report.means): each group's bootstrap sees its own rows, whatever the table's
order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.plan.model import derive_seed
from harness.report.means import MEANS_SEED, arm_means
from harness.inference.bootstrap import cluster_bootstrap


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for dataset, stratified in (("a", True), ("b", False)):
        for arm in ("P", "E"):
            for retriever in ("bm25", "dense"):
                for metric in ("recall", "ndcg"):
                    for q in range(40):
                        rows.append(
                            (
                                dataset,
                                arm,
                                retriever,
                                f"q{q:02d}",
                                f"c{q % 7}",
                                f"s{q % 7 % 2}",
                                metric,
                                float(rng.random()),
                            )
                        )
    return pd.DataFrame(
        rows, columns=["dataset", "arm", "retriever", "qid", "cluster", "stratum", "metric", "value"]
    )


def test_each_group_is_bootstrapped_on_its_own_rows_whatever_the_row_order():
    table = _table(0)
    shuffled = table.sample(frac=1.0, random_state=3).reset_index(drop=True)
    stratified = {"a": True, "b": False}
    means = arm_means(shuffled, stratified=stratified, resamples=200)
    first_seen = list(dict.fromkeys(zip(*(shuffled[c] for c in ("dataset", "arm", "retriever", "metric")))))
    assert [(m.dataset, m.arm, m.retriever, m.metric) for m in means] == first_seen  # table order
    for m in means:
        rows = table[(table.dataset == m.dataset) & (table.arm == m.arm) & (table.retriever == m.retriever)
                     & (table.metric == m.metric)].sort_values("qid")
        expected = cluster_bootstrap(
            rows["value"].to_numpy() * 100.0,
            rows["cluster"].to_numpy(),
            rows["stratum"].to_numpy() if stratified[m.dataset] else None,
            resamples=200,
            seed=derive_seed(MEANS_SEED, f"{m.dataset}/{m.arm}/{m.retriever}/{m.metric}"),
        )
        assert (m.mean, m.ci95, m.n_questions, m.n_clusters) == (
            expected.estimate, tuple(expected.ci95_bca), expected.n_questions, expected.n_clusters)
    assert arm_means(table.iloc[:0], stratified=stratified) == []
