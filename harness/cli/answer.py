"""`harness answer`."""

from __future__ import annotations

import argparse
import os

from harness.cli.build_arms import llm_mode
from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress, say, warn
from harness.pipeline.answer import answer_study
from harness.provenance.drift import check_frozen
from harness.provenance.recorded import assembled_table, record_release, require_recorded
from harness.study import Study

# per-cell counts of dropped or failed items: reported even under --quiet
PROBLEM_COUNTS = (
    "reader_failed",
    "reader_truncated",
    "judge_truncated",
    "verdicts_unparseable",
    "dropped_no_gold",
    "dropped_no_nuggets",
)

HELP = ("answer every configured answer cell (`reader.cells`) with the fixed reader from exactly B source "
        "tokens, judge nuggets after the judge's acceptance controls, and add answer_f1 / nugget_recall rows")

EPILOG = """LLM cache modes (reader and judge calls), as for build-arms:
  default   answer from results/generations/<model>.jsonl, call the model on a miss and append
  --fresh   ignore cached answers (new ones are appended)
  --replay  cache only: a miss is an error and the cache is never written
FRESH=1 / REPLAY=1 in the environment mean the same as the flags."""


def add_arguments(parser) -> None:
    add_study_argument(parser)
    add_output_arguments(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--fresh", action="store_true", help="regenerate every answer and verdict (env FRESH=1)"
    )
    mode.add_argument(
        "--replay", action="store_true", help="answer only from the generation cache (env REPLAY=1)"
    )
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def run(args) -> int:
    fresh, replay = llm_mode(args, os.environ)
    study = Study.at(args.study)
    frozen = check_frozen(study, stage="answer")
    # the answer stage assembles the table from every stage's parts: none may have been edited by hand
    require_recorded(study, stage="answer", exempt=assembled_table, adopt=args.adopt_unrecorded)
    summary = answer_study(study, frozen_hash=frozen, fresh=fresh, replay=replay, progress=progress(args))
    record_release(study)
    shown = lambda v: "not computable" if v is None else f"{v:.3f}"  # noqa: E731
    if summary.get("controls") is not None:
        c = summary["controls"]
        say(
            args,
            f"answer: judge controls: positive {shown(c['positive'])} ({c['positive_questions']} questions), "
            f"negative {shown(c['negative'])} ({c['negative_questions']} questions)"
            + (f"; exploratory: {'; '.join(c['reasons'])}" if c["reasons"] else ""),
            problem=bool(c["reasons"]),
        )
    for cell, counts in summary.get(
        "cells", {}
    ).items():  # the stage logged every count; quiet keeps the losses
        failed = {k: v for k, v in counts.items() if v and k in PROBLEM_COUNTS}
        if failed and args.quiet:
            warn(f"answer {cell}: " + ", ".join(f"{k} {v}" for k, v in failed.items()))
    for name, rates in (summary.get("reader_controls") or {}).items():
        say(
            args,
            f"answer: reader controls on {name}: positive {shown(rates['positive'])}, negative "
            f"{shown(rates['negative'])} (stats compares them with the plan's "
            f"datasets.{name}.reader_acceptance)",
        )
    print(
        f"answer: {len(summary.get('cells', {}))} cell(s) answered -> results/answers/ (frozen config "
        f"{frozen[:12]})"
    )
    return 0
