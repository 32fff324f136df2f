"""Per-question results in long format (DESIGN section 10) as one pandas DataFrame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.errors import HarnessError, InputError

COLUMNS = ("dataset", "arm", "retriever", "qid", "cluster", "stratum", "metric", "value")
KEY = ("dataset", "arm", "retriever", "metric", "qid")
_TEXT = ("dataset", "arm", "retriever", "qid", "cluster", "stratum", "metric")


def load_per_question(study) -> pd.DataFrame:
    """Every results/per_question/<name>.parquet (or <name>.csv when no Parquet twin exists), concatenated."""
    folder = study.results / "per_question"
    files = {p.stem: p for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}
    files.update({p.stem: p for p in sorted(folder.glob("*.parquet"))} if folder.is_dir() else {})
    if not files:
        raise HarnessError(f"{folder}: no per-question results (*.parquet or *.csv); run `harness score` first")
    tables = [read_per_question_file(files[name]) for name in sorted(files)]
    table = pd.concat(tables, ignore_index=True)
    _check_unique(table, folder)
    return table


def read_per_question_file(path: str | Path) -> pd.DataFrame:
    """One long-format file (.parquet or .csv), validated: columns, text keys, values in [0, 1], unique keys."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
        row_offset, row_word = 0, "row"
    elif path.suffix == ".csv":
        table = pd.read_csv(path, dtype={c: str for c in _TEXT}, keep_default_na=False)
        row_offset, row_word = 2, "line"  # header is line 1
    else:
        raise InputError("expected a .parquet or .csv file", path=path)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (expected {', '.join(COLUMNS)})", path=path)
    table = table.loc[:, list(COLUMNS)].copy()
    for col in _TEXT:
        table[col] = table[col].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    for col in ("dataset", "arm", "retriever", "qid", "cluster", "metric"):
        empty = table[col] == ""
        if empty.any():
            i = int(np.argmax(empty.to_numpy()))
            raise InputError(f"{row_word} {i + row_offset}: empty `{col}`", path=path)
    values = pd.to_numeric(table["value"], errors="coerce").to_numpy(dtype=float)
    bad = ~((values >= 0) & (values <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{row_word} {i + row_offset}: `value` must be a number in [0, 1]; got "
                         f"{table['value'].iloc[i]}", path=path)
    table["value"] = values
    _check_unique(table, path, row_offset, row_word)
    return table


def _check_unique(table: pd.DataFrame, where, row_offset: int = 0, row_word: str = "row") -> None:
    dup = table.duplicated(list(KEY))
    if dup.any():
        i = int(np.argmax(dup.to_numpy()))
        row = table.iloc[i]
        key = ", ".join(f"{k}={row[k]}" for k in KEY)
        raise InputError(f"{row_word} {i + row_offset}: duplicate result for {key}", path=where)


def write_outputs(stats_dir: str | Path, families: list[dict]) -> list[Path]:
    """Write <family>.json and .md for every family, .csv/.tex/.png for those that ran, and summary.md.

    A family that did not run has its stale .csv/.tex/.png removed so no old numbers survive beside it.
    """
    from harness.provenance.files import atomic_write_bytes, atomic_write_json, atomic_write_text
    from harness.stats import plots, tables

    stats_dir = Path(stats_dir)
    written = []
    for fam in families:
        base = stats_dir / fam["family"]
        atomic_write_json(base.with_suffix(".json"), fam)
        atomic_write_text(base.with_suffix(".md"), tables.to_markdown(fam))
        written += [base.with_suffix(".json"), base.with_suffix(".md")]
        if fam["status"] == "ran":
            atomic_write_text(base.with_suffix(".csv"), tables.to_csv(fam))
            atomic_write_text(base.with_suffix(".tex"), tables.to_latex(fam))
            atomic_write_bytes(base.with_suffix(".png"), plots.forest_png(fam))
            written += [base.with_suffix(s) for s in (".csv", ".tex", ".png")]
        else:
            for suffix in (".csv", ".tex", ".png"):
                base.with_suffix(suffix).unlink(missing_ok=True)
    atomic_write_text(stats_dir / "summary.md", tables.summary_markdown(families))
    return written + [stats_dir / "summary.md"]


def results_frozen_hash(study) -> str:
    """The one frozen-config hash every per-question table was scored under (from the sidecar
    <dataset>.manifest.json that `score` writes); tables from two freezes, or a table without its
    sidecar, are refused."""
    from harness.provenance.freeze import assert_same_frozen_hash

    folder = study.results / "per_question"
    tables = {p.stem for p in folder.glob("*.parquet")} | {p.stem for p in folder.glob("*.csv")}
    orphans = sorted(t for t in tables if not (folder / f"{t}.manifest.json").is_file())
    if orphans:
        raise HarnessError(
            f"{folder}: no {orphans[0]}.manifest.json beside {orphans[0]}'s results, so the frozen config "
            "they were scored under is unknown; re-run `harness score`"
        )
    return assert_same_frozen_hash(sorted(folder / f"{t}.manifest.json" for t in tables))
