"""`harness rehearse`: the whole registered study run on its synthetic twin, before a model is called."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.errors import HarnessError

HELP = "run every stage on a simulated twin of the study (simulated data and models): time, memory, and which tests can get a verdict"

DESCRIPTION = (
    "Builds a synthetic twin of the study in --out: the same config, plan, amendments, prompts, arms, "
    "retrievers, budgets, families and seeds, with simulated data (in each dataset adapter's own format) and "
    "stand-in models (`backend: simulated`: answers derived from the prompt by hashing; hashed n-gram encoders "
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
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="where the twin is written (outside the study; a rerun into the same DIR resumes)")
    parser.add_argument("--scale", choices=SCALES, default="small",
                        help="paper: the paper's sizes; small: a few minutes' version (default small)")
    parser.add_argument("--executor", choices=("local", "ray"), help="executor for score and stats (default: the config's)")
    parser.add_argument("--score-workers", type=int, metavar="N",
                        help="the score stage scores N arms at once in N processes (harness score --workers; "
                             "default: the config's executor.workers, else 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated data (default 0)")
    parser.add_argument("--real-encoders", action="store_true",
                        help="keep the configured dense encoders and rerankers instead of the hashed stand-ins")
    parser.add_argument("--malformed-rate", type=float, default=0.02, metavar="SHARE",
                        help="share of simulated LLM answers that are broken JSON (default 0.02)")
    parser.add_argument("--effect", action="append", default=[], metavar="TEST=POINTS",
                        help="a registered test's true effect in points for the replicates (repeatable; others 0)")
    parser.add_argument("--replicates", type=int, default=0, metavar="R",
                        help="redraw the per-question outcomes R times with the known effects (default 0: none)")
    parser.add_argument("--resamples", type=int, default=REPLICATE_RESAMPLES, metavar="N",
                        help="bootstrap resamples and sign-flips per replicate contrast (default "
                        f"{REPLICATE_RESAMPLES}: verdict shares agree with the registered count within Monte Carlo "
                        "error, see benchmarks/bench_replicates.py; 0: the plan's registered count)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="processes for the replicates (the result is the same for any number; default: the CPUs)")
    parser.add_argument("--pilot", metavar="FILE",
                        help="replicates redraw this per-question file (.parquet/.csv) instead of the twin's")
    parser.add_argument("--until", choices=STAGES, metavar="STAGE",
                        help=f"stop after this stage ({', '.join(STAGES)}); tests are then listed as far as stats ran")
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
    from harness.grid.results import read_per_question
    from harness.plan.load import load_study_plan
    from harness.cli.output import progress as shows_progress, warn
    from harness.rehearsal import summary
    from harness.rehearsal.stages import STAGES, StageFailed, as_json, family_results, run_stages
    from harness.rehearsal.twin import make_twin
    from harness.stats.io import load_per_question
    from harness.study import Study

    effects = parse_effects(args.effect)
    if args.until is not None and STAGES.index(args.until) < STAGES.index("stats") and args.replicates:
        raise HarnessError(f"--replicates needs the stats stage; --until {args.until} stops before it")
    if (effects or args.pilot) and args.replicates < 1:
        raise HarnessError("--effect and --pilot apply to the replicates: give --replicates R (R >= 1)")
    if not 0 <= args.malformed_rate < 1:
        raise HarnessError(f"--malformed-rate must be in [0, 1); got {args.malformed_rate}")
    study = Study.at(args.study)
    progress = shows_progress(args)
    twin = make_twin(study, Path(args.out), scale=args.scale, seed=args.seed, real_encoders=args.real_encoders,
                     malformed_rate=args.malformed_rate)
    if progress:
        print(f"rehearse: twin of {study.root} in {twin.root} (scale {args.scale})", file=sys.stderr)
    record = {"study": str(study.root), "twin": str(twin.root), "scale": args.scale, "seed": args.seed,
              "executor": args.executor, "score_workers": args.score_workers}
    try:
        stages = STAGES if args.until is None else STAGES[:STAGES.index(args.until) + 1]
        runs = run_stages(twin, executor=args.executor, workers=args.score_workers, stages=stages,
                          progress=progress)
    except StageFailed as failed:  # e.g. the freeze refusing a test no configured cell can produce
        text = ["## Stages on the twin", "", summary.stage_table(failed.runs), "",
                f"BLOCKED: stage {failed.stage} failed on the twin: {failed.reason}"]
        _write(twin, record | {"stages": as_json(failed.runs), "failed": {"stage": failed.stage, "reason": failed.reason,
                                                                            "log_tail": failed.tail}}, text)
        if args.quiet:  # the text went nowhere; the blocking stage must still be said
            warn(text[-1])
        return 1
    record["stages"] = as_json(runs)
    text = ["## Stages on the twin", "", summary.stage_table(runs)]
    if "stats" not in stages:
        _write(twin, record, text + ["", f"stopped after {args.until}: no test was run (stats comes later)"])
        return 0
    plan = load_study_plan(twin)
    registered = {fam.id: [t.id for t in fam.tests] for fam in plan.families}
    results = summary.outcomes(family_results(twin), registered)
    record["tests"] = [o.__dict__ for o in results]
    text += ["", "## Registered tests on the twin", "", summary.outcome_table(results), "", summary.headline(results)]
    if args.replicates:
        from harness.stats.replicates import replicate_verdicts

        table = read_per_question(args.pilot) if args.pilot else load_per_question(twin)
        known = replicate_verdicts(plan, table, effects=effects, replicates=args.replicates, seed=args.seed,
                                   resamples=args.resamples or None, progress=progress, workers=args.workers)
        record["replicates"] = known.to_json() | {"pilot": args.pilot}
        text += ["", f"## Known effects: {args.replicates} replicates", "", known.to_markdown()]
    _write(twin, record, text)
    blocked = any(o.verdict is None for o in results)
    if blocked and args.quiet:
        warn(summary.headline(results))
    return 1 if blocked else 0


def _write(twin, record: dict, text: list[str]) -> None:
    from harness.files import atomic_write_json, atomic_write_text

    out = twin.root / "rehearsal"
    atomic_write_json(out / "rehearsal.json", record)
    atomic_write_text(out / "rehearsal.md", "\n".join(text) + "\n")
    print("\n".join(text))
    print(f"\nwritten: {out / 'rehearsal.md'} and rehearsal.json")

