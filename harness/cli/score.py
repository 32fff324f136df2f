"""`harness score`."""

import contextlib

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress
from harness.config.executor import EXECUTORS
from harness.pipeline.executors import choose_executor, is_local
from harness.task_runners import ray_session
from harness.pipeline.score import score_study
from harness.provenance.drift import check_frozen
from harness.provenance.recorded import assembled_table, record_release, require_recorded
from harness.study import Study

HELP = ("rank every arm under every retriever (each question searches only its scope) and write run files "
        "and per-question results; complete cells are skipped, so an interrupted run resumes")


def add_arguments(parser) -> None:
    add_study_argument(parser)
    parser.add_argument("--dataset", action="append", help="only this dataset (repeatable)")
    add_output_arguments(parser)
    add_executor_arguments(parser)
    add_workers_argument(parser)


def run(args) -> int:
    study = Study.at(args.study)
    frozen = check_frozen(study, stage="score")
    # a part edited by hand would be assembled into the table and recorded afresh; the tables are rebuilt
    require_recorded(study, stage="score", exempt=assembled_table, adopt=args.adopt_unrecorded)
    executor = choose_executor(study, args.executor, args.ray_address, args.workers)
    # one Ray session for every dataset (starting a local instance takes seconds)
    with contextlib.nullcontext() if is_local(executor) else ray_session(executor):
        rows = score_study(study, frozen_hash=frozen, datasets=args.dataset, progress=progress(args),
                           executor=executor)
    record_release(study)
    for name, n in rows.items():
        print(
            f"score: {name}: {n} per-question rows -> results/per_question/{name}.parquet (frozen config "
            f"{frozen[:12]})"
        )
    return 0


def add_executor_arguments(parser) -> None:
    """Shared by `score` and `stats`: where the cells run (default: the config's `executor:`, else local)."""
    parser.add_argument("--executor", choices=EXECUTORS, help="local (this machine) or ray (each arm a task)")
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="an existing Ray cluster (e.g. ray://head:10001); default: start a local instance",
    )


def add_workers_argument(parser) -> None:
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local: score N arms at once, each in its own process (default: the config's "
                             "executor.workers, else 1, in this process); ray: the CPUs of a local instance. "
                             "The output is the same for any N")
