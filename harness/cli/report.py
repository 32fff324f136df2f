"""`harness report`."""

from harness.cli.main import add_study_argument
from harness.report.build import build_report
from harness.study import Study

HELP = ("write results/report/report.md: registration timeline, input drops, chunk-set diagnostics, LLM cost "
        "and key diagnostics, and the verdict summary once every configured cell is scored")


def add_arguments(parser) -> None:
    add_study_argument(parser)


def run(args) -> int:
    path = build_report(Study.at(args.study))
    print(f"report: wrote {path}")
    return 0
