"""`harness select`: draw the seeded samples and write selection/selection.json."""

from __future__ import annotations

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments, say
from harness.data.load import load_dataset, loss_summary, lost_counts
from harness.data.selection import build_selection, summary_lines
from harness.study import Study

HELP = "draw the seeded samples (papers, questions, distractor files) into selection/selection.json"


def add_arguments(parser) -> None:
    add_study_argument(parser)
    add_output_arguments(parser)


def run(args) -> int:
    study = Study.at(args.study)
    selection = build_selection(study)
    for line in summary_lines(selection):
        print(line)
    for name in sorted(
        study.config.datasets
    ):  # what the selected study loads: every drop, loss or change counted
        counts = load_dataset(study, name, selection=selection).counts
        say(args, loss_summary(name, counts), problem=bool(lost_counts(counts)))
    print(f"wrote {study.selection_path}")
    return 0
