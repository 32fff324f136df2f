"""A command run from Python: keyword arguments parsed by `harness COMMAND`'s own parser, then run as
`harness` runs it (harness.cli.main.execute: --quiet applied, the study lock held by a writing command).

A keyword is an option's name as `harness COMMAND --help` spells it, dashes as underscores (`no_progress`,
`adopt_unrecorded`); None leaves the option out, so the command's own default applies.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.cli.main import COMMANDS, add_command, execute
from harness.errors import HarnessError


def command_parser(command: str, where: str) -> argparse.ArgumentParser:
    if command not in COMMANDS:
        raise HarnessError(f"{where}: no command {command!r} (commands: {', '.join(COMMANDS)})")
    return add_command(argparse.ArgumentParser(prog="harness").add_subparsers(), command)


def options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Keyword name -> the option it sets (argparse lists a parser's actions only on `_actions`)."""
    return {a.dest: a for a in parser._actions if a.dest not in ("help", argparse.SUPPRESS)}


def words(action: argparse.Action, value: Any, where: str) -> list[str]:
    """The command-line words that give `action` the value, for argparse to convert and check."""
    if value is None:
        return []
    many = isinstance(value, (list, tuple))
    if many and action.nargs not in ("+", "*") and not isinstance(action, argparse._AppendAction):
        raise HarnessError(f"{where}: {action.dest}= takes one value; got {value!r}")
    given = [str(v) for v in value] if many else [str(value)]
    if not action.option_strings:  # a positional argument
        return given
    flag = max(action.option_strings, key=len)
    if action.nargs == 0:  # a switch (store_true): the flag, or nothing
        if not isinstance(value, bool):
            raise HarnessError(f"{where}: {action.dest}= is a switch (True or False); got {value!r}")
        return [flag] if value == action.const else []
    if isinstance(action, argparse._AppendAction):  # a repeatable option: the flag once per value
        return [w for v in given for w in (flag, v)]
    return [flag, *given]


def run_command(command: str, study: Path, options: Mapping[str, Any], *, where: str) -> int:
    """`harness COMMAND --study STUDY` with `options`: its exit code; a HarnessError (a wrong option or value
    included) is raised, naming `where`."""
    parser = command_parser(command, where)
    known = options_of(parser)
    if "study" not in known:
        raise HarnessError(f"{where}: `harness {command}` works on no study (it takes no --study)")
    argv = [command, "--study", str(study)]
    for key, value in options.items():
        if key == "study" or key not in known:
            takes = ", ".join(sorted(k for k in known if k != "study"))
            raise HarnessError(f"{where}: no option {key!r}; `harness {command}` takes {takes}")
        argv += words(known[key], value, where)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):  # argparse prints its usage and message, then exits
            args = parser.parse_args(argv[1:])
    except SystemExit:
        message = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "bad options"
        raise HarnessError(f"{where}: {message.partition('error: ')[2] or message}") from None
    return execute(args, argv)
