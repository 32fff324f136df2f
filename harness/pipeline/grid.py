"""The study's grid: its chunk sets (dataset x arm) and cells (dataset x arm x retriever), their paths,
and their state. Every stage that asks "is this built / scored?" asks here.

The grid is what the config names: every dataset, every arm, every retriever, minus the restrictions an
entry declares (`datasets: [...]` on arms and retrievers, `arms: [...]` on retrievers).

A chunk set is built when its .jsonl and manifest exist and the manifest names the current frozen hash;
built under another freeze it is stale. A cell is scored when its run file, part file and done marker
exist and the marker names the current frozen hash; scored under another freeze it is stale. An answer
cell (a `reader.cells` entry's dataset x arm x retriever) is answered when its answers file, its rows part
and done marker exist, the marker names the current frozen hash and the dataset's per-question table was
assembled with its rows (the table's manifest lists it); answered under another freeze it is stale.
States are read from files only: nothing here loads a dataset or a model.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, NamedTuple

from harness.config.arm_kinds import ARM_KINDS, is_planned
from harness.errors import HarnessError
from harness.pipeline.parts import part_path
from harness.files import atomic_write_json, read_json
from harness.study import Study

BUILT, SCORED, MISSING, STALE = "built", "scored", "missing", "stale"
ANSWERED = "answered"


class ChunkSet(NamedTuple):
    dataset: str
    arm: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.arm}"


class Cell(NamedTuple):
    dataset: str
    arm: str
    retriever: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.arm}/{self.retriever}"


def applies_to(entry: Any, dataset: str, arm: str | None = None) -> bool:
    """Arms and retrievers may name `datasets: [...]`, retrievers also `arms: [...]`; by default they
    apply everywhere."""
    only, arms = entry.datasets, getattr(entry, "arms", None)
    return (only is None or dataset in only) and (arm is None or arms is None or arm in arms)


def chunk_sets(study: Study) -> list[ChunkSet]:
    """Every chunk set the config names, in config order (datasets, then arms). Arms expanded at retrieval
    time (E+KX, ...) have none: their cells rank the chunk set of their `of:` arm."""
    return [
        ChunkSet(dataset, arm)
        for dataset in study.datasets
        for arm, arm_cfg in study.arms.items()
        if applies_to(arm_cfg, dataset) and not _retrieval_time(arm_cfg)
    ]


def _retrieval_time(arm_cfg: Any) -> bool:
    kind = ARM_KINDS.get(getattr(arm_cfg, "kind", None))
    return kind is not None and kind.retrieval_time


def configured_cells(study: Study) -> list[Cell]:
    """Every cell the config names, in config order (datasets, then arms, then retrievers).

    Arms of a planned kind (no builder yet, harness.config.arm_kinds) have no cells: nothing waits for them."""
    return [
        Cell(dataset, arm, retriever)
        for dataset in study.datasets
        for arm, arm_cfg in study.arms.items()
        if applies_to(arm_cfg, dataset) and not is_planned(arm_cfg)
        for retriever, retriever_cfg in study.retrievers.items()
        if applies_to(retriever_cfg, dataset, arm)
    ]


def answer_cells(study: Study) -> list[Cell]:
    """Every cell `reader.cells` names, in config order (entries, then their arms), each once."""
    return list(dict.fromkeys(Cell(c.dataset, arm, c.retriever) for c in study.config.reader.cells for arm in c.arms))


# --- paths ---


def answers_dir(study: Study) -> Path:
    return study.results / "answers"


def answers_path(study: Study, cell: Cell) -> Path:
    """What the reader answered and saw, per question, for one cell (harness.pipeline.answer)."""
    return answers_dir(study) / cell.dataset / f"{cell.arm}__{cell.retriever}.jsonl"


def answer_part_path(study: Study, cell: Cell) -> Path:
    """The answer stage's metric rows of one cell (answer F1, nugget recall): its part of the dataset's
    per-question table, written only by that stage (harness.pipeline.table assembles the table)."""
    return part_path(answers_dir(study), *cell)


def answer_marker_path(study: Study, cell: Cell) -> Path:
    return answers_dir(study) / cell.dataset / f"{cell.arm}__{cell.retriever}.done.json"


def per_question_dir(study: Study) -> Path:
    return study.results / "per_question"


def cell_part_path(study: Study, cell: Cell) -> Path:
    return part_path(per_question_dir(study), *cell)


def done_marker_path(study: Study, cell: Cell) -> Path:
    return per_question_dir(study) / cell.dataset / f"{cell.arm}__{cell.retriever}.done.json"


def per_question_sidecar(study: Study, dataset: str) -> Path:
    return per_question_dir(study) / f"{dataset}.manifest.json"


def mark_cell_done(study: Study, cell: Cell, *, frozen_hash: str, counts: dict[str, Any]) -> Path:
    """Written by `score` after a cell's run file and per-question part are safely on disk. The cell's
    counts live here, so the dataset manifest gathers every cell's counts even across interrupted runs."""
    path = done_marker_path(study, cell)
    atomic_write_json(path, {**cell._asdict(), "frozen_hash": frozen_hash, "n_questions": counts["questions"],
                             "counts": counts, "completed_at": _now_iso()})
    return path


def cell_counts(study: Study, cell: Cell) -> dict[str, Any] | None:
    """The counts `score` recorded in the cell's done marker (None: not scored)."""
    marker = done_marker_path(study, cell)
    return _object(marker).get("counts") if marker.is_file() else None


def mark_answer_done(study: Study, cell: Cell, *, frozen_hash: str | None, counts: dict[str, int]) -> Path:
    """Written by `answer` once a cell's answers file and its rows part exist."""
    path = answer_marker_path(study, cell)
    atomic_write_json(path, {**cell._asdict(), "frozen_hash": frozen_hash, "counts": dict(sorted(counts.items())),
                             "completed_at": _now_iso()})
    return path


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- states ---


def current_frozen_hash(study: Study) -> str | None:
    from harness.provenance.freeze import frozen_hash

    return frozen_hash(study) if study.frozen_path.is_file() else None


def _object(path: Path) -> dict[str, Any]:
    record = read_json(path)
    if not isinstance(record, dict):
        raise HarnessError(f"{path}: expected a JSON object")
    return record


def _under(recorded: Any, current_hash: str | None) -> str:
    # an unfrozen study has no freeze to be stale against (builds and scores refuse to run without one)
    return BUILT if current_hash is None or recorded == current_hash else STALE


def chunk_set_manifest(study: Study, chunk_set: ChunkSet) -> dict[str, Any] | None:
    """The chunk set's manifest when both its files exist, else None."""
    path, mpath = study.chunks_path(*chunk_set), study.manifest_path(*chunk_set)
    return _object(mpath) if path.is_file() and mpath.is_file() else None


def chunk_set_state(study: Study, chunk_set: ChunkSet, current_hash: str | None) -> str:
    """BUILT, STALE (built under another freeze) or MISSING."""
    manifest = chunk_set_manifest(study, chunk_set)
    return MISSING if manifest is None else _under(manifest.get("frozen_config_hash"), current_hash)


def cell_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """SCORED, STALE (scored under another freeze) or MISSING."""
    marker = done_marker_path(study, cell)
    if not (marker.is_file() and study.run_path(*cell).is_file() and cell_part_path(study, cell).is_file()):
        return MISSING
    return SCORED if _under(_object(marker).get("frozen_hash"), current_hash) == BUILT else STALE


def answer_rows_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """ANSWERED when the cell's answers, rows part and marker exist under `current_hash`, STALE under
    another freeze, else MISSING: whether the table assembly takes the cell's rows."""
    marker = answer_marker_path(study, cell)
    if not (marker.is_file() and answers_path(study, cell).is_file() and answer_part_path(study, cell).is_file()):
        return MISSING
    return ANSWERED if _under(_object(marker).get("frozen_hash"), current_hash) == BUILT else STALE


def answer_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """answer_rows_state, and MISSING while the dataset's per-question table lacks the cell's rows (its
    manifest does not list the cell: the table was not assembled since, e.g. after a killed run)."""
    state = answer_rows_state(study, cell, current_hash)
    if state != ANSWERED:
        return state
    sidecar = per_question_sidecar(study, cell.dataset)
    assembled = _object(sidecar).get("answer_cells", []) if sidecar.is_file() else []
    return ANSWERED if str(cell) in assembled else MISSING


def unscored_cells(study: Study, current_hash: str | None, cells: list[Cell] | None = None) -> list[Cell]:
    """The cells (default: every configured one) not scored under `current_hash`."""
    cells = configured_cells(study) if cells is None else cells
    return [c for c in cells if cell_state(study, c, current_hash) != SCORED]
