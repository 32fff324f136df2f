"""A dataset's per-question table, assembled from the parts its stages own.

`score` owns results/per_question/<dataset>/<arm>__<retriever>.parquet (retrieval metrics), `answer` owns
results/answers/<dataset>/<arm>__<retriever>.parquet (answer F1, nugget recall from the judge). Neither
writes the other's rows: each stage writes its parts, then calls assemble_per_question, which joins every
configured scored cell and every answer cell answered under the current freeze into
results/per_question/<dataset>.parquet and .csv. Rerunning one stage therefore never drops another's rows.
The dataset's manifest records the row count and which answer cells the table holds (`answer_cells`;
`harness status` reads it).
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from harness.files import atomic_write_json, read_json
from harness.grid.cells import answer_cells, configured_cells
from harness.grid.paths import answers_dir, per_question_dir, per_question_path, per_question_sidecar
from harness.grid.states import ANSWERED, STALE, answer_rows_state
from harness.pipeline.parts import combine_parts, combined_frame, read_part
from harness.study import Study


def update_manifest(study: Study, dataset: str, fields: dict[str, Any]) -> None:
    """Set these fields of results/per_question/<dataset>.manifest.json, keeping the other stages' fields."""
    path = per_question_sidecar(study, dataset)
    record = read_json(path) if path.is_file() else {}
    atomic_write_json(path, {**record, **fields})


def assemble_per_question(study: Study, dataset: str, frozen_hash: str | None,
                          *, log: Callable[[str], None] = print) -> int:
    """Write the dataset's per-question files from its stages' parts; returns the row count. Every
    configured cell must be scored (combine_parts names the missing ones); an answer cell contributes its
    rows when answered under `frozen_hash`, and one answered under another freeze is left out and said so."""
    answered, stale = _answer_cells_by_state(study, dataset, frozen_hash)
    extra = [read_part(answers_dir(study), *cell.names) for cell in answered]
    n = combine_parts(
        per_question_dir(study),
        dataset,
        _scored_cells(study, dataset),
        per_question_path(study, dataset, "parquet"),
        per_question_path(study, dataset, "csv"),
        extra=extra,
    )
    if stale:
        log(
            f"{dataset}: {len(stale)} answer cell(s) answered under another freeze left out of the "
            "per-question "
            f"table until `harness answer` reruns: {', '.join(map(str, stale))}"
        )
    update_manifest(study, dataset, {
        "rows": n,
        "answer_cells": [str(c) for c in answered],
        "answer_metrics": sorted({m for frame in extra for m in frame["metric"]}),
    })
    return n


def assembled_frame(study: Study, dataset: str, frozen_hash: str | None) -> pd.DataFrame:
    """The rows assemble_per_question writes for the dataset from its parts as they are now, not written
    (the audit re-derives the released table from them)."""
    answered, _ = _answer_cells_by_state(study, dataset, frozen_hash)
    extra = [read_part(answers_dir(study), *cell.names) for cell in answered]
    return combined_frame(per_question_dir(study), dataset, _scored_cells(study, dataset),
                          per_question_path(study, dataset, "parquet"), extra=extra)


def _answer_cells_by_state(study: Study, dataset: str, frozen_hash: str | None) -> tuple[list, list]:
    """The dataset's answer cells answered under `frozen_hash`, and those answered under another freeze."""
    answered, stale = [], []
    for cell in answer_cells(study):
        if cell.dataset.name == dataset:
            state = answer_rows_state(study, cell, frozen_hash)
            (answered if state == ANSWERED else stale if state == STALE else []).append(cell)
    return answered, stale


def _scored_cells(study: Study, dataset: str) -> list[tuple[str, str]]:
    return [(c.arm.name, c.retriever.name) for c in configured_cells(study) if c.dataset.name == dataset]
