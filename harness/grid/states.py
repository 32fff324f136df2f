"""The one definition of each state of the grid, read from files only (nothing here loads a dataset or a
model).

A chunk set is BUILT when its .jsonl and manifest exist and the manifest names the current frozen hash;
built under another freeze it is STALE. A cell is SCORED when its run file, part file and done marker
exist and the marker names the current frozen hash; scored under another freeze it is STALE. An answer
cell (a `reader.cells` entry's dataset x arm x retriever) is ANSWERED when its answers file, its rows part
and done marker exist, the marker names the current frozen hash and the dataset's per-question table was
assembled with its rows (the table's manifest lists it); answered under another freeze it is STALE.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json
from harness.grid.cells import Cell, ChunkSet, configured_cells
from harness.grid.paths import (
    answer_marker_path, answer_part_path, answers_path, cell_part_path, chunk_manifest_path, chunks_path,
    done_marker_path, per_question_sidecar, run_path,
)
from harness.study import Study

BUILT, SCORED, MISSING, STALE = "built", "scored", "missing", "stale"
ANSWERED = "answered"


def mark_cell_done(study: Study, cell: Cell, *, frozen_hash: str, counts: dict[str, Any]) -> Path:
    """Written by `score` after a cell's run file and per-question part are safely on disk. The cell's
    counts live here, so the dataset manifest gathers every cell's counts even across interrupted runs."""
    path = done_marker_path(study, cell)
    _write_marker(path, {**cell.record(), "frozen_hash": frozen_hash, "n_questions": counts["questions"],
                         "counts": counts})
    return path


def cell_counts(study: Study, cell: Cell) -> dict[str, Any] | None:
    """The counts `score` recorded in the cell's done marker (None: not scored)."""
    marker = done_marker_path(study, cell)
    return _object(marker).get("counts") if marker.is_file() else None


def mark_answer_done(study: Study, cell: Cell, *, frozen_hash: str | None, counts: dict[str, int]) -> Path:
    """Written by `answer` once a cell's answers file and its rows part exist."""
    path = answer_marker_path(study, cell)
    _write_marker(path, {**cell.record(), "frozen_hash": frozen_hash, "counts": dict(sorted(counts.items()))})
    return path


def _write_marker(path: Path, record: dict[str, Any]) -> None:
    """`record` and when it was completed; a marker that already holds the same record keeps its file and its
    first completion time, so a rerun that changes nothing writes nothing."""
    try:
        old = read_json(path) if path.is_file() else None
    except HarnessError:  # unreadable: written afresh
        old = None
    if (
        isinstance(old, dict)
        and "completed_at" in old
        and {k: v for k, v in old.items() if k != "completed_at"} == json.loads(json.dumps(record))
    ):
        return
    atomic_write_json(path, {**record, "completed_at": _now_iso()})


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    path, mpath = chunks_path(study, *chunk_set.names), chunk_manifest_path(study, *chunk_set.names)
    return _object(mpath) if path.is_file() and mpath.is_file() else None


def chunk_set_state(study: Study, chunk_set: ChunkSet, current_hash: str | None) -> str:
    """BUILT, STALE (built under another freeze) or MISSING."""
    manifest = chunk_set_manifest(study, chunk_set)
    return MISSING if manifest is None else _under(manifest.get("frozen_config_hash"), current_hash)


def cell_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """SCORED, STALE (scored under another freeze) or MISSING."""
    marker = done_marker_path(study, cell)
    if not (
        marker.is_file() and run_path(study, *cell.names).is_file() and cell_part_path(study, cell).is_file()
    ):
        return MISSING
    return SCORED if _under(_object(marker).get("frozen_hash"), current_hash) == BUILT else STALE


def answer_rows_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """ANSWERED when the cell's answers, rows part and marker exist under `current_hash`, STALE under
    another freeze, else MISSING: whether the table assembly takes the cell's rows."""
    marker = answer_marker_path(study, cell)
    if not (
        marker.is_file() and answers_path(study, cell).is_file() and answer_part_path(study, cell).is_file()
    ):
        return MISSING
    return ANSWERED if _under(_object(marker).get("frozen_hash"), current_hash) == BUILT else STALE


def answer_state(study: Study, cell: Cell, current_hash: str | None) -> str:
    """answer_rows_state, and MISSING while the dataset's per-question table lacks the cell's rows (its
    manifest does not list the cell: the table was not assembled since, e.g. after a killed run)."""
    state = answer_rows_state(study, cell, current_hash)
    if state != ANSWERED:
        return state
    sidecar = per_question_sidecar(study, cell.dataset.name)
    assembled = _object(sidecar).get("answer_cells", []) if sidecar.is_file() else []
    return ANSWERED if str(cell) in assembled else MISSING


def unscored_cells(study: Study, current_hash: str | None, cells: list[Cell] | None = None) -> list[Cell]:
    """The cells (default: every configured one) not scored under `current_hash`."""
    cells = configured_cells(study) if cells is None else cells
    return [c for c in cells if cell_state(study, c, current_hash) != SCORED]
