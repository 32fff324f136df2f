"""The plan schema's newer parts: the ci95-within-margin rule, question subsets (strata, seeded samples
with a shortfall), judged outcomes, missing tests, and the Holm-adjusted sign-flip p beside TOST rows."""

import numpy as np
import pytest
import yaml

from harness.errors import HarnessError, InputError
from harness.stats.families import run_family, run_plan
from harness.stats.rules import ruled
from harness.inference.holm import holm
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.verdicts import ci_margin_verdict

RESAMPLES = 400


@pytest.mark.parametrize("ci, label, small", [
    ((-1.0, 2.0), "equiv.", False),    # inside the margin, crosses 0
    ((0.5, 3.5), "equiv.", True),      # inside the margin, excludes 0: a small difference
    ((1.0, 6.0), "diff.", False),      # beyond the margin, excludes 0
    ((-6.0, 1.0), "incon.", False),    # beyond the margin, includes 0
    ((-4.0, 1.0), "incon.", False),    # touching the margin is not inside it
])
def test_ci_margin_verdict(ci, label, small):
    verdict = ci_margin_verdict(ci95=ci, margin=4.0)
    assert (verdict.label, verdict.small_difference_within_margin) == (label, small)


def test_ci_margin_verdict_needs_a_positive_margin():
    with pytest.raises(ValueError, match="`margin` must be positive; got 0"):
        ci_margin_verdict(ci95=(-1.0, 1.0), margin=0)


def _plan(families):
    return {
        "study": "t", "registered_at": "2025-01-01T00:00:00+00:00", "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": RESAMPLES},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 2000},
        "datasets": {
            "docs": {"primary_metric": "prec@1024t", "cluster": "question", "stratified": True, "margin": 4,
                     "metrics": ["prec@1024t", "nugget_recall@1024t"]},
            "papers": {"primary_metric": "rec@512t", "cluster": "paper", "stratified": False, "margin": 5,
                       "metrics": ["rec@512t", "answer_f1@512t"]},
        },
        "arms": ["A", "B", "C"], "retrievers": ["hybrid"], "families": families,
    }


def _family(fid, tests, rule="two-sided", multiplicity="none", signflip=False, tier="secondary"):
    return {"id": fid, "description": "d", "tier": tier, "multiplicity": multiplicity,
            "decision": {"rule": rule, "signflip_required": signflip}, "seed": 7, "tests": tests}


def _test(tid, **kw):
    return {
        "id": tid,
        "a": "A",
        "b": "B",
        "retriever": "hybrid",
        "dataset": "docs",
        "metric": "prec@1024t",
    } | kw


def _load(tmp_path, families):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_plan(families), sort_keys=False))
    return load_plan(path)


SCHEMA_ERRORS = [
    (
        [_family("r", [_test("t1")], rule="ci95-within-margin")],
        r"tests\[0\]\.margin: required for a ci95-within-margin test \[test t1\]",
    ),
    (
        [_family("r", [_test("t1", margin=4)], rule="ci95-within-margin", multiplicity="holm")],
        r"families\[0\]\.decision\.rule: rule ci95-within-margin judges unadjusted 95% CIs",
    ),
    (
        [
            _family(
                "r", [_test("t1", rule="ci95-within-margin", margin=4)], multiplicity="holm", signflip=True
            )
        ],
        r"tests\[0\]\.rule: rule ci95-within-margin .* needs multiplicity: none \[test t1\]",
    ),
    (
        [_family("r", [_test("t1", rule="bayes")])],
        r"plan\.yaml: families\[0\]\.tests\[0\]\.rule: unknown decision rule 'bayes' .*\[test t1\]",
    ),
    (
        [_family("r", [_test("t1", dataset="papers", metric="rec@512t", subset={"strata": ["laravel"]})])],
        r"subset\.strata: dataset 'papers' is not stratified .*\[test t1\]",
    ),
    (
        [_family("r", [_test("t1", subset={"strata": ["laravel"], "allow_shortfall": True})])],
        r"subset\.allow_shortfall: only a sampled subset .*\[test t1\]",
    ),
    (
        [_family("r", [_test("t1", subset={"n_clusters": 3})])],
        r"subset: n_clusters and seed go together .*\[test t1\]",
    ),
    ([_family("r", [_test("t1", subset={"stratum": "laravel"})])], r"subset\.stratum: unknown key"),
    (
        [
            _family(
                "r",
                [
                    _test(
                        "t1",
                        rule="tost",
                        margin=5,
                        metric="nugget_recall@1024t",
                        acceptance={"judge": "j", "positive_min": 0.05, "negative_max": 0.85},
                    )
                ],
            )
        ],
        r"acceptance: needs 0 <= negative_max < positive_min <= 1; got 0.85 and 0.05 \[test t1\]",
    ),
]


@pytest.mark.parametrize("families, message", SCHEMA_ERRORS)
def test_schema_errors_name_the_file_key_and_test(tmp_path, families, message):
    with pytest.raises(InputError, match=message):
        _load(tmp_path, families)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(11)
    return long_table(rng, [SyntheticDataset("docs", 60, 1.0, ("angular", "laravel", "yolo")),
                            SyntheticDataset("papers", 40, 3.0)],
                      {"A": 0.04, "B": 0.0, "C": 0.01}, ["hybrid"],
                      {"docs": ["prec@1024t"], "papers": ["rec@512t"]})


def test_stratum_subset_restricts_the_contrast_to_that_domain(tmp_path, table):
    plan = _load(tmp_path, [_family("dom", [_test("all"), _test("lar", subset={"strata": ["laravel"]})])])
    rows = [r.to_json() for r in run_family(plan, ruled(plan.family("dom")), table).rows]
    lar = table[(table.dataset == "docs") & (table.stratum == "laravel")]
    a = lar[lar.arm == "A"].set_index("qid")["value"]
    b = lar[lar.arm == "B"].set_index("qid")["value"]
    assert rows[1]["n_questions"] == len(a) == 20 and rows[1]["n_strata"] == 1
    assert rows[1]["estimate"] == pytest.approx(100 * (a - b.loc[a.index]).mean(), rel=1e-12)
    assert rows[0]["n_questions"] == 60
    assert rows[1]["subset"] == {"strata": ["laravel"]}


def test_ci95_within_margin_rows_use_the_rule(tmp_path, table):
    plan = _load(tmp_path, [_family("ret", [_test("r1", margin=4), _test("r2", b="C", margin=0.5)],
                                    rule="ci95-within-margin")])
    rows = [r.to_json() for r in run_family(plan, ruled(plan.family("ret")), table).rows]
    for row in rows:
        assert row["ci_shown"] == "95" and row["p_tost"] is None and row["p_tost_holm"] is None
        expected = ci_margin_verdict(ci95=tuple(row["ci95_bca"]), margin=row["margin"]).label
        assert row["verdict"] == expected
    assert rows[1]["verdict"] != "equiv."  # a 0.5-point margin cannot hold a CI several points wide


def test_shortfall_uses_completed_clusters_and_names_the_dropped(tmp_path, table):
    subset = {"n_clusters": 10, "seed": 3, "allow_shortfall": True}
    plan = _load(tmp_path, [_family("sc", [_test("s1", dataset="papers", metric="rec@512t", subset=subset)],
                                    tier="exploratory")])
    import random

    clusters = sorted(set(table[table.dataset == "papers"].cluster))
    sampled = sorted(random.Random(3).sample(clusters, 10))
    unfinished = sampled[:3]  # the quota ran out before these papers
    short = table.drop(table[(table.arm == "A") & table.cluster.isin(unfinished)].index)
    row = run_family(plan, ruled(plan.family("sc")), short).rows[0].to_json()
    assert row["subset"]["dropped_clusters"] == unfinished
    assert row["subset"]["n_clusters_used"] == 7 and row["n_clusters"] == 7
    strict = _load(tmp_path, [_family("sc", [_test("s1", dataset="papers", metric="rec@512t",
                                                   subset={"n_clusters": 10, "seed": 3})])])
    with pytest.raises(HarnessError, match="arms A and B do not have the same questions"):
        run_family(strict, ruled(strict.family("sc")), short)


def test_missing_metric_is_a_missing_row_and_holm_keeps_the_family_size(tmp_path, table):
    tests = [_test("k1", rule="tost", margin=4), _test("k2", b="C", rule="tost", margin=4),
             _test("k3", dataset="papers", metric="answer_f1@512t", rule="tost", margin=5)]
    plan = _load(tmp_path, [_family("ks", tests, rule="tost", multiplicity="holm")])
    result = run_family(plan, ruled(plan.family("ks")), table)
    rows = [r.to_json() for r in result.rows]
    assert result.status == "ran" and rows[2]["verdict"] == "missing"
    assert rows[2]["missing"] == ["arm A on papers under hybrid (answer_f1@512t)",
                                  "arm B on papers under hybrid (answer_f1@512t)"]
    assert [r["p_tost_holm"] for r in rows[:2]] == pytest.approx(
        list(holm([rows[0]["p_tost"], rows[1]["p_tost"], 1.0]))[:2]
    )
    # the Holm-adjusted sign-flip p is reported beside each TOST result
    flips = list(holm([rows[0]["p_signflip"], rows[1]["p_signflip"], 1.0]))
    assert [r["p_signflip_holm"] for r in rows[:2]] == pytest.approx(flips[:2])
    from harness.stats.tables import to_csv, to_markdown

    md = to_markdown(result)
    assert "| k3 |" in md and "missing" in md and "p sign-flip Holm" in md
    assert to_csv(result).count("\n") == 4


def test_family_without_any_results_is_not_run(tmp_path, table):
    plan = _load(tmp_path, [_family("ks", [_test("k3", dataset="papers", metric="answer_f1@512t")])])
    result = run_family(plan, ruled(plan.family("ks")), table)
    assert result.status == "not run" and result.rows == ()


@pytest.mark.parametrize(
    "rates, tier, passed",
    [
        (None, "exploratory", False),
        ({"j": {"positive": 0.91, "negative": 0.068}}, "exploratory", False),  # failed negative control
        ({"j": {"positive": 0.91, "negative": 0.03}}, "exploratory", False),  # no human spot check on file
        (
            {"j": {"positive": 0.91, "negative": 0.03, "spot_check": {"kappa": 0.5, "passed": False}}},
            "exploratory",
            False,
        ),
        (
            {"j": {"positive": 0.91, "negative": 0.03, "spot_check": {"kappa": 0.7, "passed": True}}},
            "secondary",
            True,
        ),
    ],
)
def test_judged_outcome_is_exploratory_until_its_judge_passes(tmp_path, table, rates, tier, passed):
    acceptance = {"judge": "j", "positive_min": 0.85, "negative_max": 0.05}
    plan = _load(
        tmp_path, [_family("nr", [_test("n1", rule="tost", margin=5, acceptance=acceptance)], rule="tost")]
    )
    row = run_family(plan, ruled(plan.family("nr")), table, judge_rates=rates).rows[0].to_json()
    assert (row["tier"], row["acceptance"]["passed"]) == (tier, passed)


def test_judged_rows_show_their_controls_even_when_one_failed(tmp_path, table):
    from harness.stats.tables import to_markdown

    acceptance = {"judge": "j", "positive_min": 0.85, "negative_max": 0.05}
    plan = _load(
        tmp_path, [_family("nr", [_test("n1", rule="tost", margin=5, acceptance=acceptance)], rule="tost")]
    )
    rates = {"j": {"positive": 0.91, "negative": 0.068}}
    result = run_family(plan, ruled(plan.family("nr")), table, judge_rates=rates)
    md = to_markdown(result)
    assert "(exploratory: judge not accepted) |" in md
    assert (
        "n1: judge j, positive control 91.0% (>= 85%), negative control 6.8% (<= 5%), no spot check on file "
        "(>= 0.6): not accepted, so the row is exploratory."
    ) in md


@pytest.mark.parametrize("rule", ["two-sided", "tost", "ci95-within-margin"])
def test_a_test_on_one_cluster_is_reported_but_never_decided(tmp_path, table, rule):
    """One sampled paper: the bootstrap CI collapses to the estimate, which excludes 0 whenever the
    estimate is not 0, so a rule applied to it would call a difference; the row keeps its numbers and
    says why it has no verdict."""
    one = {"n_clusters": 1, "seed": 3}
    tests = [
        _test(
            "one",
            dataset="papers",
            metric="rec@512t",
            subset=one,
            **({"margin": 5} if rule != "two-sided" else {}),
        ),
        _test("all", dataset="papers", metric="rec@512t", **({"margin": 5} if rule != "two-sided" else {})),
    ]
    plan = _load(tmp_path, [_family("f", tests, rule=rule)])
    shifted = table.copy()
    shifted.loc[shifted.arm == "A", "value"] += 0.2  # a clear difference, so a collapsed CI excludes 0
    rows = {r.test: r.to_json() for r in run_family(plan, ruled(plan.family("f")), shifted).rows}
    assert rows["one"]["n_clusters"] == 1 and rows["one"]["ci95_bca"][0] == rows["one"]["ci95_bca"][1] != 0
    assert rows["one"]["verdict"] == "too few clusters"
    assert rows["all"]["n_clusters"] > 1 and rows["all"]["verdict"] in ("diff.", "incon.")


def test_threads_give_the_same_families(tmp_path, table):
    """Contrasts computed in threads (each with its own seed) give the serial output exactly."""
    tests = [
        _test("t1"),
        _test("t2", b="C"),
        _test("t3", dataset="papers", metric="rec@512t", subset={"n_clusters": 5, "seed": 1}),
        _test("t4", a="C", dataset="papers", metric="rec@512t"),
    ]
    plan = _load(
        tmp_path,
        [_family("f", tests, multiplicity="holm", signflip=True), _family("g", [_test("u1", a="C")])],
    )
    serial = [r.to_json() for r in run_plan(plan, table)]
    threaded = [r.to_json() for r in run_plan(plan, table, threads=3)]
    assert threaded == serial and all(f["status"] == "ran" for f in serial)


def test_decided_rows_read_back_write_the_same_json_key_for_key_and_in_order(tmp_path, table):
    """A family with a judged TOST row, a ci95-within-margin row (a margin but no p_tost) and a missing row:
    its JSON read back as typed rows writes the same rows, keys in the order `harness stats` writes them."""
    import json

    from harness.stats.families import FamilyResult

    judged = {"judge": "j", "positive_min": 0.85, "negative_max": 0.05}
    tests = [_test("k1", rule="tost", margin=4, acceptance=judged),
             _test("k2", b="C", rule="ci95-within-margin", margin=4),
             _test("k3", dataset="papers", metric="answer_f1@512t", rule="tost", margin=5)]
    plan = _load(tmp_path, [_family("ks", tests, rule="tost", multiplicity="none")])
    rates = {"j": {"positive": 0.9, "negative": 0.01, "spot_check": {"kappa": 0.7, "passed": True}}}
    result = run_family(plan, ruled(plan.family("ks")), table, judge_rates=rates)
    written = json.loads(json.dumps(result.to_json()))
    rows = FamilyResult.from_json(written, "ks.json").to_json()["rows"]
    assert rows == written["rows"] and [list(r) for r in rows] == [list(r) for r in written["rows"]]
    contrast = ["n_questions", "n_clusters", "n_strata", "estimate", "ci90_bca", "ci95_bca",
                "ci90_percentile", "ci95_percentile", "z0", "acceleration", "resamples", "seed", "p_signflip",
                "signflip_exact", "signflip_flips", "se_cluster"]
    head = ["test", "rule", "dataset", "a", "b", "retriever", "metric", "margin", "tier", "source"]
    tail = ["t_tost_disagrees", "p_tost_holm", "p_signflip_holm", "mdd", "ci_shown", "verdict",
            "verdict_reason", "small_difference_within_margin"]
    t_tost = ["p_tost", "ci90_t", "p_tost_t", "t_df"]
    assert list(rows[0]) == head + contrast + t_tost + ["no_variation", "subset"] + tail + ["acceptance"]
    assert list(rows[1]) == head + contrast + ["no_variation", "subset"] + t_tost + tail
    assert list(rows[2]) == head + ["verdict", "missing", "subset"]
    assert list(rows[0]["acceptance"]) == ["judge", "positive_min", "negative_max", "positive", "negative",
                                           "kappa", "passed"]
    typed = FamilyResult.from_json(written, "ks.json").rows
    assert [type(r).__name__ for r in typed] == ["DecidedRow"] * 3
    assert typed[0].acceptance is not None and typed[0].acceptance.passed and typed[2].contrast is None
