"""`harness release`: print the release hash to publish beside the registered hash."""

from harness.cli.main import add_study_argument
from harness.provenance.drift import check_frozen
from harness.provenance.release import publishable_release_hash
from harness.study import Study

HELP = (
    "print the release hash (one SHA-256 over results/results_manifest.json, the release record) once every "
    "released file matches the record; publish it beside the registered hash"
)


def add_arguments(parser) -> None:
    add_study_argument(parser)


def run(args) -> int:
    study = Study.at(args.study)
    check_frozen(study, stage="release", models=False)
    digest = publishable_release_hash(study)
    print(f"release hash {digest}")
    print(f"publish it beside the registered hash; `harness audit --release-hash {digest}` checks the study "
          "against it (any later edit of a released file, or of the record, fails)")
    return 0
