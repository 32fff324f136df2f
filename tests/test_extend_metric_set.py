"""docs/extending.md, A metric set, as a test: a new set added in its two registries only (what it is, and how
it scores) is named by a dataset, registered in the plan and rehearsed: its metrics fill the per-question
table, and its tests are decided and reported."""

from __future__ import annotations

from harness.config import metric_sets
from harness.config.metric_sets import EVIDENCE_STRINGS, MetricSetSpec
from harness.metrics import qasper, registry
from harness.metrics.registry import MetricSet

from extend_support import (
    DATASET, edit_config, edit_yaml, scored_metrics, register_test, rehearse, report, starter_study,
)

NAME = "found"
METRICS = ["found@256t", "found@512t", "top@1", "top@3"]
TEST = "X-found"


def score_found(question, ranked, budgets, ks, *, tokens, grams):
    """found@Bt: any gold evidence recovered within B tokens; top@k: a gold chunk among the first k."""
    got = dict(qasper.score_qasper(question, ranked, budgets, ks, tokens=tokens, grams=grams))
    return ([(f"found@{b}t", float(got[f"rec@{b}t"] > 0)) for b in budgets]
            + [(f"top@{k}", got[f"hit@{k}"]) for k in ks])


def test_a_new_metric_set_runs_from_config_and_plan_to_the_report(tmp_path, monkeypatch):
    monkeypatch.setitem(metric_sets.METRIC_SETS, NAME, MetricSetSpec(
        reader_budget=512, margin=5, primary_metric="found@512t", assembles=False, gold=EVIDENCE_STRINGS))
    monkeypatch.setitem(registry.METRIC_SETS, NAME, MetricSet(
        name=NAME, default_budgets=(256, 512), ks=(1, 3), score=score_found, budget_metrics=("found",),
        budget_interleaved=False, k_metrics=("top",), gold_chunks=registry.METRIC_SETS["qasper"].gold_chunks))
    study = starter_study(tmp_path)

    def use_the_set(config: dict) -> None:
        config["datasets"][DATASET]["metric_set"] = NAME
        config["budgets"] = {NAME: [256, 512]}

    edit_config(study, use_the_set)
    edit_yaml(study / "plan" / "plan.yaml", lambda plan: plan["datasets"][DATASET].update(
        {"primary_metric": "found@512t", "metrics": METRICS}))
    edit_yaml(study / "plan" / "plan.yaml", lambda plan: plan.update({"families": [
        {**f, "tests": [t | {"metric": "found@512t"} for t in f["tests"]]} for f in plan["families"]]}))
    register_test(study, {"id": TEST, "a": "S+T", "b": "S", "retriever": "bm25", "dataset": DATASET,
                          "metric": "top@3"})

    twin = rehearse(study, tmp_path / "twin")

    assert scored_metrics(twin) == set(METRICS)
    text = report(twin)
    assert f"| {TEST} | S+T - S | {DATASET} | bm25 | top@3 |" in text
    assert "| H3-F512c | S - F512c | corpus | hybrid | found@512t |" in text
