"""Known effects: the registered study replicated under true differences we choose, decided by the plan
itself.

Each registered test's paired differences (on exactly its registered questions) are centred so their
question-weighted mean is 0, then shifted by the test's true effect. A replicate redraws every dataset's
clusters with replacement at the registered size (within strata when the dataset is stratified, as the
bootstrap does), one draw shared by every test on the same clusters, so the tests of a family keep their
paired correlation (Holm's familywise error depends on it). Each replicate contrast runs the statistics of
`compare` and each family is decided by `decide_family`: the registered rules, margins, alpha and Holm.
What comes out is the plan's power and error rate as registered, not as assumed.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, TypeAlias

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.plan.model import FamilyPlan, Plan, TestPlan, derive_seed
from harness.stats.contrast import (
    MissingResultsError, PairedDifferences, ResultTable, as_results, contrast_of_pairs,
)
from harness.stats.families import PlannedContrast, decide_family
from harness.stats.rules import Rule, decided_labels, ruled
from harness.inference.simulate import redraw_clusters
from harness.stats.subsets import registered_pairs
from harness.stats.verdicts import DIFFERENT, MISSING

# bootstrap resamples and sign-flips per replicate contrast that `harness rehearse` uses unless told: on the
# flagship's primary and H3 families (400 replicates) every verdict share at 1,000 agreed with the registered
# 10,000 within 0.7 Monte Carlo SE, at a tenth of the cost (benchmarks/bench_replicates.py measures both)
REPLICATE_RESAMPLES = 1000

# a draw's key: dataset, stratum (None unstratified) and the clusters it redraws, in label order
DrawKey: TypeAlias = tuple[str, str | None, tuple[str, ...]]


@dataclass(frozen=True)
class VerdictShares:
    """One registered test over the replicates: the share of each verdict, and of the one stating the
    truth."""

    test: str
    family: str
    rule: str
    dataset: str
    margin: float | None
    effect: float  # the injected true difference, points
    shares: dict[str, float]  # verdict label -> share of replicates: the rule's labels always, others if seen
    truth: str | None  # the verdict that states the injected truth; None where none does (e.g. at the margin)
    correct: float | None  # share of replicates giving `truth`; None when `truth` is


@dataclass(frozen=True)
class FamilyError:
    """A family's familywise error under the null: the share of replicates calling any test whose true
    effect is 0 diff. None when no such test has rows."""

    family: str
    multiplicity: str
    alpha: float
    null_tests: int
    familywise_error: float | None


@dataclass(frozen=True)
class ReplicateSummary:
    study: str
    seed: int
    replicates: int
    resamples: int  # bootstrap resamples per replicate contrast
    max_flips: int  # sign-flips per replicate contrast
    tests: tuple[VerdictShares, ...]
    families: tuple[FamilyError, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"tests": [asdict(t) for t in self.tests],
                               "families": [asdict(f) for f in self.families]}

    def to_markdown(self) -> str:
        mc_se = 0.5 / math.sqrt(self.replicates)
        # a column per label the rules give; the others (no variation, too few clusters, missing): "other"
        labels = decided_labels()
        lines = [
            f"{self.replicates:,} replicates (seed {self.seed}), {self.resamples:,} resamples and "
            f"{self.max_flips:,} sign-flips per contrast; Monte Carlo SE of a share at most {mc_se:.3f}.",
            "",
            "| family | test | rule | true effect | " + " | ".join(labels) + " | other | correct |",
            "|---|---|---|---:|" + "---:|" * len(labels) + "---|---:|",
        ]
        for t in self.tests:
            cells = [_share(t.shares[label]) if label in t.shares else "" for label in labels]
            other = ", ".join(f"{label} {_share(s)}" for label, s in t.shares.items() if label not in labels)
            correct = "n/a" if t.correct is None else f"{_share(t.correct)} ({t.truth})"
            lines.append(f"| {t.family} | {t.test} | {t.rule} | {t.effect:+g} | " + " | ".join(cells)
                         + f" | {other} | {correct} |")
        lines += ["", "| family | multiplicity | alpha | tests at 0 | familywise error (any of them diff.) |",
                  "|---|---|---:|---:|---:|"]
        for f in self.families:
            error = "n/a" if f.familywise_error is None else _share(f.familywise_error)
            lines.append(f"| {f.family} | {f.multiplicity} | {f.alpha:g} | {f.null_tests} | {error} |")
        return "\n".join(lines) + "\n"


def replicate_verdicts(
    plan: Plan, table: pd.DataFrame | ResultTable, *, effects: dict[str, float], replicates: int, seed: int,
    resamples: int | None = None, progress: bool = False, workers: int = 1,
) -> ReplicateSummary:
    """Share of each verdict per registered test, and each family's familywise error under the null, over
    `replicates` simulated studies with the true effects `effects` (test id -> points; others 0).

    `resamples` sets the bootstrap resamples and the sign-flips of every replicate contrast (None: the
    plan's registered counts). Randomness comes only from `seed`; `workers` (processes: a replicate is many
    small NumPy calls, which threads serialise on the GIL) only spreads replicates, so the summary is the
    same for any number of them. Workers are spawned: a script calling this with workers > 1 needs its
    `if __name__ == "__main__":` guard.
    """
    effects, replicates, resamples, workers = _replicates_iv(
        plan, effects, replicates, seed, resamples, workers
    )
    max_flips = plan.max_flips if resamples is None else resamples
    resamples = plan.resamples if resamples is None else resamples
    results = as_results(table)
    pools = {t.test.id: _pool(plan, fam, t.test, t.rule, results, effects.get(t.test.id, 0.0))
             for fam in plan.families for t in ruled(fam).tests}
    draws = _draws(pools.values(), replicates, seed)
    verdicts = _run(plan, pools, draws, replicates, seed, resamples, max_flips, workers, progress)
    return ReplicateSummary(
        study=plan.study, seed=seed, replicates=replicates, resamples=resamples, max_flips=max_flips,
        tests=tuple(_test_shares(fam, pools[t.id], effects.get(t.id, 0.0), [v[t.id] for v in verdicts])
                    for fam in plan.families for t in fam.tests),
        families=tuple(_family_error(plan, fam, effects, pools, verdicts) for fam in plan.families),
    )


def _run(plan: Plan, pools: dict[str, _Pool], draws: dict[DrawKey, np.ndarray], replicates: int, seed: int,
         resamples: int, max_flips: int, workers: int, progress: bool) -> list[dict[str, str]]:
    """Every replicate's verdicts, in replicate order; with workers, contiguous chunks of replicates run in
    processes, each sent only its own rows of the draws."""
    from tqdm import tqdm

    bar = tqdm(total=replicates, desc="replicates", unit="replicate", disable=not progress)
    if workers == 1:
        out: list[dict[str, str]] = []
        for r in range(replicates):
            out += _replicate_range(plan, pools, {k: d[r : r + 1] for k, d in draws.items()}, r, 1, seed,
                                    resamples, max_flips)
            bar.update(1)
        bar.close()
        return out
    step = max(
        1, replicates // (workers * 20)
    )  # chunks small enough for a live bar, large enough to amortise
    chunks = {}
    # spawned, not forked: the parent may hold Arrow's threads, which a fork would copy mid-flight
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {
            pool.submit(
                _replicate_range,
                plan,
                pools,
                {k: d[start : start + step] for k, d in draws.items()},
                start,
                min(step, replicates - start),
                seed,
                resamples,
                max_flips,
            ): start
            for start in range(0, replicates, step)
        }
        try:
            for future in as_completed(futures):
                chunks[futures[future]] = future.result()
                bar.update(len(chunks[futures[future]]))
        except BaseException:  # a failed chunk (or Ctrl-C) stops the rest instead of waiting for them
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    bar.close()
    return [labels for start in sorted(chunks) for labels in chunks[start]]


def _replicate_range(plan: Plan, pools: dict[str, _Pool], draws: dict[DrawKey, np.ndarray], first: int,
                     count: int, seed: int, resamples: int, max_flips: int) -> list[dict[str, str]]:
    """Replicates first .. first + count - 1; `draws` holds their rows only."""
    return [
        _replicate(plan, pools, {k: d[i] for k, d in draws.items()}, first + i, seed, resamples, max_flips)
        for i in range(count)
    ]


@dataclass(frozen=True)
class _Group:
    """One stratum of a test's questions (the whole test when its dataset is not stratified): its
    clusters' questions lie contiguously in the pool's arrays, clusters in label order."""

    key: DrawKey  # which draw it takes: tests on the same clusters of the same stratum share one
    starts: np.ndarray  # first question of each cluster
    sizes: np.ndarray  # questions per cluster


@dataclass(frozen=True)
class _Pool:
    """A test's registered differences, centred and shifted by its true effect; None values: no rows."""

    family: FamilyPlan
    test: TestPlan
    rule: Rule
    values: np.ndarray | None
    strata: np.ndarray | None
    groups: tuple[_Group, ...]
    lacking: tuple[str, ...]
    # the arms' observed values in the same order: an arm constant on the registered questions stays constant
    # in every replicate, so the replicates read `no variation` exactly where the registered row does
    arms: dict[str, np.ndarray] | None = None


def _pool(plan: Plan, family: FamilyPlan, test: TestPlan, rule: Rule, results: ResultTable,
          effect: float) -> _Pool:
    try:
        pairs = registered_pairs(results, test)
    except MissingResultsError as e:
        return _Pool(family, test, rule, None, None, (), tuple(e.missing))
    stratified = plan.datasets[test.dataset].stratified
    by_stratum = pairs.strata if stratified else np.zeros(len(pairs.diffs), dtype=int)
    order = np.lexsort((pairs.clusters, by_stratum))  # stable: a cluster's questions stay in qid order
    diffs, clusters, strata, by_stratum = pairs.diffs[order], pairs.clusters[order], pairs.strata[order], \
        by_stratum[order]
    # the mean subtracted is the question-weighted one the statistics estimate
    values = diffs - diffs.mean() + effect
    first = np.flatnonzero(np.r_[True, (clusters[1:] != clusters[:-1]) | (by_stratum[1:] != by_stratum[:-1])])
    sizes = np.diff(np.r_[first, len(values)])
    groups = []
    for stratum in dict.fromkeys(by_stratum[first].tolist()):
        mine = by_stratum[first] == stratum
        key = (test.dataset, str(stratum) if stratified else None, tuple(clusters[first[mine]].tolist()))
        groups.append(_Group(key=key, starts=first[mine], sizes=sizes[mine]))
    arms = None if pairs.arms is None else {label: v[order] for label, v in pairs.arms.items()}
    return _Pool(family, test, rule, values, strata, tuple(groups), (), arms)


def _draws(pools: Iterable[_Pool], replicates: int, seed: int) -> dict[DrawKey, np.ndarray]:
    """One (replicates, clusters) draw per distinct set of clusters, from its own stream of `seed`: a test's
    draw depends on its clusters alone, never on which other tests the plan has or their order."""
    draws = {}
    for pool in pools:
        for group in pool.groups:
            if group.key not in draws:
                digest = hashlib.sha256(repr(group.key).encode("utf-8")).digest()
                words = np.frombuffer(digest[:16], dtype=np.uint32).tolist()
                rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *words])))
                k = len(group.sizes)
                draws[group.key] = redraw_clusters(rng, k, k, replicates)
    return draws


def _replicate(plan: Plan, pools: dict[str, _Pool], picks: Mapping[DrawKey, np.ndarray], r: int, seed: int,
               resamples: int, max_flips: int) -> dict[str, str]:
    """Replicate r (`picks`: its drawn clusters per draw key): every family's contrasts on the redrawn
    clusters, decided as registered -> test id: verdict."""
    verdicts = {}
    for family in plan.families:
        contrasts = []
        for test in family.tests:
            pool = pools[test.id]
            if pool.values is None:
                contrasts.append(PlannedContrast(test, pool.rule, None, lacking=pool.lacking))
                continue
            result = contrast_of_pairs(
                _redrawn(pool, picks), dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                metric=test.metric, seed=_contrast_seed(seed, r, derive_seed(family.seed, test.id)),
                resamples=resamples, max_flips=max_flips,
                margin=test.margin if pool.rule.computes_p_tost else None,
                stratified=plan.datasets[test.dataset].stratified, retriever_b=test.retriever_b)
            contrasts.append(PlannedContrast(test, pool.rule, result))
        for row in decide_family(plan, family, contrasts):
            verdicts[row.test] = row.verdict
    return verdicts


def _redrawn(pool: _Pool, picks: Mapping[DrawKey, np.ndarray]) -> PairedDifferences:
    """The test's questions in one replicate: every drawn cluster's questions, a cluster drawn twice counting
    as two clusters (labelled by its draw slot)."""
    positions, labels = [], []
    slot = 0
    for group in pool.groups:
        pick = picks[group.key]
        lengths = group.sizes[pick]
        # question j of the output belongs to draw i = repeat(i, lengths); its source is starts[pick[i]] +
        # offset
        firsts = np.cumsum(lengths) - lengths
        positions.append(np.repeat(group.starts[pick] - firsts, lengths) + np.arange(lengths.sum()))
        labels.append(np.repeat(np.arange(slot, slot + len(pick)), lengths))
        slot += len(pick)
    idx = np.concatenate(positions)
    assert pool.values is not None and pool.strata is not None  # _replicate redraws only a pool with rows
    return PairedDifferences(
        qids=np.arange(len(idx)),
        diffs=pool.values[idx],
        clusters=np.concatenate(labels),
        strata=pool.strata[idx],
        arms=None if pool.arms is None else {k: v[idx] for k, v in pool.arms.items()},
    )


def _contrast_seed(seed: int, r: int, test_seed: int) -> int:
    """The bootstrap and sign-flip seed of one replicate contrast: the test's registered seed, moved per
    replicate so replicates do not share resampling noise."""
    return int(np.random.SeedSequence([seed, r, test_seed]).generate_state(1, dtype=np.uint32)[0])


def _test_shares(family: FamilyPlan, pool: _Pool, effect: float, verdicts: list[str]) -> VerdictShares:
    test, rule = pool.test, pool.rule
    counts = dict.fromkeys(rule.verdicts, 0)
    for label in verdicts:
        counts[label] = counts.get(label, 0) + 1
    shares = {label: n / len(verdicts) for label, n in counts.items()}
    truth = None if rule.truth is None or shares.get(MISSING) == 1.0 else rule.truth(effect, test.margin)
    return VerdictShares(
        test=test.id,
        family=family.id,
        rule=test.rule,
        dataset=test.dataset,
        margin=test.margin,
        effect=effect,
        shares=shares,
        truth=truth,
        correct=None if truth is None else shares.get(truth, 0.0),
    )


def _family_error(plan: Plan, family: FamilyPlan, effects: dict[str, float], pools: dict[str, _Pool],
                  verdicts: list[dict[str, str]]) -> FamilyError:
    null = [t.id for t in family.tests if effects.get(t.id, 0.0) == 0 and pools[t.id].values is not None]
    error = None if not null else sum(any(v[t] == DIFFERENT for t in null) for v in verdicts) / len(verdicts)
    return FamilyError(family=family.id, multiplicity=family.multiplicity, alpha=plan.alpha,
                       null_tests=len(null), familywise_error=error)


def _replicates_iv(plan: Plan, effects: Mapping[str, float], replicates: int, seed: int,
                   resamples: int | None, workers: int) -> tuple[dict[str, float], int, int | None, int]:
    known = [t.id for f in plan.families for t in f.tests]
    unknown = [name for name in effects if name not in known]
    if unknown:
        raise InputError(f"no registered test {', '.join(map(repr, unknown))} to give a true effect "
                         f"(the plan's tests: {', '.join(known)})", path=plan.path)
    out = {}
    for name, value in effects.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not math.isfinite(value):
            raise InputError(
                f"the true effect of test {name!r} must be a finite number of points; got {value!r}"
            )
        out[name] = float(value)
    for what, value, least in (("replicates", replicates, 1), ("seed", seed, 0), ("workers", workers, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise InputError(f"`{what}` must be an integer >= {least}; got {value!r}")
    if resamples is not None and (isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer))
                                  or resamples < 2):
        raise InputError(f"`resamples` must be an integer >= 2 (or None: the plan's); got {resamples!r}")
    return out, int(replicates), None if resamples is None else int(resamples), int(workers)


def _share(share: float) -> str:
    return f"{100 * share:.1f}%"
