"""Known effects (issue 26, item 2): replicated studies under chosen true effects, decided by the plan's own
rules, margins and Holm families."""

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.special import ndtri

from harness.errors import InputError
from harness.plan.load import load_plan
from harness.stats import replicates
from harness.inference.power import cluster_standard_error, tost_clusters_for_power
from harness.stats.replicates import replicate_verdicts
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.subsets import registered_pairs
from harness.stats.verdicts import DIFFERENT, EQUIVALENT, INCONCLUSIVE, MISSING, NO_DIFFERENCE

ALPHA = 0.05


def _family(fid: str, rule: str, multiplicity: str, tests: list[dict], *, signflip: bool = False) -> dict:
    return {"id": fid, "description": "d", "tier": "secondary", "multiplicity": multiplicity,
            "decision": {"rule": rule, "signflip_required": signflip}, "seed": 7,
            "tests": [{"retriever": "hybrid"} | t for t in tests]}


def _plan(tmp_path, families: list[dict], *, stratified: bool = False, resamples: int = 400):
    doc = {"study": "t", "registered_at": "2025-01-01T00:00:00+00:00", "alpha": ALPHA,
           "bootstrap": {"method": "bca-cluster", "resamples": resamples},
           "permutation": {"method": "cluster-sign-flip", "max_flips": resamples},
           "datasets": {"papers": {"primary_metric": "rec", "cluster": "paper", "stratified": stratified,
                                   "margin": 5, "metrics": ["rec", "rec2"]}},
           "arms": ["A", "B", "C", "D", "E"], "retrievers": ["hybrid"], "families": families}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_plan(path)


def _test(tid: str, a: str = "A", b: str = "B", metric: str = "rec", **extra) -> dict:
    return {"id": tid, "a": a, "b": b, "dataset": "papers", "metric": metric} | extra


@pytest.fixture(scope="module")
def table():
    # A sits 2 points above B: the replicates must centre it away before adding the true effect
    return long_table(np.random.default_rng(21), [SyntheticDataset("papers", 60, 2.0, ("x", "y", "z"))],
                      {"A": 0.02, "B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0}, ["hybrid"],
                      {"papers": ["rec"]}, noise=0.12)


def _margin_for_power_near_half(plan, table) -> float:
    """A margin at which a TOST on this test's questions shows equivalence about half the time."""
    pairs = registered_pairs(table, plan.family("f").tests[0])
    se = cluster_standard_error(pairs.diffs, pairs.clusters)
    return round(float(ndtri(1 - ALPHA) + 0.7) * se, 2)


def test_with_no_effect_the_equivalence_share_of_a_tost_test_is_its_simulated_power(tmp_path, table):
    probe = _plan(tmp_path, [_family("f", "tost", "none", [_test("t1", margin=5)])])
    margin = _margin_for_power_near_half(probe, table)
    plan = _plan(tmp_path, [_family("f", "tost", "none", [_test("t1", margin=margin)])])
    summary = replicate_verdicts(plan, table, effects={}, replicates=400, seed=5)
    (shares,) = summary.tests
    pairs = registered_pairs(table, plan.family("f").tests[0])
    power = tost_clusters_for_power(pairs.diffs, pairs.clusters, margin=margin, alpha=ALPHA, sizes=[60],
                                    simulations=4000, seed=9).curve[0].power
    assert 0.3 < power < 0.8  # a share far from 0 and 1, where a wrong simulation shows
    mc = np.sqrt(power * (1 - power) / 400 + power * (1 - power) / 4000)
    assert shares.shares[EQUIVALENT] == pytest.approx(power, abs=3.5 * mc)
    assert shares.effect == 0.0 and shares.truth == EQUIVALENT and shares.correct == shares.shares[EQUIVALENT]
    assert sum(shares.shares.values()) == pytest.approx(1.0)


def test_an_effect_of_twice_the_margin_is_called_different(tmp_path, table):
    plan = _plan(tmp_path, [_family("f", "tost", "none", [_test("t1", margin=3)])])
    summary = replicate_verdicts(plan, table, effects={"t1": -6.0}, replicates=100, seed=2)
    (shares,) = summary.tests
    assert shares.shares[DIFFERENT] >= 0.95
    assert shares.truth == DIFFERENT and shares.correct == shares.shares[DIFFERENT]
    assert list(shares.shares) == [EQUIVALENT, DIFFERENT, INCONCLUSIVE]
    # at the margin itself neither verdict states the truth
    at_margin = replicate_verdicts(plan, table, effects={"t1": 3.0}, replicates=5, seed=2).tests[0]
    assert at_margin.truth is None and at_margin.correct is None


def _four_tests() -> list[dict]:
    return [_test("t1", "A", "B"), _test("t2", "A", "C"), _test("t3", "A", "D"), _test("t4", "A", "E")]


def test_holm_keeps_the_familywise_error_of_a_family_under_the_null_at_alpha(tmp_path, table):
    holm = _plan(tmp_path, [_family("f", "two-sided", "holm", _four_tests(), signflip=True)])
    summary = replicate_verdicts(holm, table, effects={}, replicates=400, seed=8)
    (family,) = summary.families
    assert family.null_tests == 4 and family.multiplicity == "holm"
    assert family.familywise_error <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / 400)
    # the same four tests without the adjustment err more often: the figure follows the registered
    # multiplicity
    plain = _plan(tmp_path, [_family("f", "two-sided", "none", _four_tests(), signflip=True)])
    unadjusted = replicate_verdicts(plain, table, effects={}, replicates=400, seed=8).families[0]
    assert unadjusted.familywise_error > family.familywise_error + 0.03
    # a test given a true effect is not a null test: it no longer counts towards the error
    shifted = replicate_verdicts(holm, table, effects={"t1": 8.0}, replicates=50, seed=8)
    assert shifted.families[0].null_tests == 3 and shifted.tests[0].shares[DIFFERENT] > 0.9


def test_tests_on_the_same_questions_share_each_replicates_draw(tmp_path, table):
    # the same differences registered twice (under two metric names): one draw, so nearly the same verdicts
    both = pd.concat([table, table.assign(metric="rec2")], ignore_index=True)
    margin = _margin_for_power_near_half(
        _plan(tmp_path, [_family("f", "tost", "none", [_test("t1", margin=5)])]), table
    )
    plan = _plan(tmp_path, [_family("f", "tost", "none",
                                    [_test("t1", margin=margin), _test("t2", metric="rec2", margin=margin)])])
    seen = []
    real = replicates.decide_family

    def record(plan_, family, contrasts, judge_rates=None):
        rows = real(plan_, family, contrasts, judge_rates)
        seen.append([row.verdict for row in rows])
        return rows

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replicates, "decide_family", record)
        summary = replicate_verdicts(plan, both, effects={}, replicates=200, seed=4)
    same = np.mean([a == b for a, b in seen])
    assert (
        0.2 < summary.tests[0].shares[EQUIVALENT] < 0.8
    )  # independent draws would then agree about half the time
    assert same > 0.8  # only bootstrap noise on borderline replicates parts them


def test_a_stratified_dataset_is_redrawn_within_its_strata(tmp_path, table, monkeypatch):
    counts = []
    real = replicates.contrast_of_pairs

    def record(pairs, **arguments):
        strata = {s: len(set(pairs.clusters[pairs.strata == s].tolist())) for s in ("x", "y", "z")}
        counts.append(strata)
        return real(pairs, **arguments)

    monkeypatch.setattr(replicates, "contrast_of_pairs", record)
    family = [_family("f", "two-sided", "none", [_test("t1")])]
    replicate_verdicts(_plan(tmp_path, family, stratified=True), table, effects={}, replicates=30, seed=1)
    assert all(c == {"x": 20, "y": 20, "z": 20} for c in counts) and len(counts) == 30
    counts.clear()
    replicate_verdicts(_plan(tmp_path, family, stratified=False), table, effects={}, replicates=30, seed=1)
    assert sum(counts[0].values()) == 60 and len({tuple(c.values()) for c in counts}) > 1


def test_an_unknown_test_is_refused_and_one_without_rows_is_reported_missing(tmp_path, table):
    plan = _plan(tmp_path, [_family("f", "two-sided", "holm",
                                    [_test("t1"), _test("no-rows", "A", "D", metric="rec2")], signflip=True)])
    with pytest.raises(InputError, match=r"no registered test 'H9' to give a true effect \(the plan's tests: "
                                         r"t1, no-rows\)"):
        replicate_verdicts(plan, table, effects={"H9": 1.0}, replicates=5, seed=1)
    with pytest.raises(InputError, match="true effect of test 't1' must be a finite number"):
        replicate_verdicts(plan, table, effects={"t1": float("nan")}, replicates=5, seed=1)
    with pytest.raises(InputError, match="`replicates` must be an integer >= 1; got 0"):
        replicate_verdicts(plan, table, effects={}, replicates=0, seed=1)
    summary = replicate_verdicts(plan, table, effects={"no-rows": 3.0}, replicates=20, seed=1)
    present, absent = summary.tests
    assert absent.test == "no-rows" and absent.shares == {DIFFERENT: 0.0, NO_DIFFERENCE: 0.0, MISSING: 1.0}
    assert absent.truth is None and absent.correct is None and absent.effect == 3.0
    assert present.shares[DIFFERENT] + present.shares[NO_DIFFERENCE] == 1.0
    assert summary.families[0].null_tests == 1
    nothing = _plan(tmp_path, [_family("f", "tost", "none", [_test("no-rows", metric="rec2", margin=3)])])
    alone = replicate_verdicts(nothing, table, effects={}, replicates=3, seed=1)
    assert alone.tests[0].shares[MISSING] == 1.0 and alone.families[0].familywise_error is None
    table_md = summary.to_markdown()
    assert "| f | no-rows | two-sided | +3 |  | 0.0% |  | 0.0% | missing 100.0% | n/a |" in table_md
    assert "| f | holm | 0.05 | 1 |" in table_md


def test_the_summary_depends_on_the_seed_alone_not_on_workers(tmp_path, table):
    plan = _plan(
        tmp_path, [_family("f", "tost", "holm", [_test("t1", margin=3), _test("t2", "A", "C", margin=3)])]
    )
    args = dict(effects={"t2": 1.0}, replicates=40, seed=12, resamples=200)
    one = replicate_verdicts(plan, table, workers=1, **args)
    assert replicate_verdicts(plan, table, workers=3, **args).to_json() == one.to_json()
    assert replicate_verdicts(plan, table, workers=1, **args | {"seed": 13}).to_json() != one.to_json()
    data = one.to_json()
    assert (data["seed"], data["replicates"], data["resamples"], data["max_flips"]) == (12, 40, 200, 200)
    assert [t["test"] for t in data["tests"]] == ["t1", "t2"] and data["families"][0]["family"] == "f"
    registered = replicate_verdicts(plan, table, effects={}, replicates=2, seed=1)
    assert (registered.resamples, registered.max_flips) == (400, 400)  # the plan's counts


def test_a_synthetic_dataset_can_have_an_exact_question_count():
    sizes = SyntheticDataset("qasper", 300, 3.17, n_questions=951).cluster_sizes(np.random.default_rng(0))
    assert len(sizes) == 300 and sizes.sum() == 951 and sizes.min() >= 1
    with pytest.raises(ValueError, match="10 questions cannot fill 300 clusters"):
        SyntheticDataset("qasper", 300, 3.17, n_questions=10).cluster_sizes(np.random.default_rng(0))
