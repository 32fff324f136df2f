"""Cross-retriever contrasts: one arm under two retrievers, e.g. S under hybrid minus S under BM25."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.errors import InputError
from harness.stats.contrast import compare, paired_differences
from harness.stats.families import run_plan
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.tables import to_markdown

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def _table():
    table = long_table(np.random.default_rng(9), [SyntheticDataset("papers", 20, 2.0)], {"S": 0.0, "P": 0.0},
                       ["hybrid", "bm25"], {"papers": ["rec@512t"]})
    table.loc[table["retriever"] == "hybrid", "value"] += 0.05  # hybrid retrieves 5 points more
    return table


def test_same_arm_under_two_retrievers_pairs_by_qid():
    table = _table()
    pairs = paired_differences(table, dataset="papers", a="S", b="S", retriever="hybrid", metric="rec@512t",
                               retriever_b="bm25")
    hyb = table[(table.arm == "S") & (table.retriever == "hybrid")].set_index("qid")["value"]
    bm = table[(table.arm == "S") & (table.retriever == "bm25")].set_index("qid")["value"]
    assert pairs.diffs == pytest.approx(((hyb - bm).loc[pairs.qids] * 100).to_numpy())
    result = compare(table, dataset="papers", a="S", b="S", retriever="hybrid", retriever_b="bm25",
                     metric="rec@512t", seed=1, resamples=500)
    assert result.estimate == pytest.approx(pairs.diffs.mean()) and result.to_json()["retriever_b"] == "bm25"
    assert 3 < result.estimate < 8  # the 5-point shift, plus noise
    assert "retriever_b" not in compare(table, dataset="papers", a="S", b="P", retriever="hybrid",
                                        metric="rec@512t", seed=1, resamples=200).to_json()


def _plan(tmp_path, test):
    shutil.copytree(DEMO / "plan", tmp_path / "plan")
    path = tmp_path / "plan" / "plan.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["families"][3]["tests"] = [test]
    doc.pop("exploratory", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_plan_test_may_name_retriever_b_and_the_tables_say_so(tmp_path):
    path = _plan(tmp_path, {"id": "X-S-hybrid-bm25", "a": "S", "b": "S", "retriever": "hybrid",
                            "retriever_b": "bm25", "dataset": "papers", "metric": "rec@512t"})
    plan = load_plan(path)
    fam = run_plan(plan, _table(), only=["exploratory"])[0]
    row = fam.rows[0]
    assert row.retriever_b == "bm25" and row.contrast is not None and 3 < row.contrast.estimate < 8
    assert "S (hybrid) - S (bm25)" in to_markdown(fam) and "hybrid vs bm25" in to_markdown(fam)


@pytest.mark.parametrize("test, message", [
    ({"retriever_b": "hybrid"}, r"retriever_b: is the test's own retriever 'hybrid'"),
    ({"retriever_b": "nope"}, r"retriever_b: retriever 'nope' is not registered"),
    ({}, r"compares arm 'S' with itself"),
])
def test_bad_cross_retriever_tests_name_the_key(tmp_path, test, message):
    path = _plan(tmp_path, {"id": "X", "a": "S", "b": "S", "retriever": "hybrid", "dataset": "papers",
                            "metric": "rec@512t", **test})
    with pytest.raises(InputError, match=message):
        load_plan(path)
