"""The t-TOST sensitivity column (issue 29, part 4): a cluster-robust t interval and its TOST p beside every
bootstrap TOST row, checked against statsmodels and against closed forms; never a decision input, and the
tables flag rows where the two disagree about equivalence."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from harness.plan.load import load_plan
from harness.report.sections_outcomes import verdict_table
from harness.stats.contrast import ContrastResult, compare
from harness.stats.families import FamilyResult, PlannedContrast, Status, decide_family, run_family
from harness.stats.rules import ruled
from harness.inference.simulate import SyntheticDataset, long_table
from harness.inference.t_tost import t_tost
from harness.stats.tables import to_csv, to_latex, to_markdown

MARGIN = 4.0


def _table(strata=("",)):
    return long_table(np.random.default_rng(29), [SyntheticDataset("d", 25, 3.0, strata)],
                      {"A": 0.02, "B": 0.0}, ["r"], {"d": ["m"]})


def _compare(table, stratified=False):
    return compare(table, dataset="d", a="A", b="B", retriever="r", metric="m", seed=3, resamples=500,
                   max_flips=500, margin=MARGIN, stratified=stratified)


def _paired(table):
    a = table[table.arm == "A"].sort_values("qid")
    b = table[table.arm == "B"].sort_values("qid")
    return (a.value.to_numpy() - b.value.to_numpy()) * 100, a.cluster.to_numpy(), a.stratum.to_numpy()


def test_t_tost_matches_statsmodels_cluster_robust_ols():
    """Intercept-only OLS of the paired differences, CR1 covariance by cluster, t with G - 1 df: its
    estimate, SE, 90% interval and one-sided p's at -margin and +margin are the row's t-TOST."""
    sm = pytest.importorskip("statsmodels.api")
    table = _table()
    row = _compare(table).to_json()
    diffs, clusters, _ = _paired(table)
    groups = pd.factorize(clusters)[0]
    fit = sm.OLS(diffs, np.ones((len(diffs), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    assert row["estimate"] == pytest.approx(fit.params[0], rel=1e-12)
    assert row["se_cluster"] == pytest.approx(fit.bse[0], rel=1e-10)
    assert row["t_df"] == fit.df_resid_inference == 24
    assert row["ci90_t"] == pytest.approx(list(fit.conf_int(alpha=0.10)[0]), rel=1e-10)

    def one_sided(null, side):  # statsmodels' two-sided p at `null`, halved towards `side`
        test = fit.t_test(f"const = {null}")
        t, p = float(np.squeeze(test.tvalue)), float(test.pvalue)
        return p / 2 if (t > 0) == (side > 0) else 1 - p / 2

    p_lower, p_upper = one_sided(-MARGIN, +1), one_sided(MARGIN, -1)
    assert row["p_tost_t"] == pytest.approx(max(p_lower, p_upper), rel=1e-9)
    assert 0 < row["p_tost_t"] < 1
    # the same model on cluster-level differences: each cluster's mean difference, weighted by its questions
    # (as the bootstrap weights them), HC1 covariance, G - 1 residual df
    by_cluster = pd.Series(diffs).groupby(groups)
    cluster_fit = sm.WLS(
        by_cluster.mean().to_numpy(), np.ones((25, 1)), weights=by_cluster.size().to_numpy()
    ).fit(cov_type="HC1", use_t=True)
    assert (cluster_fit.params[0], cluster_fit.bse[0]) == pytest.approx(
        (row["estimate"], row["se_cluster"]), rel=1e-10
    )
    assert cluster_fit.df_resid == row["t_df"]
    assert list(cluster_fit.conf_int(alpha=0.10)[0]) == pytest.approx(row["ci90_t"], rel=1e-10)


def test_t_tost_with_one_question_per_cluster_is_the_paired_t_tost():
    """A closed form needing no statsmodels: with singleton clusters the cluster-robust SE is the paired
    sample's s / sqrt(n), so each one-sided p is scipy's one-sample t-test against -+margin."""
    diffs = np.random.default_rng(3).normal(1.0, 6.0, 40)
    frame = pd.DataFrame(
        {
            "dataset": "d",
            "arm": np.repeat(["A", "B"], 40),
            "retriever": "r",
            "qid": np.tile([f"q{i:02d}" for i in range(40)], 2),
            "cluster": np.tile([f"c{i:02d}" for i in range(40)], 2),
            "stratum": "",
            "metric": "m",
            "value": np.r_[0.5 + diffs / 100, np.full(40, 0.5)],
        }
    )
    row = _compare(frame).to_json()
    d = (frame.value[:40].to_numpy() - 0.5) * 100
    p_lower = stats.ttest_1samp(d, -MARGIN, alternative="greater").pvalue
    p_upper = stats.ttest_1samp(d, MARGIN, alternative="less").pvalue
    assert row["t_df"] == 39
    assert row["p_tost_t"] == pytest.approx(max(p_lower, p_upper), rel=1e-9)
    half = stats.t.ppf(0.95, 39) * d.std(ddof=1) / np.sqrt(40)
    assert row["ci90_t"] == pytest.approx([d.mean() - half, d.mean() + half], rel=1e-9)


def test_stratified_t_tost_sums_within_stratum_variances_with_clusters_minus_strata_df():
    """Hand-computed: u_c = (S_c - n_c * estimate) / N; each stratum adds C_h/(C_h - 1) * sum (u_c - mean_h
    u)^2."""
    table = _table(("x", "y", "z"))
    row = _compare(table, stratified=True).to_json()
    diffs, clusters, strata = _paired(table)
    n, estimate = len(diffs), diffs.mean()
    variance = 0.0
    for s in sorted(set(strata)):
        mine = strata == s
        u = np.array([(diffs[mine & (clusters == c)].sum() - (mine & (clusters == c)).sum() * estimate) / n
                      for c in sorted(set(clusters[mine]))])
        variance += len(u) / (len(u) - 1) * ((u - u.mean()) ** 2).sum()
    se = np.sqrt(variance)
    df = 25 - 3
    assert (row["n_strata"], row["t_df"]) == (3, df)
    assert row["se_cluster"] == pytest.approx(se, rel=1e-10)
    expected = max(stats.t.sf((estimate + MARGIN) / se, df), stats.t.sf((MARGIN - estimate) / se, df))
    assert row["p_tost_t"] == pytest.approx(expected, rel=1e-9)
    half = stats.t.ppf(0.95, df) * se
    assert row["ci90_t"] == pytest.approx([estimate - half, estimate + half], rel=1e-9)


def test_degenerate_inputs():
    flat = t_tost(1.5, 0.0, n_clusters=10, n_strata=1, margin=4.0)
    assert (flat.ci90, flat.p_tost, flat.df) == ((1.5, 1.5), 0.0, 9)
    assert t_tost(4.5, 0.0, n_clusters=10, n_strata=1, margin=4.0).p_tost == 1.0
    none = t_tost(
        1.5, 2.0, n_clusters=3, n_strata=3, margin=4.0
    )  # one cluster per stratum: no t distribution
    assert (none.df, none.ci90, none.p_tost) == (0, None, None)
    with pytest.raises(ValueError, match="`margin` must be a positive number"):
        t_tost(0.0, 1.0, n_clusters=5, n_strata=1, margin=0.0)


def test_only_tost_rows_carry_it_and_compare_is_deterministic():
    table = _table()
    assert _compare(table).to_json() == _compare(table).to_json()
    two_sided = compare(table, dataset="d", a="A", b="B", retriever="r", metric="m", seed=3, resamples=500,
                        max_flips=500).to_json()
    assert not {"ci90_t", "p_tost_t", "t_df"} & set(two_sided)


def _plan(tmp_path):
    plan = {
        "study": "t",
        "registered_at": "2025-01-01T00:00:00+00:00",
        "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": 400},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 500},
        "datasets": {
            "d": {
                "primary_metric": "m",
                "cluster": "c",
                "stratified": False,
                "margin": MARGIN,
                "metrics": ["m"],
            }
        },
        "arms": ["A", "B", "C"],
        "retrievers": ["r"],
        "families": [
            {
                "id": "f",
                "description": "d",
                "tier": "confirmatory",
                "multiplicity": "holm",
                "decision": {"rule": "tost", "signflip_required": False},
                "seed": 7,
                "tests": [
                    {
                        "id": t,
                        "a": "A",
                        "b": b,
                        "retriever": "r",
                        "dataset": "d",
                        "metric": "m",
                        "margin": MARGIN,
                    }
                    for t, b in (("t1", "B"), ("t2", "C"))
                ],
            }
        ],
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return load_plan(path)


def test_rows_carry_the_column_and_it_never_decides(tmp_path):
    plan = _plan(tmp_path)
    table = pd.concat([_table(), _table().query("arm == 'B'").assign(arm="C")], ignore_index=True)
    rows = run_family(plan, ruled(plan.family("f")), table).rows
    for row in rows:
        c = row.contrast
        assert c.p_tost_t is not None and c.t_df == 24 and len(c.ci90_t) == 2
        assert row.t_tost_disagrees == ((c.p_tost < 0.05) != (c.p_tost_t < 0.05))
    # the verdict reads the bootstrap TOST alone: moving the t-TOST p changes no verdict
    moved = [PlannedContrast(t.test, t.rule,
                             dataclasses.replace(row.contrast, p_tost_t=1.0 - row.contrast.p_tost_t))
             for t, row in zip(ruled(plan.family("f")).tests, rows)]
    assert [r.verdict for r in decide_family(plan, plan.family("f"), moved)] == [r.verdict for r in rows]


def test_tables_and_report_flag_a_disagreement(tmp_path):
    """Row inputs built directly: t1's bootstrap TOST shows equivalence (p 0.03) but its t-TOST does not
    (p 0.08); t2's agree."""
    plan = _plan(tmp_path)
    base = {"dataset": "d", "a": "A", "retriever": "r", "metric": "m", "n_questions": 60, "n_clusters": 25,
            "n_strata": 1, "estimate": 1.0, "ci90_bca": [-2.0, 3.9], "ci95_bca": [-2.5, 4.4],
            "ci90_percentile": [-2.0, 3.9], "ci95_percentile": [-2.5, 4.4], "z0": 0.0, "acceleration": 0.0,
            "resamples": 400, "seed": 1, "p_signflip": 0.4, "signflip_exact": False, "signflip_flips": 500,
            "se_cluster": 1.7, "margin": MARGIN, "no_variation": None}
    first, second = ruled(plan.family("f")).tests
    one = {"b": "B", "p_tost": 0.03, "ci90_t": [-1.9, 4.1], "p_tost_t": 0.08, "t_df": 24}
    two = {"b": "C", "p_tost": 0.01, "ci90_t": [-1.0, 3.0], "p_tost_t": 0.02, "t_df": 24}
    contrasts = [PlannedContrast(first.test, first.rule, ContrastResult.from_json(base | one, "t1")),
                 PlannedContrast(second.test, second.rule, ContrastResult.from_json(base | two, "t2"))]
    rows = decide_family(plan, plan.family("f"), contrasts)
    assert [r.t_tost_disagrees for r in rows] == [True, False]
    fam = FamilyResult(
        family="f",
        description="d",
        tier="confirmatory",
        multiplicity="holm",
        rule="tost",
        signflip_required=False,
        alpha=0.05,
        seed=7,
        resamples=400,
        max_flips=500,
        source="plan",
        n_tests=2,
        study="t",
        harness_version="x",
        status=Status.RAN,
        missing=(),
        rows=tuple(rows),
    )
    md = to_markdown(fam)
    assert "| 0.080‡ |" in md and "| 0.020 |" in md
    assert ("‡ the bootstrap TOST and the t-TOST disagree about equivalence at alpha 0.05 (both p's "
            "unadjusted).") in md
    assert "0.080$^\\ddagger$" in to_latex(fam)
    csv_rows = to_csv(fam).splitlines()
    assert csv_rows[0].endswith(
        ",verdict_reason,no_variation,ci90_t_lo,ci90_t_hi,p_tost_t,t_df,t_tost_disagrees"
    )
    assert csv_rows[1].endswith(",,,-1.9,4.1,0.08,24,True")
    report = verdict_table(fam)
    header = list(report.header)
    cells = dict(zip(header, report.rows[0]))
    assert (cells["90% t CI"], cells["p t-TOST"]) == ("[-1.90, 4.10]", "0.080‡")
    assert dict(zip(header, report.rows[1]))["p t-TOST"] == "0.020"
    assert any("disagree about equivalence at alpha 0.05" in n for n in report.notes)
