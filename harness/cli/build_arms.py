"""`harness build-arms`."""

from harness.arms.build import build_arms
from harness.cli.main import add_study_argument
from harness.provenance.freeze import check_frozen
from harness.study import Study

HELP = "build every arm the study config names, for every dataset, into results/chunks/ (resumable)"


def add_arguments(parser) -> None:
    add_study_argument(parser)
    parser.add_argument("--dataset", action="append", help="only this dataset (repeatable)")
    parser.add_argument("--arm", action="append", help="only this arm (repeatable)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args) -> int:
    study = Study.at(args.study)
    frozen = check_frozen(study, stage="build-arms")
    builds = build_arms(study, datasets=args.dataset, arms=args.arm, frozen_hash=frozen, progress=not args.no_progress)
    fresh = sum(not b.skipped for b in builds)
    print(f"build-arms: {len(builds)} chunk set(s), {fresh} built, {len(builds) - fresh} up to date "
          f"(frozen config {frozen[:12]})")
    return 0
