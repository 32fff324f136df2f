"""`harness <command>`: each command lives in harness/cli/<command>.py and defines
HELP (one line), add_arguments(parser) and run(args) -> exit code."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from harness import __version__
from harness.errors import HarnessError

# command name -> module name, in pipeline order
COMMANDS = {
    "config": "config",
    "select": "select",
    "chunk": "chunk",
    "freeze": "freeze",
    "build-arms": "build_arms",
    "score": "score",
    "answer": "answer",
    "judge-sample": "judge_sample",
    "judge-agreement": "judge_agreement",
    "stats": "stats",
    "compare": "compare",
    "estimate": "estimate",  # planning: tokens and dollars of every paid arm before any call
    "power": "power",  # planning: clusters a TOST needs, from a pilot
    "audit": "audit",
    "report": "report",
    "qasper-eval": "qasper_eval",  # stand-alone scorer, outside the pipeline
    "lab": "lab",  # chunking lab on one document, no study directory
    "status": "status",
}


def _load(module: str):
    try:
        return importlib.import_module(f"harness.cli.{module}")
    except ModuleNotFoundError as e:
        if e.name == f"harness.cli.{module}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Pre-registered experiment harness for RAG indexing studies. "
        "A study is a directory (plan/, amendments/, configs/, prompts/, selection/, results/).",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = _load(module)
        if mod is None:
            p = sub.add_parser(name, help="(not implemented yet)")
            p.set_defaults(_run=_not_implemented(name))
            continue
        p = sub.add_parser(name, help=mod.HELP.replace("%", "%%"), description=mod.HELP.replace("%", "%%"))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def add_study_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--study",
        default=os.environ.get("STUDY", "."),
        help="study directory (default: $STUDY or the current directory)",
    )


def _not_implemented(name: str):
    def run(args) -> int:
        print(f"harness {name}: this stage is not implemented yet", file=sys.stderr)
        return 3

    return run


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 1
    try:
        return int(args._run(args) or 0)
    except HarnessError as e:
        print(f"harness {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted; completed work is kept, rerun to resume", file=sys.stderr)
        return 130
