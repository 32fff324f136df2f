import numpy as np
import pytest

from harness.errors import HarnessError
from harness.stats.contrast import MissingResultsError, compare, paired_differences, sample_clusters
from harness.inference.simulate import SyntheticDataset, long_table


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    return long_table(rng, [SyntheticDataset("docs", 40, 1.0, ("angular", "laravel", "yolo"))],
                      {"A": 0.05, "B": 0.0}, ["hybrid"], {"docs": ["prec@1024t"]})


KEY = dict(dataset="docs", a="A", b="B", retriever="hybrid", metric="prec@1024t")


def test_estimate_is_the_mean_paired_difference_in_points(table):
    a = table[table.arm == "A"].set_index("qid")["value"]
    b = table[table.arm == "B"].set_index("qid")["value"]
    r = compare(table, seed=1, resamples=500, margin=4, **KEY)
    assert r.estimate == pytest.approx(100 * (a - b.loc[a.index]).mean(), rel=1e-12)
    assert (r.n_questions, r.n_clusters, r.n_strata) == (40, 40, 3)
    assert r.ci90_bca[0] <= r.estimate <= r.ci90_bca[1]
    out = r.to_json()
    for field in (
        "dataset",
        "a",
        "b",
        "retriever",
        "metric",
        "n_questions",
        "n_clusters",
        "estimate",
        "ci90_bca",
        "ci95_bca",
        "ci90_percentile",
        "ci95_percentile",
        "z0",
        "acceleration",
        "resamples",
        "seed",
        "p_signflip",
        "margin",
        "p_tost",
    ):
        assert field in out
    assert "margin" not in compare(table, seed=1, resamples=500, **KEY).to_json()


def test_pairing_is_by_qid_not_row_order(table):
    shuffled = table.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert compare(shuffled, seed=2, resamples=300, **KEY) == compare(table, seed=2, resamples=300, **KEY)


def test_mismatched_question_sets_are_an_error(table):
    dropped = table.drop(table[(table.arm == "B")].index[:2])
    with pytest.raises(
        HarnessError,
        match=r"arms A and B do not have the same questions \(40 vs 38\); only in A: docs-q00000, "
              r"docs-q00001; only in B: none",
    ):
        paired_differences(dropped, **KEY)


def test_missing_arm_and_inconsistent_clusters_are_errors(table):
    with pytest.raises(
        MissingResultsError, match=r"no per-question results for arm C on docs under hybrid \(prec@1024t\)"
    ):
        paired_differences(table, **{**KEY, "b": "C"})
    moved = table.copy()
    moved.loc[(moved.arm == "B") & (moved.qid == "docs-q00003"), "cluster"] = "elsewhere"
    with pytest.raises(
        HarnessError,
        match=r"question 'docs-q00003' has cluster 'docs-c0003' in arm A but 'elsewhere' in arm B",
    ):
        paired_differences(moved, **KEY)


def test_cluster_subset_is_a_seeded_sample_of_sorted_clusters(table):
    chosen = sample_clusters(table, dataset="docs", n_clusters=10, seed=7)
    assert chosen == sample_clusters(table, dataset="docs", n_clusters=10, seed=7) and len(chosen) == 10
    r = compare(table, seed=1, resamples=200, subset_clusters=chosen, **KEY)
    assert r.n_clusters == 10
    with pytest.raises(HarnessError, match="subset asks for 41 clusters but only 40 exist"):
        sample_clusters(table, dataset="docs", n_clusters=41, seed=7)

