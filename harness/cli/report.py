"""`harness report`."""

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, say
from harness.errors import HarnessError
from harness.provenance.drift import check_frozen
from harness.provenance.release import publishable_release_hash
from harness.report.build import build_report
from harness.study import Study

HELP = ("write results/report/: index.html (one self-contained page), report.md, tables/ (CSV, LaTeX) and "
        "figures/: identity, data, chunk sets, costs, and the outcome sections once every cell is scored")


def add_arguments(parser) -> None:
    add_study_argument(parser)
    add_output_arguments(parser)


def run(args) -> int:
    study = Study.at(args.study)
    if study.frozen_path.is_file():  # before the freeze no outcome exists and there is nothing to drift from
        check_frozen(study, stage="report", models=False)
    path = build_report(study)
    print(f"report: wrote {path} (and report.md, tables/, figures/ beside it)")
    try:
        digest = publishable_release_hash(study)
    except HarnessError as e:
        say(args, f"no release hash: {e}", problem=True)
    else:
        print(f"release hash {digest} (publish it beside the registered hash; `harness audit --release-hash "
              f"{digest}` checks the study against it)")
    return 0
