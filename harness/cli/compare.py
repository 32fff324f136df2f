"""`harness compare`: one paired contrast A - B, printed as JSON (docs/design.md, Output contracts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli.output import add_output_arguments
from harness.errors import HarnessError
from harness.plan.load import checked_margin
from harness.plan.schema import MAX_FLIPS, MAX_MARGIN, MAX_RESAMPLES

HELP = 'print one paired contrast A - B (BCa intervals, sign-flip p, optional TOST) as JSON'

DESCRIPTION = (
    "Compare two arms on one dataset, retriever and metric: pair questions by qid, report A - B in points "
    "with 90 and 95 percent BCa and percentile cluster-bootstrap intervals, the cluster sign-flip p-value "
    "and, with "
    "--margin, the TOST p-value. Prints one JSON object. Ad hoc: no multiplicity adjustment, no verdict."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    table = parser.add_mutually_exclusive_group(required=True)
    table.add_argument("--study", metavar="DIR",
                       help="a study: its per-question table of --dataset (results/per_question/)")
    table.add_argument("--results", metavar="FILE",
                       help="per-question results in long format (.parquet or .csv; columns dataset, arm, "
                            "retriever, qid, cluster, stratum, metric, value)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--a", required=True, metavar="ARM", help="arm A (the difference is A - B)")
    parser.add_argument("--b", required=True, metavar="ARM", help="arm B")
    parser.add_argument("--retriever", required=True)
    parser.add_argument("--metric", required=True, help="metric name, e.g. rec@512t")
    parser.add_argument(
        "--margin",
        type=float,
        help=f"equivalence margin in points (above 0, at most {MAX_MARGIN:g}); adds p_tost and "
        "the t-TOST beside it (ci90_t, p_tost_t, t_df)",
    )
    parser.add_argument("--resamples", type=int, default=10_000,
                        help=f"bootstrap resamples, 2 to {MAX_RESAMPLES:,} (default 10000)")
    parser.add_argument("--max-flips", type=int, default=10_000,
                        help="sign-flip: exact when 2^clusters <= this, else this many random flips "
                             f"(1 to {MAX_FLIPS:,}; default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed, recorded in the output (default 0)")
    parser.add_argument("--no-strata", action="store_true",
                        help="ignore the stratum column (default: resample each stratum separately)")
    parser.add_argument(
        "--deviation",
        metavar="REASON",
        help="when the table belongs to a study whose configured cells are not all scored "
        "yet: look anyway, appending the look and its reason to the study's DEVIATIONS.md",
    )
    add_output_arguments(parser, result_on_stdout=True)


def per_question_table(args, flag: str, given: str | None) -> tuple[Path, object]:
    """The per-question table a `--study` names for `--dataset` (or the file `flag` gives), and the study
    that owns it (None for a file outside any study)."""
    from harness.study import Study

    if given is not None:
        return Path(given), owning_study(Path(given))
    study = Study.at(Path(args.study))
    from harness.grid.paths import per_question_path

    path = per_question_path(study, args.dataset)
    if not path.is_file():
        raise HarnessError(f"{path}: no per-question table for dataset {args.dataset!r} in {study.root} "
                           f"(run `harness score --study {args.study}` first, or give {flag} FILE)")
    return path, study


def looked_at_study(args):
    """The study a `--deviation` look is logged in (harness.cli.main holds its lock while the look runs)."""
    return table_owner(args, args.results)


def table_owner(args, given: str | None):
    """The study `--study` names, or the one whose results hold the table file `given` (None: outside any)."""
    from harness.study import Study

    return owning_study(Path(given)) if given is not None else Study.at(Path(args.study))


def owning_study(path: Path):
    """The study whose results/ holds `path`, or None for a file outside any study."""
    from harness.study import Study

    for parent in path.resolve().parents:
        if parent.name == "results" and (parent.parent / "configs" / "study.yaml").is_file():
            return Study.at(parent.parent)
    return None


def check_numbers(resamples: int, max_flips: int, margin: float | None, *, keywords: bool = False) -> None:
    """The plan's bounds (harness.plan.schema), before any file is read: a million resamples already runs in
    seconds, while 3e8 took a minute and gigabytes. Errors name the flags, or with `keywords` the Python
    API's keyword arguments (harness.compare)."""
    def named(flag: str) -> str:
        return flag[2:].replace("-", "_") + "=" if keywords else flag

    for flag, value, low, high in (("--resamples", resamples, 2, MAX_RESAMPLES),
                                   ("--max-flips", max_flips, 1, MAX_FLIPS)):
        if not low <= value <= high:
            raise HarnessError(f"compare: {named(flag)} must lie from {low:,} to {high:,}; got {value:,}")
    if margin is not None:
        checked_margin(margin, lambda message: HarnessError(f"compare: {named('--margin')} {message}"))


def run(args) -> int:
    from harness.stats.contrast import compare
    from harness.grid.results import read_per_question

    check_numbers(args.resamples, args.max_flips, args.margin)
    path, study = per_question_table(args, "--results", args.results)
    if study is not None:  # no interim looks at a registered study's outcomes
        from harness.provenance.drift import check_frozen
        from harness.provenance.interim import require_outcomes_allowed

        check_frozen(study, stage="compare", models=False)
        require_outcomes_allowed(study, command="compare", deviation_reason=args.deviation)
    table = read_per_question(path)
    try:
        result = compare(
            table, dataset=args.dataset, a=args.a, b=args.b, retriever=args.retriever, metric=args.metric,
            seed=args.seed, resamples=args.resamples, max_flips=args.max_flips, margin=args.margin,
            stratified=not args.no_strata,
        )
    except ValueError as e:  # bad --resamples/--seed/--margin values
        raise HarnessError(str(e)) from None
    json.dump(result.to_json(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0
