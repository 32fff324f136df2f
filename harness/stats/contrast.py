"""One paired contrast A - B from the long table: pair by qid, bootstrap, sign-flip, optional TOST."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.errors import HarnessError, InputError
from harness.inference.bootstrap import cluster_bootstrap
from harness.inference.power import cluster_standard_error
from harness.inference.signflip import cluster_sign_flip
from harness.inference.t_tost import t_tost
from harness.inference.tost import tost
from harness.seeded_draw import seeded_sample

POINTS = 100.0  # metric values are in [0, 1]; differences are reported in points
# spreads at or below this many points are float noise (e.g. (0.3 - 0.1) vs (0.5 - 0.3)), not variation
NO_VARIATION_TOL = 1e-9


class MissingResultsError(HarnessError):
    """No per-question rows at all for an arm (or the selection); `missing` says which."""

    def __init__(self, missing: list[str]):
        super().__init__("no per-question results for " + "; ".join(missing))
        self.missing = missing


@dataclass(frozen=True)
class PairedDifferences:
    """A - B in points, one entry per question, sorted by qid."""

    qids: np.ndarray
    diffs: np.ndarray
    clusters: np.ndarray
    strata: np.ndarray
    # each arm's values in points, by its label in the contrast, for the constant-arm check (None: only the
    # differences are known)
    arms: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class ContrastResult:
    """The `harness compare` record (docs/design.md, Output contracts); intervals and estimate in points."""

    dataset: str
    a: str
    b: str
    retriever: str
    metric: str
    n_questions: int
    n_clusters: int
    n_strata: int
    estimate: float
    ci90_bca: tuple[float, float]
    ci95_bca: tuple[float, float]
    ci90_percentile: tuple[float, float]
    ci95_percentile: tuple[float, float]
    z0: float
    acceleration: float
    resamples: int
    seed: int
    p_signflip: float
    signflip_exact: bool
    signflip_flips: int
    se_cluster: float  # cluster standard error of the estimate, in points (harness.inference.power)
    margin: float | None = None
    p_tost: float | None = None
    # the t-TOST sensitivity column (harness.inference.t_tost), beside p_tost; never a decision input
    ci90_t: tuple[float, float] | None = None
    p_tost_t: float | None = None
    t_df: int | None = None
    no_variation: str | None = None  # what did not vary (harness.stats.verdicts.NO_VARIATION), else None
    retriever_b: str | None = None  # a cross-retriever contrast: B's retriever (A's is `retriever`)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.retriever_b is None:
            del out["retriever_b"]
        for key in INTERVALS:
            out[key] = None if out[key] is None else list(out[key])
        if self.margin is None:
            del out["margin"], out["p_tost"], out["ci90_t"], out["p_tost_t"], out["t_df"]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> ContrastResult:
        """The contrast inside a written record (a family's row carries every field); `where` names the record
        in errors. Fields the record lacks take their defaults (statistics written before they existed)."""
        required = [f.name for f in fields(cls) if f.default is MISSING]
        absent = [k for k in required if k not in data]
        if absent:
            raise InputError(f"{where}: not a contrast; missing {', '.join(absent)}")
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        for key in INTERVALS:
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)


INTERVALS = ("ci90_bca", "ci95_bca", "ci90_percentile", "ci95_percentile", "ci90_t")


class ResultTable:
    """The long table with its row positions grouped once by (dataset, arm, retriever, metric).

    Masking a large Arrow-backed frame per contrast dominates run time; a family reuses this index.
    """

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.qid = frame["qid"].to_numpy(dtype=object)
        self.cluster = frame["cluster"].to_numpy(dtype=object)
        self.stratum = frame["stratum"].to_numpy(dtype=object)
        self.value = frame["value"].to_numpy(dtype=float)
        grouped = frame.groupby(["dataset", "arm", "retriever", "metric"], sort=False).indices
        self._groups: dict[tuple[str, ...], np.ndarray] = {
            tuple(map(str, key)): pos for key, pos in grouped.items()}
        self._clusters: dict[tuple[str, tuple[str, ...] | None], list[str]] = {}

    def positions(self, dataset: str, arm: str, retriever: str, metric: str) -> np.ndarray:
        return self._groups.get((dataset, arm, retriever, metric), np.empty(0, dtype=np.intp))

    def clusters(self, dataset: str, strata: set[str] | None = None) -> list[str]:
        """Sorted clusters of a dataset over every arm (optionally only questions of these strata); computed
        once per (dataset, strata), since every subset test of a family draws from it."""
        key = (dataset, None if strata is None else tuple(sorted(strata)))
        if key not in self._clusters:
            parts = [pos for (d, *_), pos in self._groups.items() if d == dataset]
            pos = np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)
            if strata is not None:
                pos = pos[np.isin(self.stratum[pos].astype(str), list(strata))]
            self._clusters[key] = sorted({str(c) for c in set(self.cluster[pos].tolist())})
        return list(self._clusters[key])

    def clusters_of(self, dataset: str, arm: str, retriever: str, metric: str) -> set[str]:
        return {str(c) for c in self.cluster[self.positions(dataset, arm, retriever, metric)]}


def as_results(table: pd.DataFrame | ResultTable) -> ResultTable:
    return table if isinstance(table, ResultTable) else ResultTable(table)


def missing_for(table: pd.DataFrame | ResultTable, *, dataset: str, a: str, b: str, retriever: str,
                metric: str, retriever_b: str | None = None) -> list[str]:
    """Human-readable list of the arms with no rows for this contrast (empty when both are present)."""
    results = as_results(table)
    return [
        f"arm {arm} on {dataset} under {r} ({metric})"
        for arm, r in ((a, retriever), (b, retriever_b or retriever))
        if len(results.positions(dataset, arm, r, metric)) == 0
    ]


def paired_differences(
    table: pd.DataFrame | ResultTable, *, dataset: str, a: str, b: str, retriever: str, metric: str,
    subset_clusters: set[str] | None = None,
    strata: set[str] | None = None,
    retriever_b: str | None = None,
) -> PairedDifferences:
    """Pair A and B by qid; their qid sets (after the optional cluster and stratum subsets) must match.
    With `retriever_b`, B is read under that retriever (the same arm may then stand on both sides)."""
    results = as_results(table)
    missing = missing_for(results, dataset=dataset, a=a, b=b, retriever=retriever, metric=metric,
                          retriever_b=retriever_b)
    if missing:
        raise MissingResultsError(missing)
    what = f"dataset {dataset}, retriever {retriever}" + (f" vs {retriever_b}" if retriever_b else "") + \
        f", metric {metric}"
    sides = []
    for arm, r in ((a, retriever), (b, retriever_b or retriever)):
        pos = results.positions(dataset, arm, r, metric)
        if subset_clusters is not None:
            pos = pos[np.isin(results.cluster[pos].astype(str), list(subset_clusters))]
        if strata is not None:
            pos = pos[np.isin(results.stratum[pos].astype(str), list(strata))]
        pos = pos[np.argsort(results.qid[pos], kind="stable")]
        qids = results.qid[pos]
        repeated = qids[1:] == qids[:-1]
        if repeated.any():
            raise HarnessError(
                f"arm {arm}, {what}: question {qids[int(np.argmax(repeated))]!r} appears more than once"
            )
        sides.append(pos)
    pa, pb = sides
    qa, qb = results.qid[pa], results.qid[pb]
    if len(qa) != len(qb) or not np.array_equal(qa, qb):
        only_a = sorted(set(qa) - set(qb))
        only_b = sorted(set(qb) - set(qa))
        raise HarnessError(
            f"{what}: arms {a} and {b} do not have the same questions ({len(qa)} vs {len(qb)}); "
            f"only in {a}: {_some(only_a)}; only in {b}: {_some(only_b)}"
        )
    if len(qa) == 0:
        raise MissingResultsError([f"questions of the selected cluster subset on {dataset} ({metric})"])
    for col, values in (("cluster", results.cluster), ("stratum", results.stratum)):
        differs = values[pa] != values[pb]
        if differs.any():
            i = int(np.argmax(differs))
            raise HarnessError(f"{what}: question {qa[i]!r} has {col} {values[pa][i]!r} "
                               f"in arm {a} but {values[pb][i]!r} in arm {b}")
    diffs = (results.value[pa] - results.value[pb]) * POINTS
    labels = (f"{a} ({retriever})", f"{b} ({retriever_b})") if retriever_b else (a, b)
    return PairedDifferences(
        qids=qa,
        diffs=diffs,
        clusters=results.cluster[pa].astype(str),
        strata=results.stratum[pa].astype(str),
        arms={labels[0]: results.value[pa] * POINTS, labels[1]: results.value[pb] * POINTS},
    )


def no_variation(pairs: PairedDifferences, *, stratified: bool = True) -> str | None:
    """What did not vary, in words, or None: an arm constant over the contrast's questions (floor at 0,
    ceiling at 100 points), else every paired difference identical, else (`stratified`, as the bootstrap
    resamples) no stratum's differences varying: each stratum is resampled on its own, so the interval
    collapses to the estimate however far apart the strata lie."""
    n = len(pairs.diffs)
    constant = []
    for label, values in (pairs.arms or {}).items():
        if np.ptp(values) <= NO_VARIATION_TOL:
            value = float(values[0])
            bound = " (floor)" if abs(value) <= NO_VARIATION_TOL else \
                " (ceiling)" if abs(value - POINTS) <= NO_VARIATION_TOL else ""
            constant.append(f"arm {label} is {value:.2f} points on all {n} questions{bound}")
    if constant:
        return "; ".join(constant)
    if np.ptp(pairs.diffs) <= NO_VARIATION_TOL:
        return f"every paired difference is {float(pairs.diffs[0]):+.2f} points ({n} questions)"
    if stratified:
        by_stratum = {s: pairs.diffs[pairs.strata == s] for s in sorted(set(pairs.strata.tolist()))}
        if len(by_stratum) > 1 and all(np.ptp(d) <= NO_VARIATION_TOL for d in by_stratum.values()):
            return "paired differences do not vary within any stratum: " + ", ".join(
                f"{float(d[0]):+.2f} points in stratum {s!r} ({len(d)} questions)"
                for s, d in by_stratum.items()
            )
    return None


def sample_clusters(table: pd.DataFrame | ResultTable, *, dataset: str, n_clusters: int, seed: int,
                    strata: set[str] | None = None) -> set[str]:
    """The registered subset rule: random.Random(seed).sample(sorted(clusters of the dataset), n)."""
    clusters = as_results(table).clusters(dataset, strata)
    if n_clusters > len(clusters):
        raise HarnessError(f"dataset {dataset}: subset asks for {n_clusters} clusters but only "
                           f"{len(clusters)} exist")
    return set(seeded_sample(clusters, n_clusters, seed))


def compare(
    table: pd.DataFrame | ResultTable,
    *,
    dataset: str,
    a: str,
    b: str,
    retriever: str,
    metric: str,
    seed: int,
    resamples: int = 10_000,
    max_flips: int = 10_000,
    margin: float | None = None,
    stratified: bool = True,
    subset_clusters: set[str] | None = None,
    strata: set[str] | None = None,
    retriever_b: str | None = None,
) -> ContrastResult:
    pairs = paired_differences(table, dataset=dataset, a=a, b=b, retriever=retriever, metric=metric,
                               subset_clusters=subset_clusters, strata=strata, retriever_b=retriever_b)
    return contrast_of_pairs(pairs, dataset=dataset, a=a, b=b, retriever=retriever, metric=metric, seed=seed,
                             resamples=resamples, max_flips=max_flips, margin=margin, stratified=stratified,
                             retriever_b=retriever_b)


def contrast_of_pairs(
    pairs: PairedDifferences,
    *,
    dataset: str,
    a: str,
    b: str,
    retriever: str,
    metric: str,
    seed: int,
    resamples: int = 10_000,
    max_flips: int = 10_000,
    margin: float | None = None,
    stratified: bool = True,
    retriever_b: str | None = None,
) -> ContrastResult:
    """The statistics of `compare` on differences already paired (also the known-effects replicates'
    simulated ones): bootstrap, sign-flip, cluster SE, whether anything varied and, given a margin, the
    bootstrap TOST and the t-TOST beside it."""
    strata = pairs.strata if stratified else None
    boot = cluster_bootstrap(pairs.diffs, pairs.clusters, strata, resamples=resamples, seed=seed)
    flip = cluster_sign_flip(pairs.diffs, pairs.clusters, max_flips=max_flips, seed=seed)
    se = cluster_standard_error(pairs.diffs, pairs.clusters, strata)
    p_tost = None if margin is None else tost(boot, margin=margin).p_tost
    t = (
        None
        if margin is None
        else t_tost(boot.estimate, se, n_clusters=boot.n_clusters, n_strata=boot.n_strata, margin=margin)
    )
    return ContrastResult(
        dataset=dataset, a=a, b=b, retriever=retriever, metric=metric,
        n_questions=boot.n_questions, n_clusters=boot.n_clusters, n_strata=boot.n_strata,
        estimate=boot.estimate, ci90_bca=boot.ci90_bca, ci95_bca=boot.ci95_bca,
        ci90_percentile=boot.ci90_percentile, ci95_percentile=boot.ci95_percentile,
        z0=boot.z0, acceleration=boot.acceleration, resamples=boot.resamples, seed=seed,
        p_signflip=flip.p_value, signflip_exact=flip.exact, signflip_flips=flip.n_flips,
        se_cluster=se, margin=None if margin is None else float(margin), p_tost=p_tost,
        ci90_t=None if t is None else t.ci90, p_tost_t=None if t is None else t.p_tost,
        t_df=None if t is None else t.df, no_variation=no_variation(pairs, stratified=stratified),
        retriever_b=retriever_b,
    )


def _some(items: Sequence[object], limit: int = 5) -> str:
    if not items:
        return "none"
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")
