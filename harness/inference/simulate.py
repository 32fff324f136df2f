"""Synthetic per-question results with known arm effects, for tests, benchmarks and calibration studies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class SyntheticDataset:
    name: str
    n_clusters: int
    mean_cluster_size: float  # questions per cluster: 1 + Poisson(mean - 1)
    strata: tuple[str, ...] = ("",)
    # exactly this many questions instead (e.g. a paper's 951): 1 per cluster plus the rest spread uniformly
    n_questions: int | None = None

    def cluster_sizes(self, rng: np.random.Generator) -> np.ndarray:
        if self.n_questions is None:
            return 1 + rng.poisson(self.mean_cluster_size - 1, self.n_clusters)
        if self.n_questions < self.n_clusters:
            raise ValueError(f"dataset {self.name}: {self.n_questions} questions cannot fill "
                             f"{self.n_clusters} clusters")
        return 1 + rng.multinomial(
            self.n_questions - self.n_clusters, np.full(self.n_clusters, 1 / self.n_clusters)
        )


def redraw_clusters(rng: np.random.Generator, pool: int, n: int, studies: int) -> np.ndarray:
    """Simulated studies drawn from a pilot: (studies, n) indices into its `pool` clusters, with replacement.

    The one redraw behind `harness power` (n: a candidate study size) and the known-effects replicates
    (harness.stats.replicates; n = pool: a study of the registered size). One call takes one block of
    `rng`'s stream, so a seed gives the same studies wherever they are drawn.
    """
    if pool < 1 or n < 1 or studies < 1:
        raise ValueError(f"`pool`, `n` and `studies` must be >= 1; got {pool}, {n}, {studies}")
    return rng.integers(0, pool, size=(studies, n))


def clustered_sample(
    rng: np.random.Generator, *, n_clusters: int, mean_cluster_size: float, shift: float,
    cluster_sd: float, noise_sd: float, skew: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(values, cluster labels) whose population question-weighted mean is exactly `shift`.

    Cluster effects and question noise have mean 0 and are independent of cluster size; with `skew` the
    noise is a centred exponential (a skewed case where BCa matters).
    """
    sizes = 1 + rng.poisson(mean_cluster_size - 1, n_clusters)
    clusters = np.repeat(np.arange(n_clusters), sizes)
    effect = rng.normal(0.0, cluster_sd, n_clusters)[clusters]
    noise = (
        (rng.exponential(noise_sd, len(clusters)) - noise_sd)
        if skew
        else rng.normal(0.0, noise_sd, len(clusters))
    )
    return shift + effect + noise, clusters


def long_table(
    rng: np.random.Generator,
    datasets: list[SyntheticDataset],
    arms: dict[str, float],
    retrievers: list[str],
    metrics: dict[str, list[str]],
    *,
    noise: float = 0.15,
) -> pd.DataFrame:
    """Long-format per-question results: value = clip(question base + arm effect + noise, 0, 1).

    `arms` maps arm -> effect on the [0, 1] scale; every arm covers every question, so pairing always works.
    """
    frames = []
    for ds in datasets:
        sizes = ds.cluster_sizes(rng)
        cluster_idx = np.repeat(np.arange(ds.n_clusters), sizes)
        n = len(cluster_idx)
        clusters = np.array([f"{ds.name}-c{c:04d}" for c in cluster_idx])
        stratum_of_cluster = np.array(ds.strata)[np.arange(ds.n_clusters) % len(ds.strata)]
        strata = stratum_of_cluster[cluster_idx]
        qids = np.array([f"{ds.name}-q{i:05d}" for i in range(n)])
        base = rng.beta(2.0, 2.0, n) + rng.normal(0, 0.1, ds.n_clusters)[cluster_idx]
        for arm, effect in arms.items():
            for retriever in retrievers:
                for metric in metrics[ds.name]:
                    value = np.clip(base + effect + rng.normal(0, noise, n), 0.0, 1.0)
                    frames.append(pd.DataFrame({
                        "dataset": ds.name, "arm": arm, "retriever": retriever, "qid": qids,
                        "cluster": clusters, "stratum": strata, "metric": metric, "value": value,
                    }))
    return pd.concat(frames, ignore_index=True)
