"""`harness freeze`: record every input that could move a result in frozen_config.json."""

from __future__ import annotations

import argparse

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, say
from harness.data.load import loss_summary, lost_counts
from harness.provenance.drift import check_frozen
from harness.provenance.freeze import prepare_freeze, write_freeze
from harness.provenance.inputs import unwritten_files
from harness.provenance.interim import deviation_logged, record_deviation
from harness.provenance.release import DEVIATIONS_NAME, record_study_file
from harness.provenance.timeline import first_outcome_time, format_timeline, timeline
from harness.files import read_json
from harness.study import Study

FORCED = "harness freeze --force"  # the command a forced re-freeze's deviation names

HELP = "freeze the study's inputs into frozen_config.json (or --check them, or --show-timeline)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_study_argument(parser)
    add_output_arguments(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="compare the current inputs with the frozen ones (exit 2 on drift)",
    )
    mode.add_argument(
        "--show-timeline",
        action="store_true",
        help="print the registration timeline of the plan and amendments",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --check: also refuse changed package versions and harness commit",
    )
    parser.add_argument(
        "--force",
        metavar="REASON",
        help="re-freeze although results exist under the old freeze; REASON (required) goes to DEVIATIONS.md",
    )


def run(args) -> int:
    study = Study.at(args.study)
    if args.show_timeline:
        print(format_timeline(timeline(study), first_outcome_time(study)))
        return 0
    if args.check:
        digest = check_frozen(study, stage="freeze --check", strict=args.strict)
        print(f"no drift: the current inputs match {study.frozen_path} (frozen hash {digest})")
        return 0
    logged = lambda digest: deviation_logged(study, FORCED, digest)  # noqa: E731
    record, digest, before = prepare_freeze(study, force=bool(args.force), logged=logged)
    if digest == before:
        print(f"unchanged: the inputs match {study.frozen_path}, nothing written"
              + (" and no deviation logged (--force not needed)" if args.force else ""))
    else:
        # the deviation first: a failure before the freeze is written leaves a logged deviation and the old
        # freeze, and the rerun finds the entry for this hash instead of logging it twice
        if args.force and not logged(digest):
            record_deviation(study, args.force, FORCED, frozen_hash=digest)
        elif args.force:  # resumed: the logged entry may have been cut off before the release record took it
            record_study_file(study, DEVIATIONS_NAME)
        write_freeze(study, record)
    record = read_json(study.frozen_path)
    print(_summary(record, study, digest, verb="kept" if digest == before else "froze"))
    for name, content in sorted(record["dataset_content"].items()):
        say(args, loss_summary(name, content["counts"]), problem=bool(lost_counts(content["counts"])))
    unwritten = unwritten_files(record.get("plugins"))
    if unwritten:  # docs/plugins.md, Run files: this hash changes once they are written
        print(f"{len(unwritten)} run file(s) not written yet: {', '.join(unwritten)}. Write them from the "
              "chunk sets build-arms builds, then freeze again before `score` (no outcome exists yet, so no "
              "deviation is logged); publish the hash of that freeze, not this one")
        return 0
    print(
        "publish this hash (a public registry, a tag, the paper); `harness audit --registered-hash "
        f"{digest}` "
        "checks the freeze against it"
    )
    return 0


def _summary(record: dict, study: Study, digest: str, *, verb: str) -> str:
    config = record["config"]
    selection = record["selection"]["sha256"]
    files = record["input_files"]
    lines = [
        f"{verb} {study.frozen_path}",
        f"  datasets {len(config['datasets'])}, arms {len(config['arms'])}, retrievers "
        f"{len(config['retrievers'])}, "
        f"models {len(record['model_digests'])}, prompts {sum(p.startswith('prompts/') for p in files)}, "
        f"input files {len(files)}",
        f"  plan and amendments {len(record['registration'])}, selection {selection[:12]}, "
        f"tokenizer {record['tokenizer']['sha256'][:12]}",
        f"  harness {record['harness']['commit'] or '(no git)'}"
        + ("" if record["harness"]["clean"] is not False else " (uncommitted changes)"),
        f"frozen hash {digest}",
    ]
    return "\n".join(lines)
