"""Per-cell part files: `score` writes each finished (dataset, arm, retriever) cell atomically as
results/per_question/<dataset>/<arm>__<retriever>.parquet (`answer` its own rows the same way under
results/answers/); combine_parts joins exactly the configured cells, plus the other stages' parts it is
given, into the dataset's per-question files. Whether a cell counts as scored is harness.grid.states'.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from harness.errors import HarnessError, InputError
from harness.grid.paths import part_path, variants_part_path
from harness.grid.results import ResultRow, TEXT, check_and_sort, read_per_question, to_frame, write_frame


def write_part(
    per_question_dir: str | os.PathLike, dataset: str, arm: str, retriever: str, rows: Iterable[ResultRow]
) -> Path:
    """Atomically write one finished cell; a part file that exists is therefore complete."""
    path = part_path(per_question_dir, dataset, arm, retriever)
    df = check_and_sort(to_frame(rows), str(path))
    cells = set(zip(df["dataset"], df["arm"], df["retriever"]))
    if cells - {(dataset, arm, retriever)}:
        foreign = sorted(cells - {(dataset, arm, retriever)})
        raise InputError(f"{path}: rows of cells {foreign} do not belong to this part")
    write_frame(df, path, None)
    return path


def write_variants_part(
    per_question_dir: str | os.PathLike, dataset: str, arm: str, retriever: str, rows: Iterable[ResultRow]
) -> Path:
    path = variants_part_path(per_question_dir, dataset, arm, retriever)
    df = check_and_sort(to_frame(rows), str(path))
    foreign = df[
        (df["dataset"] != dataset) | (df["retriever"] != retriever) | ~df["arm"].str.startswith(f"{arm}@")
    ]
    if len(foreign):
        row = foreign.iloc[0]
        raise InputError(
            f"{path}: row of ({row['dataset']}, {row['arm']}, {row['retriever']}) is not a variant of "
            f"({dataset}, {arm}, {retriever})"
        )
    write_frame(df, path, None)
    return path


def read_variants_part(
    per_question_dir: str | os.PathLike, dataset: str, arm: str, retriever: str
) -> pd.DataFrame:
    return read_per_question(variants_part_path(per_question_dir, dataset, arm, retriever))


def read_part(
    per_question_dir: str | os.PathLike, dataset: str, arm: str, retriever: str, *, checked: bool = True
) -> pd.DataFrame:
    path = part_path(per_question_dir, dataset, arm, retriever)
    df = read_per_question(path, checked=checked)
    foreign = df[(df["dataset"] != dataset) | (df["arm"] != arm) | (df["retriever"] != retriever)]
    if len(foreign):
        row = foreign.iloc[0]
        raise InputError(
            f"holds a row of another cell ({row['dataset']}, {row['arm']}, {row['retriever']})", path=path
        )
    return df


def combine_parts(
    per_question_dir: str | os.PathLike,
    dataset: str,
    cells: Sequence[tuple[str, str]],
    parquet_path: str | os.PathLike,
    csv_path: str | os.PathLike | None,
    *,
    extra: Sequence[pd.DataFrame] = (),
) -> int:
    """Join the parts of exactly these (arm, retriever) cells, and the `extra` rows of later stages (answer
    metrics), into the dataset's files; returns the row count.

    Parts of cells not listed (e.g. an arm since removed from the config) are left out, never mixed in.
    """
    df = combined_frame(per_question_dir, dataset, cells, parquet_path, extra=extra)
    write_frame(df, parquet_path, csv_path)
    return len(df)


def combined_frame(
    per_question_dir: str | os.PathLike, dataset: str, cells: Sequence[tuple[str, str]],
    parquet_path: str | os.PathLike, *, extra: Sequence[pd.DataFrame] = (),
) -> pd.DataFrame:
    """The rows combine_parts writes to `parquet_path` (checked and sorted), not written: the audit
    compares them with the released table."""
    cells = sorted(set(cells))
    if not cells:
        raise InputError(f"no (arm, retriever) cells to combine for dataset {dataset!r}")
    missing = [c for c in cells if not part_path(per_question_dir, dataset, *c).is_file()]
    if missing:
        shown = ", ".join(f"{a} / {r}" for a, r in missing)
        raise HarnessError(f"dataset {dataset!r}: {len(missing)} cell(s) not scored yet: {shown}")
    # hundreds of parts are checked once joined, which finds whatever a part's own check finds; only then
    # is each part checked, so an error names the part that holds it, as reading it alone does
    frames = [read_part(per_question_dir, dataset, a, r, checked=False) for a, r in cells]
    df = pd.concat([*frames, *extra], ignore_index=True)
    df = df.astype({c: object for c in TEXT} | {"value": "float64"})
    try:
        return check_and_sort(df, str(parquet_path))
    except InputError:
        for a, r in cells:
            read_part(per_question_dir, dataset, a, r)
        raise
