"""`harness report`."""

from harness.cli.main import add_study_argument
from harness.report.build import build_report
from harness.study import Study

HELP = ("write results/report/: index.html (one self-contained page), report.md, tables/ (CSV, LaTeX) and "
        "figures/: identity, data, chunk sets, costs, and the outcome sections once every cell is scored")


def add_arguments(parser) -> None:
    add_study_argument(parser)


def run(args) -> int:
    path = build_report(Study.at(args.study))
    print(f"report: wrote {path} (and report.md, tables/, figures/ beside it)")
    return 0
