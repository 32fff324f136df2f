"""`harness audit`: recompute every family and compare with the released results/stats/*.json."""

from __future__ import annotations

import argparse

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress, say
from harness.cli.stats import add_threads_argument
from harness.study import Study

HELP = 'recompute every family and check it row by row against the released results/stats/*.json'

DESCRIPTION = (
    "Audit released statistics: refuse drifted inputs as build-arms does (exit 2, with the diff); check the "
    "plan and amendments against git history and --registered-hash, every released file against "
    "results/results_manifest.json and each per-question CSV against its Parquet; re-derive the selection, "
    "each per-question table from its parts, the reader's and judge's acceptance from their replayed control "
    "answers and every model-built chunk set from the generation cache; recompute every family of "
    "the plan and amendments from the per-question results and compare each row with "
    "results/stats/<family>.json (PASS/FAIL per row). Exits 1 on any FAIL, including a released family "
    "missing from the plan or a planned family never released; exits 3 when nothing fails but the "
    "registration or the release is NOT VERIFIABLE (no git history and no --registered-hash, or no "
    "--release-hash): that is not a pass."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    add_study_argument(parser)
    add_output_arguments(parser)
    add_threads_argument(parser)
    parser.add_argument("--rel-tol", type=float, default=1e-9,
                        help="relative tolerance for floating-point fields (default 1e-9; reruns on one "
                             "platform are bit-identical)")
    parser.add_argument("--registered-hash", metavar="H",
                        help="the frozen hash published at registration (printed by `harness freeze`); the "
                             "freeze must still have it")
    parser.add_argument(
        "--release-hash",
        metavar="H",
        help="the release hash published at release (printed by `harness release` and `harness "
        "report`); the release record must still hash to it and every file match the record",
    )
    parser.add_argument(
        "--rescore",
        type=rescore_count,
        metavar="K",
        help="also re-run K seeded cells (or `all`) from the frozen inputs in a scratch folder and "
        "compare their chunk, run, per-question and answer bytes with the released ones (no "
        "model is called)",
    )
    parser.add_argument(
        "--rescore-seed",
        type=int,
        default=None,
        help="seed drawing the rescored cells (default: harness.pipeline.rescore.DEFAULT_SEED)",
    )


def rescore_count(text: str) -> int | str:
    """`--rescore`'s value: a number of cells, or `all`."""
    if text == "all":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number of cells nor `all`") from None


def run(args) -> int:
    from harness.audit import AuditSettings, audit_study

    settings = AuditSettings(rel_tol=args.rel_tol, registered_hash=args.registered_hash,
                             release_hash=args.release_hash, rescore=args.rescore,
                             rescore_seed=args.rescore_seed, threads=args.threads, progress=progress(args))
    result = audit_study(Study.at(args.study), settings)
    for check in result.checks:
        say(args, check.line(), problem=not check.passed)
    say(args, result.summary(), problem=not result.all_passed)
    return result.exit_code
