"""Planning numbers: cluster SE, minimum detectable difference per verdict row, clusters a TOST needs."""

from pathlib import Path

import numpy as np
import pytest

from harness.inference.bootstrap import cluster_bootstrap
from harness.stats.families import run_plan
from harness.plan.load import load_plan
from harness.inference.power import (
    cluster_standard_error, minimum_detectable_difference, tost_clusters_for_power,
)
from harness.inference.simulate import SyntheticDataset, clustered_sample, long_table
from harness.stats.tables import to_latex, to_markdown

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def test_singleton_clusters_give_the_textbook_standard_error():
    x = np.array([3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0])
    assert cluster_standard_error(x) == pytest.approx(np.std(x, ddof=1) / np.sqrt(len(x)))


def test_cluster_standard_error_matches_the_bootstrap_spread():
    rng = np.random.default_rng(7)
    values, clusters = clustered_sample(rng, n_clusters=80, mean_cluster_size=4, shift=2.0, cluster_sd=5.0,
                                        noise_sd=3.0)
    se = cluster_standard_error(values, clusters)
    boot = cluster_bootstrap(values, clusters, resamples=4000, seed=1)
    assert np.std(boot.replicates, ddof=1) == pytest.approx(se, rel=0.08)
    # treating the questions as independent understates it: the cluster effect is large here
    assert se > np.std(values, ddof=1) / np.sqrt(len(values)) * 1.3


def test_strata_are_summed_separately():
    values = np.array([1.0, 2.0, 3.0, 10.0, 12.0, 14.0])
    strata = np.array(["a", "a", "a", "b", "b", "b"])
    # within-stratum spread only: the a/b level difference is not sampling noise under stratified resampling
    expected = np.sqrt(sum(np.var(values[strata == s], ddof=1) * 3 for s in "ab")) / 6
    assert cluster_standard_error(values, None, strata) == pytest.approx(expected)
    assert cluster_standard_error(values) > cluster_standard_error(values, None, strata)


def test_minimum_detectable_difference_is_z_sum_times_se():
    assert minimum_detectable_difference(1.0, alpha=0.05) == pytest.approx(1.959964 + 0.841621, abs=1e-6)
    assert minimum_detectable_difference(2.0, alpha=0.01) == pytest.approx(
        2 * (2.575829 + 0.841621), abs=1e-5
    )
    with pytest.raises(ValueError, match="alpha"):
        minimum_detectable_difference(1.0, alpha=1.5)
    with pytest.raises(ValueError, match="se"):
        minimum_detectable_difference(float("nan"), alpha=0.05)


def test_every_verdict_row_carries_its_mdd_and_the_tables_show_it():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    table = long_table(np.random.default_rng(3), [SyntheticDataset("papers", 30, 3.0),
                                                   SyntheticDataset("docs", 40, 1.0, ("x", "y"))],
                       {a: 0.0 for a in ("S", "S+T", "E", "E-K", "CR", "F512c", "F256t", "P", "FL")},
                       ["hybrid", "minilm", "bm25"], {"papers": ["rec@512t"], "docs": ["prec@1024t"]})
    fam = run_plan(plan, table, only=["primary"])[0]
    for row in fam.rows:
        se = row.contrast.se_cluster
        assert row.mdd == pytest.approx(minimum_detectable_difference(se, alpha=plan.alpha))
        assert row.mdd > 0
    md = to_markdown(fam)
    assert "| MDD |" in md and f"{fam.rows[0].mdd:.2f}" in md
    assert "minimum detectable difference" in md
    assert f"{fam.rows[0].mdd:.2f}" in to_latex(fam)


def test_power_grows_with_clusters_and_the_answer_is_the_first_size_reaching_target():
    rng = np.random.default_rng(11)
    values, clusters = clustered_sample(rng, n_clusters=30, mean_cluster_size=3, shift=0.5, cluster_sd=8.0,
                                        noise_sd=10.0)
    result = tost_clusters_for_power(values, clusters, margin=5.0, simulations=400, seed=4)
    powers = [p.power for p in result.curve]
    assert powers[-1] > powers[0]
    assert result.n_clusters is not None
    first = next(p.n_clusters for p in result.curve if p.power >= 0.8)
    assert result.n_clusters == first
    # a wider margin needs fewer clusters; a true difference near the margin needs more
    wide = tost_clusters_for_power(values, clusters, margin=8.0, simulations=400, seed=4)
    assert wide.n_clusters < result.n_clusters
    near = tost_clusters_for_power(values, clusters, margin=5.0, true_difference=3.0, simulations=400, seed=4)
    assert near.n_clusters is None or near.n_clusters > result.n_clusters
    again = tost_clusters_for_power(values, clusters, margin=5.0, simulations=400, seed=4)
    assert again == result


def test_power_rejects_bad_inputs():
    with pytest.raises(ValueError, match="margin"):
        tost_clusters_for_power([1.0, 2.0, 3.0], margin=0, seed=0)
    with pytest.raises(ValueError, match="at least 2 clusters"):
        tost_clusters_for_power([1.0, 2.0], ["a", "a"], margin=1, seed=0)
