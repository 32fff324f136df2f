"""`--no-progress` and `--quiet`: one convention for every command that works for more than a second.

--no-progress turns off progress bars. --quiet also turns off informational output: everything the command
prints to stdout. Errors, and warnings about dropped or failed items (data lost on loading, a family not
run, an analysis blocked, an audit row that failed or cannot be verified, a judge control that failed), go
to stderr through `warn` and are never suppressed, so a quiet run that lost something still says so.

Commands whose stdout is the result itself (compare and power print JSON) take both flags with
`result_on_stdout`: --quiet then silences their notes on stderr and their progress, never the result. Commands
that only print what was asked (config, status, chunk, qasper-eval, lab, judge-agreement) take neither.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


def add_output_arguments(parser, *, result_on_stdout: bool = False) -> None:
    parser.add_argument("--no-progress", action="store_true", help="no progress bars or progress lines")
    if result_on_stdout:
        parser.add_argument("--quiet", action="store_true",
                            help="no progress and no notes on stderr; the result still goes to stdout")
    else:
        parser.add_argument("--quiet", action="store_true",
                            help="no progress and no informational output; errors and warnings about dropped "
                                 "or failed items still go to stderr")
    parser.set_defaults(result_on_stdout=result_on_stdout)


def takes_output_arguments(args) -> bool:
    return hasattr(args, "quiet") and hasattr(args, "no_progress")


def progress(args) -> bool:
    """Whether the command may draw progress bars and progress lines."""
    return not (args.no_progress or args.quiet)


def warn(message: str) -> None:
    """A warning about a dropped or failed item, or anything a quiet run must still say: always on stderr."""
    print(message, file=sys.stderr, flush=True)


def note(args, text: str) -> None:
    """An informational line beside a result printed on stdout: on stderr, and not under --quiet."""
    if not args.quiet:
        print(text, file=sys.stderr, flush=True)


def say(args, text: str, *, problem: bool = False) -> None:
    """A line of the command's output on stdout; a `problem` (a drop, a failure) under --quiet goes to
    stderr instead, so quiet runs still report it while normal runs keep one stream."""
    if problem and args.quiet:
        warn(text)
    else:
        print(text)


@contextlib.contextmanager
def applied(args) -> Iterator[None]:
    """The one place --quiet takes effect around a command's run (harness.cli.main): stdout goes nowhere.
    Progress bars follow `progress(args)`, which each command passes to its stage."""
    if not takes_output_arguments(args) or not args.quiet or getattr(args, "result_on_stdout", False):
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        yield
