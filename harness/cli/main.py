"""`harness <command>`: each command lives in harness/cli/<command>.py and defines
HELP (one line), add_arguments(parser) and run(args) -> exit code."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import sys

from harness import __version__
from harness.cli.output import applied
from harness.errors import HarnessError
from harness.pipeline.stages import PIPELINE

# command name -> module name, in pipeline order
COMMANDS = {
    "init": "init",  # a new study around your data
    "config": "config",
    "fetch": "fetch",  # the declared inputs, fetched and pinned (data/SOURCES.lock)
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
    "rehearse": "rehearse",  # planning: every stage on a simulated twin of the study
    "audit": "audit",
    "release": "release",  # the release hash to publish
    "report": "report",
    "qasper-eval": "qasper_eval",  # stand-alone scorer, outside the pipeline
    "lab": "lab",  # chunking lab on one document, no study directory
    "glossary": "glossary",  # the registries' glossary (docs/glossary.md)
    "status": "status",
    "run-all": "run_all",  # every stage above in order (make all)
}

# the commands that write into a study: each holds the study lock while it runs (harness.study_lock), and
# those that record released files may adopt unrecorded ones as a logged deviation (--adopt-unrecorded)
WRITING = ("fetch", "select", "freeze", "estimate", "build-arms", "score", "answer", "judge-sample",
           "judge-agreement", "stats", "report")
RECORDING = ("build-arms", "score", "answer", "judge-sample", "judge-agreement", "stats")
# the commands that write into a study only to log a look at its outcomes (--deviation, appended to
# DEVIATIONS.md): with --deviation they hold the lock of the study their module's looked_at_study names
LOOKING = ("compare", "power")


EXIT_CODES = """exit codes (every command):
  0    done; for audit, every check passed
  1    an error (the message names the file, key or line), or an audit FAIL
  2    the inputs drifted from frozen_config.json (the diff is printed), or the command line is wrong
  3    audit only: nothing failed, but the registration or the release is NOT VERIFIABLE (no git
       history and no --registered-hash, or no --release-hash): not a pass
  130  interrupted; completed work is kept, rerun to resume"""


def _load(module: str):
    return importlib.import_module(f"harness.cli.{module}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or with `only` that one: loading one command's module keeps
    start-up quick (the report and stats modules pull in plotting and SciPy)."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Pre-registered experiment harness for RAG indexing studies. "
        "A study is a directory (plan/, amendments/, configs/, prompts/, selection/, results/).",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name == only:
            add_command(sub, name)
    return parser


def add_command(sub, name: str) -> argparse.ArgumentParser:
    """`harness NAME`'s own parser, added to `sub` (the Python API parses its keyword arguments with it too,
    so both take the same options, defaults and checks)."""
    mod = _load(COMMANDS[name])
    p = sub.add_parser(name, help=mod.HELP.replace("%", "%%"), description=mod.HELP.replace("%", "%%"))
    mod.add_arguments(p)
    if name in WRITING or name in LOOKING:
        p.add_argument("--wait", action="store_true",
                       help="when another harness process is writing the study, wait for it instead of "
                            "exiting")
    if name in RECORDING:
        p.add_argument("--adopt-unrecorded", metavar="REASON",
                       help="keep released files the write journal does not hold (a lost journal, a hand "
                            "edit) and record them; REASON (required) and the files go to DEVIATIONS.md")
    p.set_defaults(_run=mod.run, command=name)
    return p


def overview() -> str:
    """What `harness` with no command prints: the stages in pipeline order, one line each."""
    width = max(len(name) for name, _ in PIPELINE)
    others = [name for name in COMMANDS if name not in dict(PIPELINE)]
    return "\n".join(
        ["harness: pre-registered RAG indexing studies. The stages, in pipeline order "
         "(`harness STAGE --study DIR`, or `make STAGE STUDY=DIR`):", ""]
        + [f"  {name:<{width}}  {line}" for name, line in PIPELINE]
        + ["", f"Other commands: {', '.join(others)}.", "`harness --help` lists every command; "
           "`harness COMMAND --help` explains one."])


def add_study_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--study",
        default=os.environ.get("STUDY", "."),
        help="study directory (default: $STUDY or the current directory)",
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = next((a for a in argv if not a.startswith("-")), None)
    if named is not None and named not in COMMANDS:
        close = difflib.get_close_matches(named, list(COMMANDS), n=1, cutoff=0.5)
        hint = f"; did you mean `harness {close[0]}`?" if close else ""
        print(f"harness: {named!r} is not a command{hint} (`harness --help` lists them)", file=sys.stderr)
        return 2
    parser = build_parser(named if named in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        print(overview())
        return 0
    try:
        return execute(args, argv)
    except HarnessError as e:
        print(f"harness {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(
            f"harness {args.command}: interrupted; completed work is kept, rerun to resume", file=sys.stderr
        )
        return 130


def execute(args, argv: list[str]) -> int:
    """Run a parsed command: --quiet applied and, for a writing command, the study lock held. A HarnessError
    propagates (main prints it; the Python API raises it)."""
    with applied(args), _locked(args, argv):
        return int(args._run(args) or 0)


def _locked(args, argv: list[str]):
    """The study lock around a writing command, or a look logged as a deviation (the one place every
    writing command takes it)."""
    if args.command in WRITING and getattr(args, "study", None) is not None:
        from harness.study import Study

        study = Study.at(args.study)
    elif args.command in LOOKING and getattr(args, "deviation", None):
        study = _load(COMMANDS[args.command]).looked_at_study(args)
    else:
        return contextlib.nullcontext()
    if study is None:  # a table outside any study: no DEVIATIONS.md to append to
        return contextlib.nullcontext()
    from harness.study_lock import study_lock

    return study_lock(study.lock_path, "harness " + " ".join(argv), wait=args.wait)
