"""`harness audit`: recompute every family and compare with the released results/stats/*.json."""

from __future__ import annotations

import argparse
from dataclasses import replace

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, progress, say
from harness.cli.stats import add_threads_argument
from harness.errors import HarnessError
from harness.files import read_json
from harness.study import Study
from harness.grid.paths import stats_dir

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
    "registration is NOT VERIFIABLE (no git history and no --registered-hash): that is not a pass."
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
    parser.add_argument("--release-hash", metavar="H",
                        help="the release hash published at release (printed by `harness release` and `harness "
                             "report`); the release record must still hash to it and every file match the record")
    parser.add_argument("--rescore", type=rescore_count, metavar="K",
                        help="also re-run K seeded cells (or `all`) from the frozen inputs in a scratch folder and "
                             "compare their chunk, run, per-question and answer bytes with the released ones (no "
                             "model is called)")
    parser.add_argument("--rescore-seed", type=int, default=None,
                        help="seed drawing the rescored cells (default: harness.pipeline.rescore.DEFAULT_SEED)")


def rescore_count(text: str) -> int | str:
    """`--rescore`'s value: a number of cells, or `all`."""
    if text == "all":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number of cells nor `all`") from None


def _grid_check(study: Study, frozen: str):
    """Every configured cell scored under the frozen config, or statistics released as a logged deviation."""
    from harness.grid.states import unscored_cells
    from harness.provenance.interim import describe_missing
    from harness.stats.families import RowCheck

    missing = unscored_cells(study, frozen)
    if not missing:
        return RowCheck("(grid)", "cells", True, "every configured cell is scored under the frozen config")
    released = [read_json(p) for p in sorted(stats_dir(study).glob("*.json"))]
    logged = bool(released) and all(isinstance(r, dict) and r.get("deviation") for r in released)
    return RowCheck("(grid)", "cells", logged, describe_missing(missing)
                    + ("; the statistics were released as a logged deviation" if logged
                       else "; the released statistics record no deviation"))


def run(args) -> int:
    from harness.stats.families import RowCheck, check_family, run_plan
    from harness.stats.io import load_judge_rates, load_per_question, load_reader_rates
    from harness.plan.load import load_study_plan

    study = Study.at(args.study)
    if not stats_dir(study).is_dir():
        raise HarnessError(f"{stats_dir(study)}: no released statistics to audit; run `harness stats` first")
    from harness.provenance.checks import exit_code
    from harness.provenance.freeze import check_frozen, check_registered_hashes
    from harness.provenance.registration import verify_registration
    from harness.provenance.release import verify_release_hash, verify_results
    from harness.provenance.release_history import verify_release_history
    from harness.stats.io import results_frozen_hash
    from harness.pipeline.rederive import rederive

    checks: list[RowCheck] = []
    frozen = check_frozen(study, stage="audit", models=False)
    anchors = verify_registration(study, registered_hash=args.registered_hash) + verify_results(study)
    anchors += verify_release_history(study)
    anchors += verify_release_hash(study, args.release_hash) if args.release_hash is not None else []
    anchors += rederive(study, frozen)
    problems = check_registered_hashes(study)
    checks += [RowCheck("(frozen)", "plan", False, p) for p in problems]
    if not problems:
        checks.append(RowCheck("(frozen)", "plan", True, "plan and amendments hash as frozen"))
    scored_under = results_frozen_hash(study)
    checks.append(RowCheck("(frozen)", "per-question results", scored_under == frozen,
                           f"scored under frozen config {scored_under[:12]}"
                           + ("" if scored_under == frozen else f", but {study.frozen_path.name} is {frozen[:12]}")))
    checks.append(_grid_check(study, frozen))
    plan = load_study_plan(study)
    table = load_per_question(study)
    planned = set()
    for result in run_plan(plan, table, judge_rates=load_judge_rates(study), reader_rates=load_reader_rates(study),
                           threads=max(1, args.threads)):
        planned.add(result.family)
        path = stats_dir(study) / f"{result.family}.json"
        if not path.is_file():
            checks.append(RowCheck(result.family, "(family)", False, f"{path.name} was not released"))
            continue
        recomputed = replace(result, frozen_config_hash=scored_under).to_json()
        checks += check_family(read_json(path), recomputed, rel_tol=args.rel_tol)
    for path in sorted(stats_dir(study).glob("*.json")):
        if path.stem not in planned:
            checks.append(RowCheck(path.stem, "(family)", False, f"{path.name} is not a family of the plan"))
    if args.rescore is not None:
        from harness.pipeline.rescore import DEFAULT_SEED, rescore

        seed = DEFAULT_SEED if args.rescore_seed is None else args.rescore_seed
        checks += [RowCheck("(rescore)", r.cell, r.passed, r.detail)
                   for r in rescore(study, args.rescore, seed, frozen, progress=progress(args))]
    for a in anchors:
        say(args, a.line(), problem=a.status != "PASS")
    for c in checks:
        say(args, f"{'PASS' if c.passed else 'FAIL'}  {c.family}/{c.test}: {c.detail}", problem=not c.passed)
    statuses = [a.status for a in anchors] + ["PASS" if c.passed else "FAIL" for c in checks]
    unverifiable = len(statuses) - statuses.count("PASS") - statuses.count("FAIL")
    say(args, f"audit: {statuses.count('PASS')} PASS, {statuses.count('FAIL')} FAIL"
          + (f", {unverifiable} NOT VERIFIABLE (not a pass)" if unverifiable else ""),
        problem=statuses.count("PASS") != len(statuses))
    return exit_code(statuses)
