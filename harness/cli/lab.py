"""`harness lab DOC.md QE.json`: every lab chunker under flat and graph retrieval, recall per split (no study
needed)."""

from __future__ import annotations

import math
import sys

from harness.chunking.sentences import LAB_L
from harness.cli.chunk import read_document
from harness.data.question_evidence import SPLITS, read_lab_questions
from harness.lab import LAB_BUDGET, LabRow, LabSettings, run_lab
from harness.config.lab import NOVELTY, OVERFLOWS, UNITS

HELP = "run the chunking lab on one Markdown file and its question-evidence JSON; print a recall table"


def add_arguments(parser) -> None:
    parser.add_argument("doc", metavar="DOC.md", help="the Markdown document (UTF-8)")
    parser.add_argument(
        "qe", metavar="QE.json", help="JSON list of {question, evidence: [exact strings], split}"
    )
    parser.add_argument(
        "--L", type=int, default=LAB_L, help=f"chunk length limit in characters (default {LAB_L})"
    )
    parser.add_argument(
        "--budget", type=int, default=LAB_BUDGET, help=f"context budget (default {LAB_BUDGET})"
    )
    parser.add_argument("--unit", choices=UNITS, default="words", help="budget unit (default words)")
    parser.add_argument(
        "--overflow",
        choices=OVERFLOWS,
        default="skip",
        help="a chunk that does not fit: skip it or cut it (default skip)",
    )
    parser.add_argument(
        "--novelty",
        type=float,
        default=NOVELTY,
        help=f"skip chunks less than this share new; 0 turns it off (default {NOVELTY})",
    )


def _pct(x: float) -> str:
    return "   -" if math.isnan(x) else f"{100 * x:4.0f}"


def format_table(rows: list[LabRow]) -> str:
    by_key = {(r.chunker, r.mode, r.split): r for r in rows}
    keys = list(dict.fromkeys((r.chunker, r.mode) for r in rows))
    head = f"{'chunker':<17}{'mode':<6}{'chunks':>7}{'chars':>7}"
    for s in SPLITS:
        n = next((r.questions for r in rows if r.split == s), 0)
        head += f"  {s + ' (' + str(n) + ')':>18}"
    head += f"{'ctx words':>11}"
    sub = " " * 37 + "".join(f"  {'partial%':>9}{'compl%':>9}" for _ in SPLITS)
    lines = [head, sub]
    for chunker, mode in keys:
        first = by_key[(chunker, mode, SPLITS[0])]
        line = f"{chunker:<17}{mode:<6}{first.chunks:>7}{first.mean_chars:>7.0f}"
        total_q, total_words = 0, 0.0
        for s in SPLITS:
            r = by_key[(chunker, mode, s)]
            line += f"  {_pct(r.partial):>9}{_pct(r.complete):>9}"
            if r.questions:
                total_q += r.questions
                total_words += r.mean_context_words * r.questions
        line += f"{total_words / total_q if total_q else float('nan'):>11.1f}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def run(args) -> int:
    doc = read_document(args.doc)
    questions = read_lab_questions(doc.text, args.qe, doc_id=doc.doc_id)
    settings = LabSettings(
        L=args.L, budget=args.budget, unit=args.unit, overflow=args.overflow, novelty=args.novelty or None
    )
    sys.stdout.write(format_table(run_lab(doc, questions, settings)))
    return 0
