"""`harness build-arms`."""

from __future__ import annotations

import argparse
import os
from typing import Mapping

from harness.arms.build import build_arms
from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress, say
from harness.errors import HarnessError
from harness.provenance.drift import check_frozen
from harness.provenance.recorded import record_release, require_recorded
from harness.retrieval.chunk_vectors import chunk_embedder
from harness.study import Study

HELP = "build every arm the study config names, for every dataset, into results/chunks/ (resumable)"

EPILOG = """LLM cache modes (the LLM arms E, E-K, CR, PF):
  default   answer from results/generations/<model>.jsonl, call the model on a miss and append
  --fresh   regenerate: ignore cached answers (new ones are appended) and rebuild the LLM arms
  --replay  cache only, for audits without the model: a miss is an error; the cache is never written
            (the LLM arms are rebuilt from it, so a changed prompt or model shows up as a miss)
The environment variables FRESH=1 and REPLAY=1 (as in `FRESH=1 make demo`) mean the same as the flags;
they are read here, once, and passed down. Setting both modes is an error."""


def add_arguments(parser) -> None:
    add_study_argument(parser)
    parser.add_argument("--dataset", action="append", help="only this dataset (repeatable)")
    parser.add_argument("--arm", action="append", help="only this arm (repeatable)")
    add_output_arguments(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--fresh", action="store_true", help="regenerate every LLM answer, ignoring the cache (env FRESH=1)"
    )
    mode.add_argument(
        "--replay",
        action="store_true",
        help="answer only from the generation cache, never write it (env REPLAY=1)",
    )
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _env_flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "")
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise HarnessError(f"environment variable {name} must be 1 or 0 (or unset), got {value!r}")


def llm_mode(args, environ: Mapping[str, str]) -> tuple[bool, bool]:
    """(fresh, replay) from the flags, else from FRESH / REPLAY in `environ`."""
    fresh = bool(args.fresh) or _env_flag(environ, "FRESH")
    replay = bool(args.replay) or _env_flag(environ, "REPLAY")
    if fresh and replay:
        raise HarnessError(
            "fresh (--fresh / FRESH=1) and replay (--replay / REPLAY=1) contradict each other; pick one"
        )
    return fresh, replay


def run(args) -> int:
    fresh, replay = llm_mode(args, os.environ)
    study = Study.at(args.study)
    frozen = check_frozen(study, stage="build-arms")
    require_recorded(study, stage="build-arms", adopt=args.adopt_unrecorded)  # it records every released file
    builds = build_arms(
        study,
        datasets=args.dataset,
        arms=args.arm,
        frozen_hash=frozen,
        progress=progress(args),
        warn=lambda line: say(args, line, problem=True),
        fresh=fresh,
        replay=replay,
        embed_chunks=chunk_embedder(study),
    )
    record_release(study)
    built = sum(not b.skipped for b in builds)
    mode = " (fresh)" if fresh else " (replay)" if replay else ""
    print(f"build-arms{mode}: {len(builds)} chunk set(s), {built} built, {len(builds) - built} up to date "
          f"(frozen config {frozen[:12]})")
    return 0
