"""`harness config`: print the study's effective config (every default filled in) as YAML or JSON."""

from __future__ import annotations

import argparse
import json

import yaml

from harness.cli.main import add_study_argument
from harness.config import to_plain
from harness.study import Study

HELP = "check configs/study.yaml and print the effective config, defaults filled in (what freeze records)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_study_argument(parser)
    parser.add_argument(
        "--format", choices=("yaml", "json"), default="yaml", help="output format (default yaml)"
    )


def render(study: Study, fmt: str) -> str:
    plain = to_plain(study.config)
    if fmt == "json":
        return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, width=120)


def run(args) -> int:
    print(render(Study.at(args.study), args.format), end="")
    return 0
