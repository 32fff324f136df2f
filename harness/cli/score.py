"""`harness score`."""

from harness.cli.main import add_study_argument
from harness.pipeline.score import score_study
from harness.provenance.freeze import check_frozen
from harness.study import Study

HELP = ("rank every arm under every retriever (each question searches only its scope) and write run files "
        "and per-question results; complete cells are skipped, so an interrupted run resumes")


def add_arguments(parser) -> None:
    add_study_argument(parser)
    parser.add_argument("--dataset", action="append", help="only this dataset (repeatable)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    study = Study.at(args.study)
    frozen = check_frozen(study, stage="score")
    rows = score_study(study, frozen_hash=frozen, datasets=args.dataset, progress=not args.no_progress)
    for name, n in rows.items():
        print(f"score: {name}: {n} per-question rows -> results/per_question/{name}.parquet (frozen config {frozen[:12]})")
    return 0
