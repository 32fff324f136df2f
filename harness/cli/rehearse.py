"""`harness rehearse`: the whole registered study run on its synthetic twin, before a model is called."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.errors import HarnessError

HELP = ("run every stage on a simulated twin of the study (simulated data and models): time, memory, and "
        "which tests can get a verdict")

DESCRIPTION = (
    "Builds a synthetic twin of the study in --out: the same config, plan, amendments, prompts, arms, "
    "retrievers, budgets, families and seeds, with simulated data (in each dataset adapter's own format) and "
    "stand-in models (`backend: simulated`: answers derived from the prompt by hashing; hashed n-gram "
    "encoders "
    "and rerankers unless --real-encoders). Then runs select, freeze, estimate, build-arms, score, answer, "
    "stats, audit and report on the twin, each in its own process, and prints each stage's wall time, peak "
    "memory and counts, then every registered test: its verdict on the twin, or BLOCKED with the reason. "
    "With --effect/--replicates, the twin's per-question outcomes (or --pilot's) are redrawn with known true "
    "effects and the plan's own statistics run on each replicate: the share of each verdict per test and the "
    "familywise error per family. Nothing is written into the study and none of its results is read. "
    "Exit 1 when a registered test is blocked."
)


def add_arguments(parser) -> None:
    from harness.cli.main import add_study_argument
    from harness.cli.output import add_output_arguments
    from harness.rehearsal.stages import STAGES
    from harness.stats.replicates import REPLICATE_RESAMPLES
    from harness.rehearsal.twin_data import SCALES

    parser.description = DESCRIPTION
    add_study_argument(parser)
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="where the twin is written (outside the study; a rerun into the same DIR resumes)",
    )
    parser.add_argument("--scale", choices=SCALES, default="small",
                        help="paper: the paper's sizes; small: a few minutes' version (default small)")
    parser.add_argument(
        "--executor", choices=("local", "ray"), help="executor for score and stats (default: the config's)"
    )
    parser.add_argument("--score-workers", type=int, metavar="N",
                        help="the score stage scores N arms at once in N processes (harness score --workers; "
                             "default: the config's executor.workers, else 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated data (default 0)")
    parser.add_argument(
        "--real-encoders",
        action="store_true",
        help="keep the configured dense encoders and rerankers instead of the hashed stand-ins",
    )
    parser.add_argument("--malformed-rate", type=float, default=0.02, metavar="SHARE",
                        help="share of simulated LLM answers that are broken JSON (default 0.02)")
    parser.add_argument(
        "--effect",
        action="append",
        default=[],
        metavar="TEST=POINTS",
        help="a registered test's true effect in points for the replicates (repeatable; others 0)",
    )
    parser.add_argument(
        "--replicates",
        type=int,
        default=0,
        metavar="R",
        help="redraw the per-question outcomes R times with the known effects (default 0: none)",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=REPLICATE_RESAMPLES,
        metavar="N",
        help="bootstrap resamples and sign-flips per replicate contrast (default "
        f"{REPLICATE_RESAMPLES}: verdict shares agree with the registered count within Monte Carlo "
        "error, see benchmarks/bench_replicates.py; 0: the plan's registered count)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes for the replicates (the result is the same for any number; default: the CPUs)",
    )
    parser.add_argument("--pilot", metavar="FILE",
                        help="replicates redraw this per-question file (.parquet/.csv) instead of the twin's")
    parser.add_argument(
        "--until",
        choices=STAGES,
        metavar="STAGE",
        help=f"stop after this stage ({', '.join(STAGES)}); tests are then listed as far as stats ran",
    )
    add_output_arguments(parser)


def parse_effects(items: list[str]) -> dict[str, float]:
    effects = {}
    for item in items:
        test, sep, points = item.partition("=")
        try:
            value = float(points)
        except ValueError:
            value = None
        if not sep or not test or value is None:
            raise HarnessError(f"--effect {item!r}: expected TEST=POINTS, e.g. --effect A1-qasper=2.5")
        if test in effects:
            raise HarnessError(f"--effect names test {test} twice")
        effects[test] = value
    return effects


def run(args) -> int:
    from harness.cli.output import progress, warn
    from harness.rehearsal.rehearse import RehearsalSettings, rehearse
    from harness.study import Study

    settings = RehearsalSettings(
        scale=args.scale, seed=args.seed, real_encoders=args.real_encoders,
        malformed_rate=args.malformed_rate,
        executor=args.executor, score_workers=args.score_workers, until=args.until,
        effects=parse_effects(args.effect), replicates=args.replicates, resamples=args.resamples,
        workers=args.workers, pilot=args.pilot, progress=progress(args))

    def log(line: str) -> None:  # where the twin is: a progress line
        if settings.progress:
            print(line, file=sys.stderr)

    result = rehearse(Study.at(args.study), Path(args.out), settings, log=log)
    print("\n".join(result.text))
    print(f"\nwritten: {result.written} and rehearsal.json")
    if result.blocked and args.quiet:  # the text went nowhere; what blocks a verdict must still be said
        warn(result.blocked)
    return 1 if result.blocked else 0
