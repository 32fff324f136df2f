"""`harness judge-sample`."""

from pathlib import Path

from harness.cli.main import add_study_argument
from harness.pipeline.judge_sample import write_sample
from harness.provenance.recorded import record_release, require_recorded
from harness.study import Study

HELP = (
    "export a seeded sample of the nugget judge's verdicts (nugget, answer, judge verdict) as CSV with an "
    "empty human_verdict column, for the human spot check"
)


def add_arguments(parser) -> None:
    add_study_argument(parser)
    parser.add_argument("--out", required=True, help="CSV file to write")
    parser.add_argument("--n", type=int, default=None, help="rows (default: judge.sample_size)")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed (default: judge.sample_seed)")


def run(args) -> int:
    study = Study.at(args.study)
    require_recorded(
        study, stage="judge-sample", adopt=args.adopt_unrecorded
    )  # it records every released file
    n = write_sample(study, Path(args.out), n=args.n, seed=args.seed)
    record_release(study)  # the sample may be written under results/judges/
    print(
        f"judge-sample: {n} rows -> {args.out}; fill `human_verdict` (support, partial_support, "
        "not_support), "
        "then run `harness judge-agreement FILE --study DIR`"
    )
    return 0
