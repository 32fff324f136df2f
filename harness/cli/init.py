"""`harness init DIR`: write a minimal, runnable, registered study around your data
(docs/getting-started.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.output import add_output_arguments
from harness.errors import HarnessError

HELP = "write a new study around your data: config, registered plan, README (then `make all STUDY=DIR`)"

DESCRIPTION = (
    "Write a minimal, runnable study into DIR (new or empty): the data copied (or converted) under data/, "
    "configs/study.yaml with the LLM-free arms S, S+T, F512c, F256t and the retrievers bm25, minilm and "
    "their "
    "hybrid, plan/plan.yaml with the structure family (S vs F512c and F256t), plan/PLAN.md (its prose), and "
    "a "
    "README. --llm adds the paid arms E and CR and the primary family (E vs S+T, E vs CR). The inputs are "
    "loaded through their adapter and every file validated before DIR is written; the plan is then "
    "registered "
    "(a git commit: in the repository DIR lies in, else in DIR's own, made by `git init`; only where git "
    "cannot commit, plan/REGISTRATION.json)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.config.metric_sets import METRIC_SETS

    parser.description = DESCRIPTION
    parser.add_argument("dir", metavar="DIR", help="the new study's folder (must not exist, or be empty)")
    source = parser.add_argument_group("the data (one of)")
    source.add_argument(
        "--documents", type=Path, metavar="F", help="documents.jsonl (docs/jsonl-format.md); with --questions"
    )
    source.add_argument(
        "--markdown",
        type=Path,
        metavar="DIR",
        help="a folder of Markdown files; with --questions holding {question, evidence: [strings]} records",
    )
    source.add_argument(
        "--questions",
        type=Path,
        metavar="F",
        help="questions.jsonl (with --documents) or the question-evidence records (with --markdown)",
    )
    source.add_argument(
        "--qasper", type=Path, metavar="F", help="a Qasper file (original or Hugging Face layout)"
    )
    source.add_argument(
        "--freshstack",
        type=Path,
        metavar="DIR",
        help="one subfolder per domain holding queries.jsonl, "
        "corpus.jsonl, optional qrels.tsv, and checkout/ (the docs repository at the corpus's commit)",
    )
    parser.add_argument(
        "--corpus-path-prefix",
        default="",
        metavar="P",
        help="with --freshstack: the folder the corpus ids start with that the checkout lacks (e.g. docs/)",
    )
    parser.add_argument(
        "--metric-set",
        choices=tuple(METRIC_SETS),
        default="qasper",
        help="with --documents: qasper (evidence strings, default) or freshstack (gold spans)",
    )
    paid = parser.add_argument_group("the paid arms E and CR (optional)")
    paid.add_argument("--llm", metavar="MODEL", help="the model E and CR call: an Ollama model name "
                      "(e.g. qwen2.5:7b), or with --llm-base-url an OpenAI-compatible model id")
    paid.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="an OpenAI-compatible server (e.g. http://host:8000/v1); without it --llm names an Ollama model",
    )
    parser.add_argument(
        "--no-git",
        action="store_true",
        help="register by plan/REGISTRATION.json instead of a git commit (the audit then needs "
        "the published frozen hash: --registered-hash)",
    )
    add_output_arguments(parser)


def _inputs(args):
    from harness.pipeline.new_study import Inputs

    given = [
        name for name in ("documents", "markdown", "qasper", "freshstack") if getattr(args, name) is not None
    ]
    if len(given) != 1:
        raise HarnessError("give the data once: --documents F --questions F, --markdown DIR --questions F, "
                           "--qasper F or --freshstack DIR")
    if given[0] in ("documents", "markdown") and args.questions is None:
        raise HarnessError(f"--{given[0]} needs --questions F")
    if given[0] in ("qasper", "freshstack") and args.questions is not None:
        raise HarnessError(f"--{given[0]} carries its questions; drop --questions")
    if args.corpus_path_prefix and given[0] != "freshstack":
        raise HarnessError("--corpus-path-prefix applies to --freshstack only")
    if args.metric_set != "qasper" and given[0] != "documents":
        raise HarnessError("--metric-set applies to --documents only (the other inputs fix their metric set)")
    return Inputs(
        documents=args.documents,
        questions=args.questions,
        markdown=args.markdown,
        qasper=args.qasper,
        freshstack=args.freshstack,
        corpus_path_prefix=args.corpus_path_prefix,
        metric_set=args.metric_set,
    )


def run(args) -> int:
    from harness.data.load import loss_summary
    from harness.metrics.evidence_quality import evidence_quality
    from harness.pipeline.new_study import create_study
    from harness.pipeline.new_study_files import Paid

    inputs = _inputs(args)
    if args.llm_base_url and not args.llm:
        raise HarnessError("--llm-base-url needs --llm MODEL")
    paid = None
    if args.llm:
        paid = Paid(args.llm, "openai-compatible" if args.llm_base_url else "ollama", args.llm_base_url)
    made = create_study(Path(args.dir), inputs, paid=paid, git=not args.no_git)
    data = made.dataset
    if made.evidence is not None:
        e = made.evidence
        print(f"evidence strings: {e['evidence_located_verbatim']} located verbatim, "
              f"{e['evidence_located_normalised']} located after collapsing whitespace, "
              f"{e['evidence_unlocated']} not found in any document; "
              f"{e['questions_without_located_evidence']} question(s) with none located")
    print(
        f"wrote {made.root}: dataset `{data.name}` ({data.metric_set} metrics) with {len(data.documents)} "
        "documents, "
        f"{len(data.questions)} questions in {made.clusters} clusters"
    )
    print(loss_summary(data.name, data.counts))
    for line in evidence_quality(data).lines():  # scorable, but unable to tell arms apart
        print(f"note: {line}" if not line.startswith(" ") else line)
    if made.scope is not None:
        print(f"retrieval scope: {made.scope.scope} ({made.scope.reason})")
    for link in made.links:
        print(f"note: {link}")
    arms = "S, S+T, F512c, F256t" + (", E, CR" if paid else "")
    print(f"arms {arms}; retrievers bm25, minilm, hybrid; plan families: "
          + ("primary (E vs S+T, E vs CR), " if paid else "") + "structure (S vs F512c, S vs F256t)")
    print(f"registered the plan: {made.registration}")
    print(f"next: read plan/PLAN.md and plan.yaml (a generated draft) and make them yours, then "
          f"`make all STUDY={made.root}` from the harness repository "
          "(the study's README.md says more)")
    return 0
