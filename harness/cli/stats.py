"""`harness stats`: run every family of the plan (plus amendments) on the study's per-question results."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, say
from harness.cli.score import add_executor_arguments
from harness.study import Study
from harness.grid.paths import stats_dir

HELP = 'run every registered family (plan + amendments) on the per-question results and write results/stats/'

DESCRIPTION = (
    "Run the registered statistics: for every family in plan/plan.yaml and amendments/*.yaml, pair arms "
    "by qid in results/per_question/, compute BCa cluster-bootstrap intervals, TOST and cluster sign-flip "
    "p-values, Holm within the family and the plan's verdicts; write results/stats/<family>.json, .md, "
    ".csv, .tex, .png and summary.md. A family whose arms are missing is reported as not run."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    add_study_argument(parser)
    add_output_arguments(parser)
    parser.add_argument("--family", action="append", metavar="ID",
                        help="run only this family (repeatable; default: every family; summary.md then "
                             "lists only these)")
    parser.add_argument("--deviation", metavar="REASON",
                        help="look at outcomes before every configured cell is scored; the look and its "
                             "reason are appended to DEVIATIONS.md and recorded in every output")
    add_threads_argument(parser)
    add_executor_arguments(parser)


def run(args) -> int:
    from harness.pipeline.executors import choose_executor, is_local
    from harness.stats.on_ray import run_plan_on_ray
    from harness.stats.families import run_plan
    from harness.provenance.interim import require_outcomes_allowed
    from harness.stats.tables import exploratory_mark
    from harness.stats.io import (
        load_judge_rates, load_per_question, load_reader_rates, results_frozen_hash, write_outputs,
    )
    from harness.stats.demotion import decided_plan
    from harness.provenance.drift import check_frozen
    from harness.provenance.recorded import record_release, require_recorded

    study = Study.at(args.study)
    check_frozen(
        study, stage="stats", models=False
    )  # an edited plan or input is refused here as in build-arms and score
    require_recorded(study, stage="stats", adopt=args.adopt_unrecorded)  # no hand edit since a stage wrote it
    plan = decided_plan(study)  # a post-outcome amendment's families and tests demoted
    frozen = results_frozen_hash(study)
    deviation = require_outcomes_allowed(study, command="stats", deviation_reason=args.deviation)
    table = load_per_question(study)
    stamp = {"frozen_config_hash": frozen} | ({"deviation": args.deviation} if deviation else {})
    executor = choose_executor(study, args.executor, args.ray_address)
    rates, reader = load_judge_rates(study), load_reader_rates(study)
    if is_local(executor):
        families = run_plan(plan, table, only=args.family, judge_rates=rates, threads=max(1, args.threads),
                            reader_rates=reader)
    else:
        families = run_plan_on_ray(
            executor, plan, table, only=args.family, judge_rates=rates, reader_rates=reader
        )
    results = [replace(r, frozen_config_hash=frozen, deviation=args.deviation if deviation else None)
               for r in families]
    write_outputs(stats_dir(study), results)
    for fam in results:
        if fam.ran:
            verdicts = ", ".join(f"{r.test} {r.verdict}{exploratory_mark(r)}" for r in fam.rows)
            print(f"{fam.family}: {verdicts}")
        else:
            say(args, f"{fam.family}: not run (missing {'; '.join(fam.missing)})", problem=True)
    if plan.analyses and not args.family:
        from harness.analyses.inputs import StudyInputs
        from harness.analyses.run import RAN, run_analyses
        from harness.files import atomic_write_json

        shutil.rmtree(stats_dir(study) / "analyses", ignore_errors=True)  # no record outlives its plan entry
        for record in run_analyses(plan, table, StudyInputs(study, frozen)):
            atomic_write_json(stats_dir(study) / "analyses" / f"{record['id']}.json", record | stamp)
            state = record["status"] if record["status"] == RAN else \
                "blocked: " + "; ".join(f"{m['what']} (run `{m['target']}`)" for m in record["missing"])
            say(
                args,
                f"analysis {record['id']} ({record['analysis']}): {state}",
                problem=record["status"] != RAN,
            )
    record_release(study)
    print(f"wrote {stats_dir(study)}")
    return 0


def add_threads_argument(parser) -> None:
    """Shared by `stats` and `audit` (which recomputes every family)."""
    parser.add_argument(
        "--threads",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="threads computing the contrasts (default: the cores, at most 4); the output is the "
        "same for any count",
    )
