"""Freeze refuses a plan that names what the config does not define, before anything is built."""

from __future__ import annotations

import pytest

from harness.errors import InputError
from harness.provenance.freeze import freeze
from harness.config.datasets import DATASET
from harness.config.fields import Where
from harness.data.adapters import ADAPTERS
from harness.provenance.plan_check import check_plan_against_config
from harness.study import Study
from provenance_support import edit_yaml, make_study, write_yaml


@pytest.fixture
def study(tmp_path):
    return Study.at(make_study(tmp_path / "study"))


def _edit_plan(study, change):
    edit_yaml(study.plan_path, change)
    return Study.at(study.root)


def _first_test(plan):
    return plan["families"][0]["tests"][0]


def test_the_fixture_plan_passes(study):
    plan = check_plan_against_config(study)
    assert plan.family("primary").tests[0].id == "H1-papers"


def _unknown_arm(plan):
    plan["arms"].append("Z")
    _first_test(plan)["b"] = "Z"


def _unknown_retriever(plan):
    plan["retrievers"].append("splade")
    _first_test(plan)["retriever"] = "splade"


def _unknown_metric(plan):
    plan["datasets"]["papers"]["metrics"].append("rec@2048t")  # a budget the config does not register
    _first_test(plan)["metric"] = "rec@2048t"


def _unknown_stratum(plan):
    plan["families"][1]["tests"][2]["subset"] = {"strata": ["symfony"]}


def _arm_not_built_for_the_dataset(plan):
    plan["families"][1]["tests"][2].update(
        a="E", b="S+T"
    )  # H3-F512c-docs; the demo builds E on papers (and papers-pooled) only


CASES = [
    (
        _arm_not_built_for_the_dataset,
        r"test 'H3-F512c-docs' \(family H3\): a: arm 'E' is built for datasets papers, papers-pooled only, "
        r"not 'docs'",
    ),
    (
        _unknown_arm,
        r"plan\.yaml: test 'H1-papers' \(family primary\): b: unknown arm 'Z' .*configs/study\.yaml defines "
        r"it nowhere",
    ),
    (_unknown_retriever, r"plan\.yaml: test 'H1-papers' \(family primary\): unknown retriever 'splade'"),
    (
        _unknown_metric,
        r"plan\.yaml: test 'H1-papers' \(family primary\): unknown metric 'rec@2048t' for dataset 'papers'",
    ),
    (
        _unknown_stratum,
        r"plan\.yaml: test 'H3-F512c-docs' \(family H3\): unknown stratum 'symfony' of dataset 'docs' "
        r"\(declared strata: none\)",
    ),
    (
        lambda p: _first_test(p).update(rule="bayes"),
        r"plan\.yaml: families\[0\]\.tests\[0\]\.rule: unknown decision rule 'bayes' .*\[test H1-papers\]",
    ),
]


@pytest.mark.parametrize("change, message", CASES)
def test_freeze_names_the_file_the_test_and_the_unknown_name(study, change, message):
    study = _edit_plan(study, change)
    with pytest.raises(InputError, match=message):
        freeze(study)
    assert not study.frozen_path.exists()  # nothing was frozen


def test_an_amendment_naming_an_unknown_arm_is_named(study):
    write_yaml(study.amendments_dir / "0002-more.yaml", {
        "id": "0002", "created_at": "2025-03-01T00:00:00Z", "before_outcomes": True, "reason": "r",
        "adds": {"arms": ["Mq"], "families": [{
            "id": "H4", "description": "d", "tier": "secondary", "multiplicity": "holm",
            "decision": {"rule": "two-sided", "signflip_required": True}, "seed": 1,
            "tests": [{"id": "H4-M", "a": "Mq", "b": "E", "retriever": "hybrid", "dataset": "papers",
                       "metric": "rec@512t"}]}]}})
    (study.amendments_dir / "0002-more.md").write_text("# 0002\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"0002-more\.yaml: test 'H4-M' \(family H4\): a: unknown arm 'Mq'"):
        freeze(Study.at(study.root))


def test_answer_level_metrics_are_known_to_validation(study):
    study = _edit_plan(study, lambda p: _first_test(p).update(metric="answer_f1@512t"))
    assert check_plan_against_config(study).family("primary").tests[0].metric == "answer_f1@512t"


def _strata(entry: dict) -> tuple[str, ...]:
    cfg = DATASET(entry, Where(None))
    return ADAPTERS[cfg.adapter].strata(cfg)


def test_declared_strata():
    assert _strata(
        {"adapter": "freshstack", "metric_set": "freshstack", "domains": {"laravel": {}, "yolo": {}}}
    ) == ("laravel", "yolo")
    assert _strata({"adapter": "question_evidence", "metric_set": "qasper", "document": "d.md",
                    "questions": "q.json"}) == ("train", "held-out")
    assert _strata({"adapter": "jsonl", "metric_set": "qasper"}) == ()


def _drop_reader_arm(dataset: str, arm: str):
    def change(cfg):
        for cell in cfg["reader"]["cells"]:
            if cell["dataset"] == dataset:
                cell["arms"] = [a for a in cell["arms"] if a != arm]
    return change


def test_an_answer_test_the_reader_does_not_answer_fails_at_freeze(study):
    edit_yaml(study.config_path, _drop_reader_arm("papers", "S+T"))
    study = Study.at(study.root)
    with pytest.raises(
        InputError,
        match=r"plan\.yaml: test 'A1-papers' \(family answers\): metric answer_f1@512t is "
        r"measured by the answer stage, but no reader cell papers/S\+T/hybrid;",
    ):
        freeze(study)
    assert not study.frozen_path.exists()


def test_an_answer_test_on_another_budget_than_the_reader_fails_at_freeze(study):
    edit_yaml(
        study.config_path, lambda cfg: cfg["reader"].update(budgets={"qasper": 256, "freshstack": 1024})
    )
    study = Study.at(study.root)
    with pytest.raises(InputError, match=r"test 'A1-papers' .* the reader's budget is 256 tokens"):
        check_plan_against_config(study)


def test_a_non_answer_test_needs_no_reader_cell(study):
    # H1-papers (rec@512t) names E and S+T: the reader answering neither does not concern it
    edit_yaml(study.config_path, _drop_reader_arm("papers", "E"))
    edit_yaml(study.plan_path, lambda p: p["families"].__setitem__(
        slice(None), [f for f in p["families"] if f["id"] != "answers"]))
    assert check_plan_against_config(Study.at(study.root)).family("primary").tests[0].id == "H1-papers"
