"""`harness glossary`: the glossary of every declared arm kind, retriever type, metric, rule, verdict, tier
and
instrument, as Markdown (docs/glossary.md is its output)."""

from pathlib import Path

from harness.files import atomic_write_text
from harness.report.glossary import glossary_markdown

HELP = (
    "print the glossary generated from the registries (arm kinds, retriever types, metrics, rules, verdicts, "
    "tiers, instruments) as Markdown, or write it with --out (docs/glossary.md is its output)"
)


def add_arguments(parser) -> None:
    parser.add_argument("--out", type=Path, help="write the Markdown to this file instead of printing it")


def run(args) -> int:
    text = glossary_markdown()
    if args.out is None:
        print(text, end="")
    else:
        atomic_write_text(args.out, text)
        print(f"glossary: wrote {args.out}")
    return 0
