import numpy as np
import pytest
from scipy import stats

from harness.inference.bootstrap import bca_quantile_levels, cluster_bootstrap, cluster_totals
from harness.inference.simulate import clustered_sample


def _mc_tol(reps):
    # a few Monte Carlo standard errors of a tail quantile at 10,000 resamples, with headroom
    return 0.15 * np.std(reps)


@pytest.mark.parametrize("skew", [False, True])
def test_singleton_clusters_agree_with_scipy_bca(skew):
    rng = np.random.default_rng(11 + skew)
    x = rng.exponential(10, 150) - 10 if skew else rng.normal(2, 10, 150)
    ours = cluster_bootstrap(x, resamples=10_000, seed=5)
    for level, ci in ((0.90, ours.ci90_bca), (0.95, ours.ci95_bca)):
        ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=10_000, confidence_level=level, rng=7)
        assert ci[0] == pytest.approx(ref.confidence_interval.low, abs=_mc_tol(ours.replicates))
        assert ci[1] == pytest.approx(ref.confidence_interval.high, abs=_mc_tol(ours.replicates))
    assert ours.estimate == pytest.approx(x.mean(), rel=1e-12)
    assert ours.n_clusters == ours.n_questions == 150


def test_clusters_agree_with_scipy_ratio_of_cluster_totals():
    rng = np.random.default_rng(3)
    x, clusters = clustered_sample(rng, n_clusters=60, mean_cluster_size=3.5, shift=1.0, cluster_sd=4,
                                   noise_sd=6, skew=True)
    ours = cluster_bootstrap(x, clusters, resamples=10_000, seed=9)
    sums = np.bincount(clusters, weights=x)
    sizes = np.bincount(clusters).astype(float)

    def ratio(s, n, axis=-1):
        return s.sum(axis=axis) / n.sum(axis=axis)

    ref = stats.bootstrap((sums, sizes), ratio, paired=True, vectorized=True, method="BCa",
                          n_resamples=10_000, confidence_level=0.95, rng=1)
    assert ours.ci95_bca[0] == pytest.approx(ref.confidence_interval.low, abs=_mc_tol(ours.replicates))
    assert ours.ci95_bca[1] == pytest.approx(ref.confidence_interval.high, abs=_mc_tol(ours.replicates))
    # acceleration is deterministic: check it against a plain leave-one-cluster-out jackknife
    loo = np.array([(sums.sum() - sums[i]) / (sizes.sum() - sizes[i]) for i in range(len(sums))])
    d = loo.mean() - loo
    assert ours.acceleration == pytest.approx((d**3).sum() / (6 * ((d**2).sum()) ** 1.5), rel=1e-9)
    assert ours.n_clusters == 60 and ours.n_questions == len(x)


def test_percentile_interval_is_the_plain_replicate_quantile():
    x = np.random.default_rng(0).normal(0, 1, 80)
    r = cluster_bootstrap(x, resamples=2000, seed=1)
    assert r.ci95_percentile == pytest.approx(tuple(np.quantile(r.replicates, [0.025, 0.975])))
    # each interval is the quantile of its own two levels to the bit, however many are taken in one call
    for level, bca, pct in ((0.90, r.ci90_bca, r.ci90_percentile), (0.95, r.ci95_bca, r.ci95_percentile)):
        tails = [(1 - level) / 2, 1 - (1 - level) / 2]
        assert pct == tuple(np.quantile(r.replicates, tails))
        assert bca == tuple(np.quantile(r.replicates, bca_quantile_levels(r.z0, r.acceleration, tails)))
    assert r.ci90_percentile[0] > r.ci95_percentile[0] and r.ci90_percentile[1] < r.ci95_percentile[1]


def test_stratified_resampling_keeps_stratum_sizes():
    # stratum "a" clusters are all 0, stratum "b" all 1: the replicate mean is the share of "b" questions,
    # constant only if every replicate keeps each stratum's size
    values = np.array([0.0] * 7 + [1.0] * 3)
    clusters = np.arange(10)
    strata = np.array(["a"] * 7 + ["b"] * 3)
    r = cluster_bootstrap(values, clusters, strata, resamples=500, seed=2)
    assert np.all(r.replicates == pytest.approx(0.3))
    assert r.degenerate and r.ci95_bca == (r.estimate, r.estimate)
    unstratified = cluster_bootstrap(values, clusters, resamples=500, seed=2)
    assert np.ptp(unstratified.replicates) > 0.3


def test_all_differences_equal_give_a_point_interval():
    r = cluster_bootstrap(np.full(40, 2.5), np.arange(40) // 4, resamples=1000, seed=0)
    assert r.degenerate
    assert r.ci90_bca == r.ci95_bca == r.ci90_percentile == r.ci95_percentile == (2.5, 2.5)
    assert (r.z0, r.acceleration) == (0.0, 0.0)


def test_one_cluster_is_degenerate_and_two_clusters_have_zero_acceleration():
    one = cluster_bootstrap([1.0, 3.0, 8.0], ["p", "p", "p"], resamples=200, seed=0)
    assert one.degenerate and one.ci95_bca == (4.0, 4.0) and one.acceleration == 0.0
    two = cluster_bootstrap([1.0, 3.0, 8.0], ["p", "p", "q"], resamples=200, seed=0)
    assert not two.degenerate and two.acceleration == 0.0
    assert two.ci95_percentile[0] >= 2.0 and two.ci95_percentile[1] <= 8.0


def test_reruns_are_bit_identical_and_do_not_depend_on_batch_size():
    rng = np.random.default_rng(4)
    x, clusters = clustered_sample(rng, n_clusters=30, mean_cluster_size=3, shift=0, cluster_sd=1, noise_sd=2)
    strata = clusters % 3
    a = cluster_bootstrap(x, clusters, strata, resamples=1000, seed=42)
    b = cluster_bootstrap(x, clusters, strata, resamples=1000, seed=42, batch=7)
    c = cluster_bootstrap(x, clusters, strata, resamples=1000, seed=42, batch=1000)
    assert np.array_equal(a.replicates, b.replicates) and np.array_equal(a.replicates, c.replicates)
    assert a == b == c
    assert not np.array_equal(a.replicates, cluster_bootstrap(x, clusters, strata, resamples=1000,
                                                              seed=43).replicates)


def test_cluster_labels_are_not_order_sensitive():
    x = np.array([1.0, 5.0, 2.0, 7.0, 3.0, 9.0])
    c = np.array(["b", "a", "b", "c", "a", "c"])
    perm = np.array([5, 3, 1, 0, 2, 4])
    assert cluster_bootstrap(x, c, resamples=300, seed=1) == cluster_bootstrap(
        x[perm], c[perm], resamples=300, seed=1
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(values=[1.0, 2.0], resamples=1), "`resamples` must be an integer >= 2"),
        (dict(values=[1.0, 2.0], seed=-1), "`seed` must be a non-negative integer"),
        (dict(values=[1.0, 2.0], seed=1.5), "`seed` must be a non-negative integer"),
        (
            dict(
                values=[],
            ),
            "`values` must be a non-empty 1-D array",
        ),
        (dict(values=[1.0, float("nan")]), "`values` must be finite; position 1"),
        (dict(values=[1.0, 2.0], clusters=[1]), "`clusters` must have one label per value"),
        (
            dict(values=[1.0, 2.0], clusters=[1, 1], strata=["x", "y"]),
            "cluster 1 has questions in more than one",
        ),
        (dict(values=[1.0, 2.0], batch=0), "`batch` must be a positive integer"),
    ],
)
def test_bad_inputs_name_the_parameter(kwargs, match):
    kwargs = {"seed": 0, **kwargs}
    values = kwargs.pop("values")
    with pytest.raises(ValueError, match=match):
        cluster_bootstrap(values, **kwargs)


@pytest.mark.parametrize("labels", [np.array(["a", "a", "b", "b"], dtype=object), np.array([1, 1, 2, 2])])
def test_a_cluster_in_two_strata_is_named_whatever_the_label_type(labels):
    with pytest.raises(
        ValueError, match=r"cluster .?a.? has questions in more than one stratum|cluster 1 has"
    ):
        cluster_bootstrap([0.1, 0.2, 0.3, 0.4], labels, ["x", "y", "x", "x"], resamples=10, seed=1)


def _one_by_one_replicates(values, clusters, strata, resamples, seed):
    # the definition the batched draws must reproduce: replicate after replicate, each stratum's generator
    # draws its clusters' positions one replicate at a time
    data = cluster_totals(values, clusters, strata)
    seeds = np.random.SeedSequence(seed).spawn(len(data.strata))
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    out = []
    for _ in range(resamples):
        total = count = 0.0
        for gen, members in zip(gens, data.strata):
            pick = (gen.random(len(members)) * len(members)).astype(np.intp)
            total += data.sums[members][pick].sum()
            count += data.sizes[members][pick].sum()
        out.append(total / count)
    return np.sort(out)


@pytest.mark.parametrize("batch", [None, 1, 3, 64])
@pytest.mark.parametrize("one_per_cluster", [False, True])
def test_batched_replicates_are_the_one_by_one_draws_bit_for_bit(batch, one_per_cluster):
    rng = np.random.default_rng(8)
    x, clusters = clustered_sample(rng, n_clusters=40, mean_cluster_size=2.5, shift=0.5, cluster_sd=2,
                                   noise_sd=5, skew=True)
    if one_per_cluster:  # every cluster of every stratum one question: counts are not drawn
        clusters = np.arange(len(x))
    strata = clusters % 3
    got = cluster_bootstrap(x, clusters, strata, resamples=300, seed=17, batch=batch)
    assert np.array_equal(got.replicates, _one_by_one_replicates(x, clusters, strata, 300, 17))
