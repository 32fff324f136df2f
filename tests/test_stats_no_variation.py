"""Degenerate contrasts get no verdict (issue 29, part 2): every paired difference identical, or one arm
constant over its questions (floor or ceiling), reads `no variation` under every rule, keeps its estimate,
says why, and counts in Holm as not rejected."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from harness.plan.load import load_plan
from harness.stats.contrast import compare
from harness.stats.families import check_family, run_family
from harness.inference.holm import holm
from harness.stats.replicates import replicate_verdicts
from harness.stats.rules import RULES, verdict_labels, ruled
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.tables import to_csv, to_markdown
from harness.stats.verdicts import NO_VARIATION, TOO_FEW_CLUSTERS

RESAMPLES = 400


def _plan(tmp_path, tests, rule, multiplicity="none"):
    plan = {
        "study": "t",
        "registered_at": "2025-01-01T00:00:00+00:00",
        "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": RESAMPLES},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 2000},
        "datasets": {
            "papers": {
                "primary_metric": "rec@512t",
                "cluster": "paper",
                "stratified": False,
                "margin": 5,
                "metrics": ["rec@512t", "answer_f1@512t"],
            }
        },
        "arms": ["A", "B", "C", "Z", "Y"],
        "retrievers": ["hybrid"],
        "families": [
            {
                "id": "f",
                "description": "d",
                "tier": "confirmatory",
                "multiplicity": multiplicity,
                "decision": {"rule": rule, "signflip_required": False},
                "seed": 7,
                "tests": tests,
            }
        ],
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return load_plan(path)


def _test(tid, a, b, rule, metric="rec@512t"):
    return {"id": tid, "a": a, "b": b, "retriever": "hybrid", "dataset": "papers", "metric": metric} \
        | ({} if rule == "two-sided" else {"margin": 5})


@pytest.fixture(scope="module")
def table():
    """Arms A, B, C vary; arm Z is B + 0.03 on every question (a zero-variance contrast Z - B of +3 points);
    arm Y is 0 on every question (a floor, as a reader answering "Yes" to everything scores)."""
    frame = long_table(
        np.random.default_rng(5),
        [SyntheticDataset("papers", 30, 3.0)],
        {"A": 0.03, "B": 0.0, "C": 0.0},
        ["hybrid"],
        {"papers": ["rec@512t", "answer_f1@512t"]},
    )
    frame = frame[frame.arm != "C"].assign(value=lambda f: f.value.clip(0.05, 0.95)).reset_index(drop=True)
    b = frame[frame.arm == "B"]
    return pd.concat([frame, b.assign(arm="Z", value=b.value + 0.03), b.assign(arm="Y", value=0.0),
                      b.assign(arm="C", value=b.value + np.random.default_rng(6).normal(0, 0.01, len(b)))],
                     ignore_index=True)


@pytest.mark.parametrize("rule", ["tost", "two-sided", "ci95-within-margin"])
def test_identical_differences_get_no_variation_under_every_rule(tmp_path, table, rule):
    """Z - B is +3.00 on every question: the bootstrap CI collapses to [3, 3], which the TOST and the
    margin rule would read as equiv. and the two-sided rule as diff."""
    plan = _plan(tmp_path, [_test("zero-var", "Z", "B", rule), _test("varies", "A", "B", rule)], rule)
    rows = {r.test: r.to_json() for r in run_family(plan, ruled(plan.family("f")), table).rows}
    row = rows["zero-var"]
    assert row["ci95_bca"] == [row["estimate"], row["estimate"]] and row["estimate"] == pytest.approx(3.0)
    assert row["verdict"] == NO_VARIATION and not row["small_difference_within_margin"]
    assert row["verdict_reason"] == row["no_variation"] == "every paired difference is +3.00 points (" \
        f"{row['n_questions']} questions)"
    assert rows["varies"]["verdict"] in RULES[rule].verdicts and rows["varies"]["verdict_reason"] is None


@pytest.mark.parametrize("rule", ["tost", "two-sided", "ci95-within-margin"])
def test_an_arm_at_the_floor_gets_no_variation(tmp_path, table, rule):
    """Y scores 0 on every question: Y - B varies with B, yet the instrument measured nothing on Y."""
    plan = _plan(tmp_path, [_test("floor", "Y", "B", rule)], rule)
    row = run_family(plan, ruled(plan.family("f")), table).rows[0].to_json()
    assert row["ci95_bca"][0] < row["ci95_bca"][1] < 0  # a real interval, far from 0: a rule would call it
    assert row["verdict"] == NO_VARIATION
    assert row["verdict_reason"] == f"arm Y is 0.00 points on all {row['n_questions']} questions (floor)"


def test_both_arms_at_the_floor_name_both(tmp_path, table):
    """The demo's A1-papers: the reader answers every question wrongly in both arms."""
    floor = table[table.arm == "Y"]
    both = pd.concat([table[table.arm != "C"], floor.assign(arm="C")], ignore_index=True)
    plan = _plan(tmp_path, [_test("A1", "Y", "C", "tost")], "tost")
    row = run_family(plan, ruled(plan.family("f")), both).rows[0].to_json()
    assert (row["estimate"], row["verdict"]) == (0.0, NO_VARIATION)
    n = row["n_questions"]
    assert row["verdict_reason"] == (f"arm Y is 0.00 points on all {n} questions (floor); "
                                     f"arm C is 0.00 points on all {n} questions (floor)")


def test_holm_counts_a_row_without_variation_as_not_rejected(tmp_path, table):
    """Its p_tost is 0 (a collapsed CI inside the margin); Holm takes it as 1, so the family's other rows
    are adjusted as if it could never be rejected, in both the TOST and the sign-flip Holm."""
    tests = [
        _test("varies", "A", "B", "tost"),
        _test("zero-var", "Z", "B", "tost"),
        _test("close", "C", "B", "tost"),
    ]
    plan = _plan(tmp_path, tests, "tost", multiplicity="holm")
    result = run_family(plan, ruled(plan.family("f")), table)
    rows = [r.to_json() for r in result.rows]
    assert rows[1]["p_tost"] == 0.0 and rows[1]["verdict"] == NO_VARIATION
    assert [r["p_tost_holm"] for r in rows] == pytest.approx(
        list(holm([rows[0]["p_tost"], 1.0, rows[2]["p_tost"]]))
    )
    assert rows[1]["p_tost_holm"] == 1.0 and rows[1]["p_signflip_holm"] == 1.0
    flips = holm([rows[0]["p_signflip"], 1.0, rows[2]["p_signflip"]])
    assert [r["p_signflip_holm"] for r in rows] == pytest.approx(list(flips))
    assert rows[2]["verdict"] == "equiv."  # the other rows are still decided

    md = to_markdown(result)
    assert "| zero-var |" in md and "| no variation |" in md
    assert (
        f"zero-var: no variation: every paired difference is +3.00 points ({rows[1]['n_questions']} "
        "questions); "
        "reported with its estimate but not decided, and counted in Holm as p = 1."
    ) in md
    assert ",no variation," in to_csv(result)
    recomputed = result.to_json()
    checks = {c.item: c for c in check_family(recomputed, recomputed)}
    assert checks["zero-var"].passed
    assert checks["zero-var"].detail == f"verdict no variation ({rows[1]['verdict_reason']})"


def test_a_row_on_too_few_clusters_also_counts_as_p_1_in_holm(tmp_path, table):
    one = dict(_test("one", "A", "B", "tost"), subset={"n_clusters": 1, "seed": 3})
    plan = _plan(tmp_path, [one, _test("all", "A", "B", "tost")], "tost", multiplicity="holm")
    rows = [r.to_json() for r in run_family(plan, ruled(plan.family("f")), table).rows]
    assert rows[0]["verdict"] == TOO_FEW_CLUSTERS and rows[0]["verdict_reason"].startswith("1 cluster:")
    assert rows[0]["p_tost_holm"] == 1.0
    assert rows[1]["p_tost_holm"] == pytest.approx(holm([1.0, rows[1]["p_tost"]])[1])


def test_replicates_recognise_no_variation(tmp_path, table):
    """Simulated studies of a zero-variance test, or of one with an arm at the floor, stay without variation,
    as the registered row reads; the shares name the label and the markdown shows it under `other`."""
    tests = [
        _test("zero-var", "Z", "B", "tost"),
        _test("floor", "Y", "B", "tost"),
        _test("varies", "A", "B", "tost"),
    ]
    plan = _plan(tmp_path, tests, "tost", multiplicity="holm")
    summary = replicate_verdicts(plan, table, effects={"floor": 2.0}, replicates=2, seed=1, resamples=50)
    shares = {t.test: t for t in summary.tests}
    assert shares["zero-var"].shares[NO_VARIATION] == 1.0 and shares["zero-var"].correct == 0.0
    assert shares["floor"].shares[NO_VARIATION] == 1.0
    assert shares["varies"].shares.get(NO_VARIATION, 0.0) == 0.0
    assert "no variation 100.0%" in summary.to_markdown()
    labels = verdict_labels()
    assert NO_VARIATION in labels and all(label in labels for t in summary.tests for label in t.shares)


def _opposite_strata(n_per_stratum: int = 10) -> pd.DataFrame:
    """A - B is +100 points on every question of stratum `up` and -100 on every question of `down`."""
    rows = []
    for stratum, a, b in (("up", 1.0, 0.0), ("down", 0.0, 1.0)):
        for i in range(n_per_stratum):
            qid = f"{stratum}-{i:02d}"
            rows += [
                ("d", arm, "bm25", qid, qid, stratum, "rec@512t", value)
                for arm, value in (("A", a), ("B", b))
            ]
    return pd.DataFrame(
        rows, columns=["dataset", "arm", "retriever", "qid", "cluster", "stratum", "metric", "value"]
    )


def test_issue40_opposite_effects_in_two_strata_get_no_variation(tmp_path, capsys):
    """Each stratum is resampled on its own, so the stratified interval of +100 and -100 collapses to [0, 0]
    and the TOST called the two opposite effects equivalent (p_tost 0.0)."""
    path = tmp_path / "table.csv"
    _opposite_strata().to_csv(path, index=False)
    from harness.cli.main import main

    assert (
        main(
            [
                "compare",
                "--results",
                str(path),
                "--dataset",
                "d",
                "--a",
                "A",
                "--b",
                "B",
                "--retriever",
                "bm25",
                "--metric",
                "rec@512t",
                "--margin",
                "5",
                "--resamples",
                str(RESAMPLES),
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["ci90_bca"] == [0.0, 0.0] and result["p_tost"] == 0.0  # what the verdict must not read
    assert result["no_variation"] == (
        "paired differences do not vary within any stratum: -100.00 points in "
        "stratum 'down' (10 questions), +100.00 points in stratum 'up' (10 questions)"
    )
    assert (
        main(
            [
                "compare",
                "--results",
                str(path),
                "--dataset",
                "d",
                "--a",
                "A",
                "--b",
                "B",
                "--retriever",
                "bm25",
                "--metric",
                "rec@512t",
                "--margin",
                "5",
                "--resamples",
                str(RESAMPLES),
                "--no-strata",
            ]
        )
        == 0
    )
    unstratified = json.loads(capsys.readouterr().out)
    assert (
        unstratified["no_variation"] is None
        and unstratified["ci90_bca"][0] < -20 < 20 < unstratified["ci90_bca"][1]
    )


def test_differences_constant_within_strata_of_unequal_clusters_get_no_variation():
    """Clusters of one and two questions: the stratified replicates vary a little with the drawn sizes, yet
    no stratum's differences vary; the row is read as no variation, not decided on that spread."""
    frame = _opposite_strata(6)
    frame.loc[frame.qid.isin(["up-01", "down-01"]), "cluster"] = frame.cluster.str.replace("-01", "-00")
    frame.loc[(frame.stratum == "down") & (frame.arm == "B"), "value"] = 0.9  # A - B is -90 there
    result = compare(frame, dataset="d", a="A", b="B", retriever="bm25", metric="rec@512t", seed=1,
                     resamples=RESAMPLES, margin=5)
    assert result.ci90_bca[0] < result.ci90_bca[1]  # the stratified bootstrap does vary here
    assert result.no_variation.startswith(
        "paired differences do not vary within any stratum: -90.00 points in "
        "stratum 'down' (6 questions), +100.00 points in stratum 'up'"
    )
