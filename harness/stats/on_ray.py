"""`harness stats --executor ray`: every registered contrast's bootstrap a Ray task; Holm and the verdicts
then run in this process, as locally, so the statistics are identical to a local run."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pandas as pd

from harness.config.executor import Executor
from harness.plan.model import Plan
from harness.stats.contrast import ContrastResult, ResultTable, as_results, compare, missing_for
from harness.stats.families import (
    CompareArguments, FamilyResult, contrast_arguments, planned_families, run_plan,
)
from harness.task_runners import ray_session, run_on_ray


def compare_task(table: ResultTable, arguments: CompareArguments) -> ContrastResult:
    return compare(table, **arguments)


def run_plan_on_ray(
    executor: Executor, plan: Plan, table: pd.DataFrame, *, only: list[str] | None = None,
    judge_rates: Mapping[str, Mapping[str, float]] | None = None, log: Callable[[str], None] = print,
    reader_rates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[FamilyResult]:
    results = as_results(table)
    families = planned_families(plan, only)
    with ray_session(executor) as ray:
        shared = ray.put(results)
        calls = {
            (family.family.id, t.test.id): (shared, contrast_arguments(plan, family.family, t, results))
            for family in families
            for t in family.tests
            for test in (t.test,)
            # a test without results: run_family reports it as missing
            if not missing_for(
                results,
                dataset=test.dataset,
                a=test.a,
                b=test.b,
                retriever=test.retriever,
                metric=test.metric,
                retriever_b=test.retriever_b,
            )
        }
        computed = run_on_ray(ray, compare_task, calls, lambda key, _result, n_done: log(
            f"{key[0]}/{key[1]}: bootstrap done ({n_done} contrasts, ray)"))
    return run_plan(plan, results, only=only, judge_rates=judge_rates, reader_rates=reader_rates,
                    contrast=lambda family, test, _table: computed[(family.id, test.id)])
