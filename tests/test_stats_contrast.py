import numpy as np
import pandas as pd
import pytest

from harness.errors import HarnessError, InputError
from harness.stats.contrast import MissingResultsError, compare, paired_differences, sample_clusters
from harness.stats.io import read_per_question_file
from harness.stats.simulate import SyntheticDataset, long_table


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
    for field in ("dataset", "a", "b", "retriever", "metric", "n_questions", "n_clusters", "estimate", "ci90_bca",
                  "ci95_bca", "ci90_percentile", "ci95_percentile", "z0", "acceleration", "resamples", "seed",
                  "p_signflip", "margin", "p_tost"):
        assert field in out
    assert "margin" not in compare(table, seed=1, resamples=500, **KEY).to_json()


def test_pairing_is_by_qid_not_row_order(table):
    shuffled = table.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert compare(shuffled, seed=2, resamples=300, **KEY) == compare(table, seed=2, resamples=300, **KEY)


def test_mismatched_question_sets_are_an_error(table):
    dropped = table.drop(table[(table.arm == "B")].index[:2])
    with pytest.raises(HarnessError, match=r"arms A and B do not have the same questions \(40 vs 38\); only in A: docs-q00000, docs-q00001; only in B: none"):
        paired_differences(dropped, **KEY)


def test_missing_arm_and_inconsistent_clusters_are_errors(table):
    with pytest.raises(MissingResultsError, match=r"no per-question results for arm C on docs under hybrid \(prec@1024t\)"):
        paired_differences(table, **{**KEY, "b": "C"})
    moved = table.copy()
    moved.loc[(moved.arm == "B") & (moved.qid == "docs-q00003"), "cluster"] = "elsewhere"
    with pytest.raises(HarnessError, match=r"question 'docs-q00003' has cluster 'docs-c0003' in arm A but 'elsewhere' in arm B"):
        paired_differences(moved, **KEY)


def test_cluster_subset_is_a_seeded_sample_of_sorted_clusters(table):
    chosen = sample_clusters(table, dataset="docs", n_clusters=10, seed=7)
    assert chosen == sample_clusters(table, dataset="docs", n_clusters=10, seed=7) and len(chosen) == 10
    r = compare(table, seed=1, resamples=200, subset_clusters=chosen, **KEY)
    assert r.n_clusters == 10
    with pytest.raises(HarnessError, match="subset asks for 41 clusters but only 40 exist"):
        sample_clusters(table, dataset="docs", n_clusters=41, seed=7)


# --- io ---

def test_csv_keeps_ids_as_text_and_errors_name_file_and_line(tmp_path):
    path = tmp_path / "docs.csv"
    path.write_text("dataset,arm,retriever,qid,cluster,stratum,metric,value\n"
                    "docs,S,bm25,007,007,,hit@1,1\n"
                    "docs,S,bm25,008,008,,hit@1,1.5\n")
    with pytest.raises(InputError, match=r"docs\.csv: line 3: `value` must be a number in \[0, 1\]; got 1\.5"):
        read_per_question_file(path)
    path.write_text("dataset,arm,retriever,qid,cluster,stratum,metric,value\ndocs,S,bm25,007,007,,hit@1,1\n")
    t = read_per_question_file(path)
    assert t.loc[0, "qid"] == "007" and t.loc[0, "stratum"] == ""


def test_missing_columns_and_duplicates_are_reported(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("dataset,arm,qid,value\nd,S,1,0.5\n")
    with pytest.raises(InputError, match=r"x\.csv: missing column\(s\) retriever, cluster, stratum, metric"):
        read_per_question_file(path)
    path.write_text("dataset,arm,retriever,qid,cluster,stratum,metric,value\n"
                    "d,S,r,1,1,,m,0.5\nd,S,r,1,1,,m,0.6\n")
    with pytest.raises(InputError, match=r"line 3: duplicate result for dataset=d, arm=S, retriever=r, metric=m, qid=1"):
        read_per_question_file(path)
    frame = pd.DataFrame({"dataset": ["d"], "arm": ["S"], "retriever": ["r"], "qid": ["1"], "cluster": ["1"],
                          "stratum": [None], "metric": ["m"], "value": [0.25]})
    frame.to_parquet(tmp_path / "d.parquet")
    assert read_per_question_file(tmp_path / "d.parquet").loc[0, "value"] == 0.25
