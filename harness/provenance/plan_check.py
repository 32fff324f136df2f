"""Freeze-time check that the registered plan only names what configs/study.yaml defines.

A test naming an arm, retriever, dataset, metric or stratum the config does not define would otherwise
pass `freeze` and `build-arms` and surface only when `stats` runs, after outcomes exist; so would an
answer-level test whose reader cell the config never answers. The plan's own
schema errors (an unknown decision rule, a malformed subset) are raised by the plan loader, which this
check runs first. Every message names the plan file, the test id and the unknown name.
"""

from __future__ import annotations

from harness.data.adapters import ADAPTERS
from harness.errors import InputError
from harness.metrics.registry import budgets_from_config, is_answer_level, known_metric_names
from harness.grid.cells import answer_cells
from harness.plan.load import load_study_plan
from harness.plan.model import Plan, TestPlan
from harness.study import Study



def check_plan_against_config(study: Study) -> Plan:
    """Load the plan and amendments and refuse any test that names something the config lacks, or an
    answer-level test (answer_f1, nugget_recall) that the reader config does not answer."""
    plan = load_study_plan(study)
    files = {"plan": plan.path} | {f"amendment {a.id}": a.path for a in plan.amendments}
    for family in plan.families:
        for test in family.tests:
            problem = _unknown_name(study, test)
            if problem:
                raise InputError(f"test {test.id!r} (family {family.id}): {problem}; "
                                 f"configs/study.yaml defines it nowhere", path=files[test.source])
            gaps = answer_test_gaps(study, test)
            if gaps:
                raise InputError(
                    f"test {test.id!r} (family {family.id}): metric {test.metric} is measured by the "
                    f"answer stage, but {'; '.join(gaps)}; configs/study.yaml must answer it "
                    "(`reader.cells`, `reader.budgets`, `judge`)",
                    path=files[test.source],
                )
            if is_answer_level(test.metric) and plan.datasets[test.dataset].reader_acceptance is None:
                # no default threshold: an unregistered bar could be chosen after seeing the reader
                raise InputError(
                    f"`datasets.{test.dataset}.reader_acceptance` is missing: test {test.id!r} (family "
                    f"{family.id}, {files[test.source].name}) is answer-level ({test.metric}), so the "
                    "plan must register the reader's control thresholds {positive_min, negative_max}",
                    path=plan.path,
                )
    return plan


def _unknown_name(study: Study, test: TestPlan) -> str | None:
    for side, arm in (("a", test.a), ("b", test.b)):
        if arm not in study.arms:
            return f"{side}: unknown arm {arm!r} (config arms: {', '.join(study.arms)})"
    for retriever in (test.retriever, test.retriever_b):
        if retriever is not None and retriever not in study.retrievers:
            return f"unknown retriever {retriever!r} (config retrievers: {', '.join(study.retrievers)})"
    datasets = study.config.datasets
    if test.dataset not in datasets:
        return f"unknown dataset {test.dataset!r} (config datasets: {', '.join(datasets)})"
    for side, arm in (("a", test.a), ("b", test.b)):
        only = study.arms[arm].datasets
        if only is not None and test.dataset not in only:
            return f"{side}: arm {arm!r} is built for datasets {', '.join(only)} only, not {test.dataset!r}"
    dataset = datasets[test.dataset]
    metric_set = dataset.metric_set
    assembly = study.config.assembly
    metrics = known_metric_names(metric_set, budgets_from_config(study.config.budgets, metric_set),
                                 assembly.suffix if assembly is not None else "t")
    metrics += tuple(study.config.ir_measures or ())
    if test.metric not in metrics:
        return f"unknown metric {test.metric!r} for dataset {test.dataset!r} (metric_set {metric_set})"
    if test.subset is not None and test.subset.strata is not None:
        strata = ADAPTERS[dataset.adapter].strata(dataset)
        for stratum in test.subset.strata:
            if stratum not in strata:
                return (f"unknown stratum {stratum!r} of dataset {test.dataset!r} "
                        f"(declared strata: {', '.join(strata) or 'none'})")
    return None


def answer_test_gaps(study: Study, test: TestPlan) -> list[str]:
    """Why the config cannot run one plan test on an answer-level metric (empty: it can, or the test is not
    answer-level): a reader cell missing for either arm, a budget other than the reader's, or a judged test
    without a judge of the plan's name."""
    budget = test.metric.partition("@")[2]
    if not is_answer_level(test.metric):
        return []
    reader, judge = study.config.reader, study.config.judge
    covered = {cell.names for cell in answer_cells(study)}
    cells = dict.fromkeys((test.dataset, arm, test.retriever) for arm in (test.a, test.b))
    why = [f"no reader cell {'/'.join(names)}" for names in cells if names not in covered]
    dataset = study.config.datasets.get(test.dataset)
    metric_set = dataset.metric_set if dataset is not None else None
    if metric_set is not None and budget != f"{reader.budgets.get(metric_set)}t":
        why.append(f"the reader's budget is {reader.budgets.get(metric_set)} tokens")
    if test.acceptance is not None and (judge.model is None or test.acceptance.judge != judge.name):
        why.append(f"no judge named {test.acceptance.judge!r} with a model")
    return why
