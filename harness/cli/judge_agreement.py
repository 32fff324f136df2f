"""`harness judge-agreement`."""

from pathlib import Path

from harness.metrics.judge_agreement import read_spot_check
from harness.pipeline.judge_sample import record_agreement
from harness.files import note_written, sha256_file
from harness.grid.paths import results_dir
from harness.provenance.recorded import record_release, require_recorded
from harness.study import Study

HELP = "Cohen's kappa between the judge and a human on a labelled spot-check CSV (the plan requires >= 0.6)"


def add_arguments(parser) -> None:
    parser.add_argument("file", help="CSV with judge_verdict and human_verdict columns (from judge-sample)")
    parser.add_argument("--study", default=None,
                        help="also record the result in this study's results/judges/ (stats reads it)")


def run(args) -> int:
    result = read_spot_check(args.file)
    kappa = "undefined" if result.kappa is None else f"{result.kappa:.4f}"
    print(f"judge-agreement: {result.rows} rows, observed agreement {result.observed_agreement:.4f}, "
          f"expected {result.expected_agreement:.4f}, kappa {kappa}: "
          + ("PASS (>= %g)" % result.threshold if result.passed else f"FAIL ({result.reason})"))
    if args.study is not None:
        study = Study.at(args.study)
        labelled = Path(args.file).resolve()
        # the labelled file is the human's, edited by design: this command takes it as its declared input
        require_recorded(
            study,
            stage="judge-agreement",
            exempt=lambda rel: results_dir(study) / rel == labelled,
            adopt=args.adopt_unrecorded,
        )
        path = record_agreement(study, result, Path(args.file))
        note_written(
            labelled, sha256_file(labelled), labelled.stat().st_size
        )  # journaled when under results/
        record_release(study)
        print(f"judge-agreement: recorded in {path}")
    return 0 if result.passed else 1
