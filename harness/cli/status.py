"""`harness status`: the grid as a table and the next `make` target (read-only)."""

from harness.cli.main import add_study_argument
from harness.pipeline.status import format_status, grid_status
from harness.study import Study

HELP = (
    "print the grid: each chunk set (chunks, LLM calls, failures), each cell scored / missing / stale, each "
    "answer cell answered / missing / stale, "
    "and what the next make target would do; writes nothing"
)


def add_arguments(parser) -> None:
    add_study_argument(parser)


def run(args) -> int:
    print(format_status(grid_status(Study.at(args.study))))
    return 0
