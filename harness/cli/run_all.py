"""`harness run-all` (`make all`): every stage of a study in pipeline order, stopping at the first failure."""

from __future__ import annotations

import subprocess
import sys

from harness.cli.audit import rescore_count
from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments
from harness.cli.score import add_workers_argument
from harness.config.executor import EXECUTORS

HELP = ("run select, freeze, estimate, build-arms, score, answer (when configured), stats, audit and report "
        "in order")

DESCRIPTION = (
    "Run every stage of the study in pipeline order, each as `harness STAGE --study DIR`, and stop at the "
    "first that fails, naming it (exit: that stage's code). Every stage skips what is already done, so a "
    "rerun resumes. An audit whose only finding is a NOT VERIFIABLE registration or release (no git history, "
    "no published hash; exit 3) does not stop the report, but run-all then exits 3: that is not a pass."
)
UNVERIFIABLE = 3  # harness audit: nothing failed, but the registration or the release has no anchor


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    add_study_argument(parser)
    parser.add_argument("--rescore", type=rescore_count, default=3, metavar="K",
                        help="the audit re-runs K seeded cells (or `all`) byte for byte (default 3; 0: none)")
    parser.add_argument("--executor", choices=EXECUTORS, help="where score and stats run their cells")
    parser.add_argument("--ray-address", metavar="ADDR", help="with --executor ray: the cluster to join")
    add_workers_argument(parser)
    add_output_arguments(parser)  # passed on to every stage


def run(args) -> int:
    from harness.pipeline.stages import configured_stages, stage_arguments
    from harness.grid.paths import report_dir
    from harness.study import Study

    study = Study.at(args.study)
    stages = configured_stages(study)
    unverifiable = False
    for i, stage in enumerate(stages, start=1):
        print(f"== harness {stage} ({i}/{len(stages)})", flush=True)
        command = [sys.executable, "-m", "harness", stage, "--study", str(study.root),
                   *stage_arguments(stage, args.executor, rescore=args.rescore, ray_address=args.ray_address,
                                           workers=args.workers),
                   *(["--quiet"] if args.quiet else ["--no-progress"] if args.no_progress else [])]
        code = subprocess.run(command, check=False).returncode
        if stage == "audit" and code == UNVERIFIABLE:
            unverifiable = True
            continue
        if code != 0:
            done = ", ".join(stages[:i - 1]) or "none"
            print(f"harness run-all: stopped at stage {stage} (exit {code}); completed before it: {done}. "
                  f"Fix it and rerun: finished work is kept.", file=sys.stderr)
            return code
    if unverifiable:
        print(
            "harness run-all: every stage ran, but the audit found the registration or the release NOT "
            "VERIFIABLE (the study is in no git repository and no hash was published): commit the study, or "
            "publish the frozen and release hashes and run `harness audit --registered-hash H "
            "--release-hash R`",
            file=sys.stderr,
        )
        return UNVERIFIABLE
    print(f"harness run-all: {len(stages)} stages done; the report is {report_dir(study) / 'index.html'}")
    return 0
