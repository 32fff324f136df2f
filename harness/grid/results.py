"""Per-question results (docs/design.md, Output contracts): long format, one row per (dataset, arm,
retriever, qid, metric).

Files: results/per_question/<dataset>.parquet and .csv, rows sorted by (dataset, arm, retriever, qid,
metric), values in [0, 1], CSV floats written with repr() so they read back bit-identical. The per-cell
part files `score` writes on the way are harness.pipeline.parts.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from harness.data.model import Question
from harness.errors import InputError
from harness.files import atomic_write_blocks, atomic_write_bytes

COLUMNS = ("dataset", "arm", "retriever", "qid", "cluster", "stratum", "metric", "value")
KEY = ("dataset", "arm", "retriever", "qid", "metric")  # unique per file; files are sorted by it
TEXT = COLUMNS[:-1]  # ids, held as strings
NON_EMPTY = tuple(c for c in TEXT if c != "stratum")  # stratum is "" when unstratified
SCHEMA = pa.schema([(c, pa.float64() if c == "value" else pa.string()) for c in COLUMNS])


class ResultRow(NamedTuple):  # a tuple: millions are built and transposed into columns at C speed
    dataset: str
    arm: str
    retriever: str
    qid: str
    cluster: str
    stratum: str
    metric: str
    value: float


def question_rows(
    dataset: str, arm: str, retriever: str, question: Question, scores: Iterable[tuple[str, float]]
) -> list[ResultRow]:
    """One row per (metric, value) of a scored question, carrying its cluster and stratum."""
    return [
        ResultRow(
            dataset, arm, retriever, question.qid, question.cluster, question.stratum, name, float(value)
        )
        for name, value in scores
    ]


def to_frame(rows: Iterable[ResultRow]) -> pd.DataFrame:
    rows = list(rows)
    if not set(map(type, rows)) <= {ResultRow}:
        row = next(r for r in rows if type(r) is not ResultRow)
        raise TypeError(f"expected ResultRow, got {type(row).__name__}: {row!r}")
    # a ResultRow's fields are COLUMNS, in order
    columns: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
    return pd.DataFrame(
        {
            c: pd.Series(list(col), dtype="float64" if c == "value" else object)
            for c, col in zip(COLUMNS, columns)
        }
    )


def check_per_question(
    df: pd.DataFrame, where: str | os.PathLike[str], *, first: int = 0, unit: str = "row"
) -> None:
    """Refuse what the format forbids: non-string or empty ids (stratum may be ""), values outside [0, 1],
    a repeated KEY, and a qid of one dataset under two clusters or strata. Messages name `where` and the
    offending record as f"{unit} {first + i}" (i the 0-based position in df)."""

    def fail(mask: np.ndarray, describe: Callable[[pd.Series, int], str]) -> None:
        i = int(np.argmax(mask))  # the first offending record
        raise InputError(f"{unit} {first + i}: {describe(df.iloc[i], i)}", path=where)

    for c in TEXT:
        if pd.api.types.infer_dtype(df[c], skipna=False) in ("string", "empty"):
            continue  # every value a str, found at C speed; else the element-wise pass finds the first one
        not_text = ~df[c].map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        if not_text.any():
            fail(not_text, lambda row, i: f"column {c!r} must hold strings, got {row[c]!r}")
    if df.empty:
        return
    # each text column as integer codes (pd.factorize: equal strings, equal codes), so the checks below
    # compare integers instead of string objects
    coded = {c: pd.factorize(df[c]) for c in TEXT}
    for c in NON_EMPTY:
        codes, uniques = coded[c]
        blank = np.flatnonzero(np.asarray(uniques, dtype=object) == "")
        if len(blank):
            fail(codes == blank[0], lambda row, i: f"empty {c!r}")
    values = df["value"].to_numpy(dtype=float)
    outside = ~((values >= 0.0) & (values <= 1.0))  # NaN fails both comparisons
    if outside.any():
        fail(
            outside,
            lambda row, i: (
                f"metric values must lie in [0, 1]; {row['metric']} = {float(row['value'])!r} "
                f"for qid {row['qid']!r} ({row['arm']} / {row['retriever']})"
            ),
        )
    repeated = _seen_before(_groups(*(coded[c][0] for c in KEY)))
    if repeated.any():
        def repeat(row: pd.Series, i: int) -> str:
            earlier = int(np.argmax((df[list(KEY)] == row[list(KEY)]).all(axis=1).to_numpy()))
            return (f"repeated result for dataset {row['dataset']!r}, arm {row['arm']!r}, retriever "
                    f"{row['retriever']!r}, qid {row['qid']!r}, metric {row['metric']!r} (first at {unit} "
                    f"{first + earlier})")
        fail(repeated, repeat)
    question = _groups(coded["dataset"][0], coded["qid"][0])
    seen = np.flatnonzero(~_seen_before(question))[question]  # each row's question's first row
    moved = np.zeros(len(df), dtype=bool)
    for c in ("cluster", "stratum"):
        codes = coded[c][0]
        moved |= codes != codes[seen]
    if moved.any():
        fail(
            moved,
            lambda row, i: (
                f"qid {row['qid']!r} of dataset {row['dataset']!r} has more than one cluster or "
                f"stratum ({row['cluster']!r} / {row['stratum']!r}, before "
                f"{df['cluster'].iloc[seen[i]]!r} / {df['stratum'].iloc[seen[i]]!r})"
            ),
        )


def _groups(*coded: np.ndarray) -> np.ndarray:
    """One code per distinct combination of these columns' codes, numbered in order of first appearance."""
    group = coded[0]
    for codes in coded[1:]:
        group = pd.factorize(group * (int(codes.max()) + 1) + codes)[0]  # below len(df) squared: no overflow
    return group


def _seen_before(group: np.ndarray) -> np.ndarray:
    """Whether each row's group occurs on an earlier row: codes numbered in order of first appearance, a
    row's code is new exactly when it exceeds every earlier row's."""
    earlier = np.maximum.accumulate(group)
    return np.concatenate(([False], group[1:] <= earlier[:-1]))


def check_and_sort(df: pd.DataFrame, where: str | os.PathLike[str]) -> pd.DataFrame:
    """check_per_question, then sort by KEY (the order every written file has)."""
    check_per_question(df, where)
    # each key column's codes in sorted order (pd.factorize(sort=True) orders strings as sort_values does),
    # the last key np.lexsort's first; KEY is unique (checked), so the order is total
    order = np.lexsort([pd.factorize(df[c], sort=True)[0] for c in reversed(KEY)])
    return df.take(order).reset_index(drop=True)


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    table = pa.table({c: pa.array(df[c].tolist(), type=SCHEMA.field(c).type) for c in COLUMNS}, schema=SCHEMA)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _csv_blocks(df: pd.DataFrame, rows_per_block: int = 100_000) -> Iterator[str]:
    """The CSV text in blocks of rows: a table of millions of rows is never one string in memory."""
    for start in range(0, max(len(df), 1), rows_per_block):
        part = df.iloc[start:start + rows_per_block]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        if start == 0:
            writer.writerow(COLUMNS)
        cols = [part[c].tolist() for c in TEXT] + [[repr(float(v)) for v in part["value"].tolist()]]
        writer.writerows(zip(*cols))
        yield buf.getvalue()


def _csv_text(df: pd.DataFrame) -> str:
    return "".join(_csv_blocks(df))


def write_frame(
    df: pd.DataFrame, parquet_path: str | os.PathLike[str], csv_path: str | os.PathLike[str] | None
) -> None:
    atomic_write_bytes(parquet_path, _parquet_bytes(df))
    if csv_path is not None:
        atomic_write_blocks(csv_path, (block.encode("utf-8") for block in _csv_blocks(df)))


def write_per_question(
    rows: Iterable[ResultRow], parquet_path: str | os.PathLike[str], csv_path: str | os.PathLike[str] | None
) -> int:
    """Validate, sort and atomically write rows to Parquet (and CSV unless csv_path is None); returns the
    count."""
    df = check_and_sort(to_frame(rows), str(parquet_path))
    write_frame(df, parquet_path, csv_path)
    return len(df)


def shared_text(column: pd.Series) -> pd.Series:
    """The column as an object Series holding one Python object per distinct value, a missing value read
    as "". A per-question table repeats a few dozen ids millions of times; one str object per cell made
    the paper-size Qasper table 1.5 GB where shared ones take a tenth of it."""
    codes, uniques = pd.factorize(column)
    distinct = np.append(np.asarray(uniques, dtype=object), "")  # code -1 (missing) picks the ""
    return pd.Series(distinct[codes], dtype=object)


def read_per_question(path: str | os.PathLike[str], *, checked: bool = True) -> pd.DataFrame:
    """A per-question file (.parquet or .csv) as a DataFrame with exactly COLUMNS, checked by
    check_per_question (unless `checked` is False: the caller checks the frames it joins, once).

    Ids stay strings (CSV qids like "1909.00694" or "007" never become numbers); an empty or null cell
    reads as "". Errors name the file and the record: `line N` of a CSV (the header is line 1), `row N`
    (from 0) of a Parquet file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("per-question results file not found", path=path)
    try:
        if path.suffix == ".parquet":
            df = pq.read_table(path, read_dictionary=list(TEXT)).to_pandas()  # absent names are ignored
            first, unit = 0, "row"
        elif path.suffix == ".csv":
            df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
            first, unit = 2, "line"
        else:
            raise InputError("expected a .parquet or .csv per-question file", path=path)
    except (pa.ArrowInvalid, ValueError, pd.errors.ParserError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"cannot read per-question results: {e}", path=path) from None
    df = df.reset_index(drop=True)
    missing = [c for c in COLUMNS if c not in df.columns]
    extra = [c for c in df.columns if c not in COLUMNS]
    if missing or extra:
        raise InputError(
            f"columns are {list(df.columns)}, expected {list(COLUMNS)} (missing: "
            f"{', '.join(missing) or 'none'}; "
            f"unexpected: {', '.join(map(str, extra)) or 'none'})",
            path=path,
        )
    if df["value"].dtype == np.float64:
        values = df["value"].to_numpy()
    else:
        values = []
        for i, v in enumerate(df["value"]):
            try:
                values.append(float(v))  # Python's parser: the repr() written to CSV reads back bit-identical
            except (TypeError, ValueError):
                raise InputError(f"{unit} {first + i}: value {v!r} is not a number", path=path) from None
    df = pd.DataFrame({c: shared_text(df[c]) for c in TEXT} | {"value": pd.Series(values, dtype="float64")})
    if checked:
        check_per_question(df, path, first=first, unit=unit)
    return df
