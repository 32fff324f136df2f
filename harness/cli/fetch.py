"""`harness fetch`: fetch, check and pin the study's declared sources (harness.sources)."""

from __future__ import annotations

import argparse

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress
from harness.sources.fetch import fetch, finish, plan
from harness.study import Study

HELP = "fetch every declared `source:` that is missing, verify the rest against data/SOURCES.lock"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_study_argument(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list every file it would write or verify, with its source; no network",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="fetch every source again at its newest (or newly declared) revision and rewrite the lock",
    )
    add_output_arguments(parser)


def run(args) -> int:
    study = Study.at(args.study)
    if args.dry_run:
        lines = plan(study)
        for line in lines:
            print(line)
        print(f"{len(lines)} declared source(s); nothing fetched (--dry-run)")
        return 0
    report = fetch(study, update=args.update, progress=progress(args))
    return finish(report, study, update=args.update)
