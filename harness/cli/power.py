"""`harness power`: clusters a TOST needs for 80% power, from a pilot's per-question results."""

from __future__ import annotations

import json
import sys

from harness.cli.output import add_output_arguments, note
from harness.errors import HarnessError

HELP = 'size a study: clusters needed for a TOST with the target power, by cluster bootstrap of a pilot'

DESCRIPTION = (
    "Pair arms A and B by qid in a pilot's per-question results, then for a range of cluster counts draw "
    "simulated studies by resampling the pilot's clusters (centred on --true-difference) and count how often "
    "the TOST at --alpha shows equivalence within +-margin. Prints the smallest cluster count reaching "
    "--power and the whole curve as JSON. Strata are ignored: resampling is over clusters only."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    pilot = parser.add_mutually_exclusive_group(required=True)
    pilot.add_argument("--study", metavar="DIR", help="a pilot study: its per-question table of --dataset")
    pilot.add_argument("--pilot", metavar="FILE",
                       help="pilot per-question results in long format (.parquet or .csv)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--a", required=True, metavar="ARM", help="arm A (the difference is A - B)")
    parser.add_argument("--b", required=True, metavar="ARM", help="arm B")
    parser.add_argument("--retriever", required=True)
    parser.add_argument("--metric", required=True, help="metric name, e.g. rec@512t")
    parser.add_argument("--margin", required=True, type=float, help="equivalence margin in points")
    parser.add_argument("--alpha", type=float, default=0.05, help="TOST alpha (default 0.05)")
    parser.add_argument("--power", type=float, default=0.80, help="target power (default 0.80)")
    parser.add_argument("--true-difference", type=float, default=0.0,
                        help="assumed true A - B in points (default 0)")
    parser.add_argument(
        "--simulations", type=int, default=1000, help="simulated studies per size (default 1000)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                        help="cluster counts to try (default: 10 up to 40 times the pilot, log-spaced)")
    parser.add_argument("--seed", type=int, default=0, help="seed, recorded in the output (default 0)")
    parser.add_argument("--deviation", metavar="REASON",
                        help="when the pilot belongs to a study whose cells are not all scored: look anyway "
                             "(logged)")
    add_output_arguments(parser, result_on_stdout=True)


def looked_at_study(args):
    """The study a `--deviation` look is logged in (harness.cli.main holds its lock while the look runs)."""
    from harness.cli.compare import table_owner

    return table_owner(args, args.pilot)


def run(args) -> int:
    from harness.cli.compare import per_question_table
    from harness.grid.results import read_per_question
    from harness.stats.contrast import paired_differences
    from harness.inference.power import tost_clusters_for_power

    path, study = per_question_table(args, "--pilot", args.pilot)
    if study is not None:
        from harness.provenance.drift import check_frozen
        from harness.provenance.interim import require_outcomes_allowed

        check_frozen(study, stage="power", models=False)
        require_outcomes_allowed(study, command="power", deviation_reason=args.deviation)
    pairs = paired_differences(read_per_question(path), dataset=args.dataset, a=args.a, b=args.b,
                               retriever=args.retriever, metric=args.metric)
    try:
        result = tost_clusters_for_power(
            pairs.diffs,
            pairs.clusters,
            margin=args.margin,
            alpha=args.alpha,
            target=args.power,
            true_difference=args.true_difference,
            sizes=args.sizes,
            simulations=args.simulations,
            seed=args.seed,
        )
    except ValueError as e:
        raise HarnessError(str(e)) from None
    out = {"pilot": str(path), "dataset": args.dataset, "a": args.a, "b": args.b,
           "retriever": args.retriever, "metric": args.metric} | result.to_json()
    json.dump(out, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    verdict = (f"{result.n_clusters} clusters" if result.n_clusters is not None
               else f"more than {result.curve[-1].n_clusters} clusters (no size tried reached it)")
    note(args, f"power {args.power:g} for TOST at ±{args.margin:g} needs {verdict}")
    return 0
