"""Every path under a study's results/ folder, and nowhere else (docs/design.md, Studies).

results/
  chunks/<dataset>/<arm>.jsonl, <arm>.manifest.json      build-arms
  runs/<dataset>/<arm>__<retriever>.run                  score
  per_question/<dataset>.parquet|.csv|.manifest.json     score, answer (the assembled table)
  per_question/<dataset>/<arm>__<retriever>.parquet      score: one part per cell, + .done.json marker
  answers/<dataset>/<arm>__<retriever>.jsonl|.parquet    answer: answers, rows part, + .done.json marker
  judges/                                                answer: judge controls and verdicts
  stats/                                                 stats
  report/                                                report
  generations/<model>.jsonl                              build-arms: what each LLM arm generated
  embeddings/                                            score: cached embeddings and reranker scores
  estimate.json                                          estimate
  results_manifest.json                                  every stage: content hashes of the release
  .journal/                                              every writer: what the harness wrote (harness.files)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.config.names import NAME_RULE, is_safe_name
from harness.errors import InputError
from harness.files import JOURNAL_FOLDER, journal_writes_under
from harness.grid.cells import Cell
from harness.study import Study

PART_SUFFIX = ".parquet"
VARIANTS_SUFFIX = ".variants.parquet"
RESULTS_MANIFEST_NAME = "results_manifest.json"
FIRST_OUTCOME_NAME = "FIRST_OUTCOME.json"
# the folders a release consists of: the results manifest hashes every file under them (and the model
# outputs cached under embeddings/, harness.provenance.release)
RELEASED_FOLDERS = ("chunks", "runs", "qrels", "per_question", "answers", "judges", "stats", "generations")


def results_dir(study: Study) -> Path:
    folder = study.results_root or study.root / "results"
    # whatever this process writes there is journaled (harness.files): every writer, a worker too, comes here
    journal_writes_under(folder)
    return folder


def journal_dir(study: Study) -> Path:
    """results/.journal/: what the harness wrote under results/, one file per writing process."""
    return results_dir(study) / JOURNAL_FOLDER


# --- chunk sets and runs ---


def chunks_path(study: Study, dataset: str, arm: str) -> Path:
    return results_dir(study) / "chunks" / dataset / f"{arm}.jsonl"


def chunk_manifest_path(study: Study, dataset: str, arm: str) -> Path:
    return results_dir(study) / "chunks" / dataset / f"{arm}.manifest.json"


def runs_dir(study: Study) -> Path:
    return results_dir(study) / "runs"


def run_path(study: Study, dataset: str, arm: str, retriever: str) -> Path:
    return runs_dir(study) / dataset / f"{arm}__{retriever}.run"


def qrels_path(study: Study, dataset: str, arm: str) -> Path:
    """TREC qrels of an arm's chunk-level relevance (written when the study lists `ir_measures:`)."""
    return results_dir(study) / "qrels" / dataset / f"{arm}.qrels"


# --- per-question results and the parts they are assembled from ---


def per_question_dir(study: Study) -> Path:
    return results_dir(study) / "per_question"


def per_question_path(study: Study, dataset: str, suffix: str = "parquet") -> Path:
    return per_question_dir(study) / f"{dataset}.{suffix}"


def per_question_sidecar(study: Study, dataset: str) -> Path:
    return per_question_dir(study) / f"{dataset}.manifest.json"


def first_outcome_path(study: Study) -> Path:
    return per_question_dir(study) / FIRST_OUTCOME_NAME


def _check_name(kind: str, name: str) -> str:
    # the config and plan schemas refused such a name at load; this guards the part files' own writers
    if not is_safe_name(name):
        raise InputError(f"{kind} name {name!r} cannot name a part file: a name is {NAME_RULE}")
    return name


def part_path(folder: str | os.PathLike[str], dataset: str, arm: str, retriever: str) -> Path:
    """<folder>/<dataset>/<arm>__<retriever>.parquet (mirrors the run file names)."""
    return Path(folder) / _check_name("dataset", dataset) / (
        f"{_check_name('arm', arm)}__{_check_name('retriever', retriever)}{PART_SUFFIX}"
    )


def variants_part_path(folder: str | os.PathLike[str], dataset: str, arm: str, retriever: str) -> Path:
    """<dataset>/<arm>__<retriever>.variants.parquet: an arm stored as variants (RM's seeds, an LLM arm's
    repeats) scored per variant, its rows under arm `<arm>@<variant>`. The cell's own part holds the mean
    over the variants, the only rows any registered test reads; these feed the between-run spread."""
    part = part_path(folder, dataset, arm, retriever)
    return part.with_name(part.name[: -len(PART_SUFFIX)] + VARIANTS_SUFFIX)


def cell_part_path(study: Study, cell: Cell) -> Path:
    return part_path(per_question_dir(study), *cell.names)


def done_marker_path(study: Study, cell: Cell) -> Path:
    dataset, arm, retriever = cell.names
    return per_question_dir(study) / dataset / f"{arm}__{retriever}.done.json"


# --- answers and judges ---


def answers_dir(study: Study) -> Path:
    return results_dir(study) / "answers"


def reader_acceptance_path(study: Study) -> Path:
    """The reader's control rates per dataset, written by `answer` before any arm
    (harness.pipeline.reader_controls)."""
    return answers_dir(study) / "reader_acceptance.json"


def answers_path(study: Study, cell: Cell) -> Path:
    """What the reader answered and saw, per question, for one cell (harness.pipeline.answer)."""
    dataset, arm, retriever = cell.names
    return answers_dir(study) / dataset / f"{arm}__{retriever}.jsonl"


def answer_part_path(study: Study, cell: Cell) -> Path:
    """The answer stage's metric rows of one cell (answer F1, nugget recall): its part of the dataset's
    per-question table, written only by that stage (harness.pipeline.table assembles the table)."""
    return part_path(answers_dir(study), *cell.names)


def answer_marker_path(study: Study, cell: Cell) -> Path:
    dataset, arm, retriever = cell.names
    return answers_dir(study) / dataset / f"{arm}__{retriever}.done.json"


def judges_dir(study: Study) -> Path:
    return results_dir(study) / "judges"


def judge_acceptance_path(study: Study) -> Path:
    """Each judge's measured acceptance-control rates, written by `answer` (harness.pipeline.answer)."""
    return judges_dir(study) / "acceptance.json"


# --- the other stages ---


def stats_dir(study: Study) -> Path:
    return results_dir(study) / "stats"


def report_dir(study: Study) -> Path:
    return results_dir(study) / "report"


def generations_dir(study: Study) -> Path:
    return results_dir(study) / "generations"


def generations_path(study: Study, model_name: str) -> Path:
    return generations_dir(study) / f"{model_name}.jsonl"


def embeddings_dir(study: Study) -> Path:
    return results_dir(study) / "embeddings"


def model_output_namespaces(study: Study) -> list[Path]:
    """The folders under embeddings/ that cache a model's outputs (a reranker's pair scores) rather than
    vectors: like the generations, they cannot be recomputed without the model, so they are released."""
    out = []
    for meta in sorted(embeddings_dir(study).glob("*/namespace.json")):
        try:
            kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError, AttributeError):
            kind = None  # unreadable: released, so the audit shows it
        if kind != "embedding":
            out.append(meta.parent)
    return out


def estimate_path(study: Study) -> Path:
    return results_dir(study) / "estimate.json"


def results_manifest_path(study: Study) -> Path:
    return results_dir(study) / RESULTS_MANIFEST_NAME
