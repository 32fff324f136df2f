import itertools

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from harness.inference.bootstrap import cluster_bootstrap
from harness.inference.holm import holm
from harness.inference.signflip import cluster_sign_flip
from harness.inference.simulate import clustered_sample
from harness.inference.tost import tost
from harness.stats.verdicts import tost_verdict, two_sided_verdict


# --- TOST ---

def test_tost_below_005_exactly_when_the_90_ci_lies_inside_the_margins():
    rng = np.random.default_rng(8)
    checked = 0
    for study in range(12):
        x, c = clustered_sample(
            rng,
            n_clusters=40,
            mean_cluster_size=3,
            shift=rng.uniform(-3, 3),
            cluster_sd=3,
            noise_sd=5,
            skew=bool(study % 2),
        )
        boot = cluster_bootstrap(x, c, resamples=4000, seed=study)
        lo, hi = boot.ci90_bca
        for margin in np.linspace(0.2, 8, 40):
            if min(abs(margin + lo), abs(margin - hi)) < 1e-6:
                continue  # exactly on a bound: floating point decides
            inside = -margin < lo and hi < margin
            assert (tost(boot, margin=margin).p_tost < 0.05) == inside
            checked += 1
    assert checked > 400


def test_tost_one_sided_p_values_invert_the_bca_bounds():
    x = np.random.default_rng(2).normal(0.0, 4.0, 120)
    x -= x.mean() - 0.1
    boot = cluster_bootstrap(x, resamples=10_000, seed=3)
    lo90, hi90 = boot.ci90_bca
    assert lo90 < 0 < hi90
    # at margin = -(lower 90% bound) the lower one-sided p is 0.05; likewise above, and 0.025 at the 95% bound
    assert tost(boot, margin=-lo90).p_lower == pytest.approx(0.05, abs=1e-6)
    r = tost(boot, margin=hi90)
    assert r.p_upper == pytest.approx(0.05, abs=1e-6)
    assert tost(boot, margin=boot.ci95_bca[1]).p_upper == pytest.approx(0.025, abs=1e-6)
    ps = [tost(boot, margin=m).p_tost for m in (1, 2, 3, 4, 6)]
    assert ps == sorted(ps, reverse=True)  # a wider margin is never harder to meet


def test_tost_on_degenerate_replicates_follows_the_point_interval():
    boot = cluster_bootstrap(np.full(10, 3.0), resamples=100, seed=0)
    assert tost(boot, margin=4).p_tost == 0.0
    assert tost(boot, margin=3).p_tost == 1.0  # the interval (3, 3) is not strictly inside (-3, 3)


@pytest.mark.parametrize("margin", [0, -1, float("inf"), "5", True])
def test_tost_rejects_bad_margins(margin):
    boot = cluster_bootstrap([1.0, 2.0, 3.0], resamples=10, seed=0)
    with pytest.raises(ValueError, match="`margin` must be a positive number"):
        tost(boot, margin=margin)


# --- sign-flip ---

def _brute_force_p(values, clusters):
    labels = sorted(set(clusters))
    sums = np.array([sum(v for v, c in zip(values, clusters) if c == lab) for lab in labels])
    observed = abs(sums.sum())
    stats = [abs(np.dot(signs, sums)) for signs in itertools.product([1, -1], repeat=len(sums))]
    return sum(s >= observed - 1e-9 for s in stats) / len(stats)


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_matches_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    n_clusters = 3 + seed * 2
    x, c = clustered_sample(
        rng, n_clusters=n_clusters, mean_cluster_size=2, shift=0.8, cluster_sd=1, noise_sd=1
    )
    r = cluster_sign_flip(x, c, max_flips=10_000, seed=0)
    assert r.exact and r.n_flips == 2**n_clusters
    assert r.p_value == pytest.approx(_brute_force_p(list(x), list(c)), abs=1e-12)


def test_monte_carlo_sign_flip_is_close_to_exact_and_uses_the_plus_one_rule():
    rng = np.random.default_rng(1)
    x, c = clustered_sample(rng, n_clusters=14, mean_cluster_size=2, shift=0.7, cluster_sd=1, noise_sd=2)
    exact = cluster_sign_flip(x, c, max_flips=2**14, seed=0)
    mc = cluster_sign_flip(x, c, max_flips=10_000, seed=0)
    assert exact.exact and not mc.exact and mc.n_flips == 10_000
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.015)
    hits = round(mc.p_value * 10_001) - 1
    assert mc.p_value == pytest.approx((1 + hits) / 10_001)


def test_sign_flip_is_bit_identical_across_batches_and_all_zero_gives_p_one():
    rng = np.random.default_rng(2)
    x, c = clustered_sample(rng, n_clusters=40, mean_cluster_size=2, shift=0.2, cluster_sd=1, noise_sd=2)
    assert cluster_sign_flip(x, c, seed=5) == cluster_sign_flip(x, c, seed=5, batch=13)
    assert cluster_sign_flip(np.zeros(30), np.arange(30) // 2, seed=0).p_value == 1.0


def test_sign_flip_rejects_bad_options():
    with pytest.raises(ValueError, match="`max_flips` must be a positive integer"):
        cluster_sign_flip([1.0, 2.0], max_flips=0, seed=0)
    with pytest.raises(ValueError, match="`seed` must be a non-negative integer"):
        cluster_sign_flip([1.0, 2.0], seed=None)


# --- Holm ---

@pytest.mark.parametrize("seed", range(6))
def test_holm_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.2, 7)
    p[2] = p[5]  # a tie
    expected = multipletests(p, method="holm")[1]  # statsmodels' default would be Holm-Sidak
    assert np.allclose(holm(p), expected, rtol=0, atol=1e-15)


def test_holm_is_monotone_and_capped():
    adjusted = holm([0.04, 0.01, 0.5, 0.03])
    assert adjusted.tolist() == pytest.approx([0.09, 0.04, 0.5, 0.09])
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("bad", [[0.1, 1.2], [float("nan")], [[0.1]]])
def test_holm_rejects_bad_p_values(bad):
    with pytest.raises(ValueError, match="`pvalues` must"):
        holm(bad)


# --- verdicts ---

@pytest.mark.parametrize(
    "p, ci95, label, small",
    [
        (0.01, (-1.0, 2.0), "equiv.", False),
        (0.01, (0.5, 2.0), "equiv.", True),
        (0.20, (0.5, 9.0), "diff.", False),
        (0.20, (-9.0, -0.1), "diff.", False),
        (0.20, (-1.0, 8.0), "incon.", False),
        (0.05, (-1.0, 1.0), "incon.", False),  # p must be strictly below alpha
    ],
)
def test_tost_verdicts(p, ci95, label, small):
    v = tost_verdict(p_tost=p, ci95=ci95, alpha=0.05)
    assert (v.label, v.small_difference_within_margin) == (label, small)


def test_two_sided_verdicts_with_and_without_sign_flip():
    assert two_sided_verdict(ci95=(0.1, 2.0), alpha=0.05).label == "diff."
    assert two_sided_verdict(ci95=(-0.1, 2.0), alpha=0.05).label == "n.d."
    assert (
        two_sided_verdict(ci95=(0.1, 2.0), alpha=0.05, p_signflip=0.2, signflip_required=True).label == "n.d."
    )
    assert (
        two_sided_verdict(ci95=(0.1, 2.0), alpha=0.05, p_signflip=0.01, signflip_required=True).label
        == "diff."
    )
    with pytest.raises(ValueError, match="`p_signflip` is required"):
        two_sided_verdict(ci95=(0.1, 2.0), alpha=0.05, signflip_required=True)
