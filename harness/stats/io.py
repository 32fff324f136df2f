"""Per-question results in long format (docs/design.md, Output contracts) as one pandas DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import HarnessError
from harness.files import atomic_write_bytes, atomic_write_json, atomic_write_text, read_json
from harness.grid.paths import judge_acceptance_path, per_question_dir, reader_acceptance_path
from harness.grid.results import check_per_question, read_per_question
from harness.provenance.frozen_hashes import assert_same_frozen_hash
from harness.stats import plots, tables
from harness.stats.families import FamilyResult
from harness.study import Study


def load_per_question(study: Study) -> pd.DataFrame:
    """Every results/per_question/<name>.parquet (or <name>.csv when no Parquet twin exists), each read and
    validated by harness.grid.results.read_per_question, concatenated and validated again as a whole."""
    folder = per_question_dir(study)
    files = {p.stem: p for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}
    files.update({p.stem: p for p in sorted(folder.glob("*.parquet"))} if folder.is_dir() else {})
    if not files:
        raise HarnessError(
            f"{folder}: no per-question results (*.parquet or *.csv); run `harness score` first"
        )
    table = pd.concat([read_per_question(files[name]) for name in sorted(files)], ignore_index=True)
    check_per_question(table, folder, unit="concatenated row")
    return table


def write_outputs(stats_dir: str | Path, families: list[FamilyResult]) -> list[Path]:
    """Write <family>.json and .md for every family, .csv/.tex/.png for those that ran, and summary.md.

    A family that did not run has its stale .csv/.tex/.png removed so no old numbers survive beside it.
    """
    stats_dir = Path(stats_dir)
    written = []
    for fam in families:
        base = stats_dir / fam.family
        atomic_write_json(base.with_suffix(".json"), fam.to_json())
        atomic_write_text(base.with_suffix(".md"), tables.to_markdown(fam))
        written += [base.with_suffix(".json"), base.with_suffix(".md")]
        if fam.ran:
            atomic_write_text(base.with_suffix(".csv"), tables.to_csv(fam))
            atomic_write_text(base.with_suffix(".tex"), tables.to_latex(fam))
            atomic_write_bytes(base.with_suffix(".png"), plots.forest_png(fam))
            written += [base.with_suffix(s) for s in (".csv", ".tex", ".png")]
        else:
            for suffix in (".csv", ".tex", ".png"):
                base.with_suffix(suffix).unlink(missing_ok=True)
    atomic_write_text(stats_dir / "summary.md", tables.summary_markdown(families))
    return written + [stats_dir / "summary.md"]


def results_frozen_hash(study: Study) -> str:
    """The one frozen-config hash every per-question table was scored under (from the sidecar
    <dataset>.manifest.json that `score` writes); tables from two freezes, or a table without its
    sidecar, are refused."""
    folder = per_question_dir(study)
    tables = {p.stem for p in folder.glob("*.parquet")} | {p.stem for p in folder.glob("*.csv")}
    if not tables:
        raise HarnessError(
            f"{folder}: no per-question results (*.parquet or *.csv); run `harness score` first"
        )
    orphans = sorted(t for t in tables if not (folder / f"{t}.manifest.json").is_file())
    if orphans:
        raise HarnessError(
            f"{folder}: no {orphans[0]}.manifest.json beside {orphans[0]}'s results, so the frozen config "
            "they were scored under is unknown; re-run `harness score`"
        )
    return assert_same_frozen_hash(sorted(folder / f"{t}.manifest.json" for t in tables))


def load_judge_rates(study: Study) -> dict[str, dict[str, float]]:
    """Measured acceptance-control rates per judge, from results/judges/acceptance.json
    ({judge: {"positive": rate on the accepted answer, "negative": rate on another question's answer}}),
    written by the judging stage. No file: no judge has passed, so judged outcomes stay exploratory."""
    path = judge_acceptance_path(study)
    if not path.is_file():
        return {}
    record = read_json(path)
    if not isinstance(record, dict) or not all(isinstance(v, dict) for v in record.values()):
        raise HarnessError(f"{path}: expected {{judge: {{positive: rate, negative: rate}}}}")
    return {str(k): dict(v) for k, v in record.items()}


def load_reader_rates(study: Study) -> dict[str, dict[str, Any]]:
    """The reader's control rates per dataset, from results/answers/reader_acceptance.json ({"datasets":
    {name: {"positive": mean score from its own gold evidence, "negative": from another cluster's, ...}}}),
    written by `answer` before any arm. No file: the reader has passed nothing, so answer rows stay
    exploratory."""
    path = reader_acceptance_path(study)
    if not path.is_file():
        return {}
    record = read_json(path)
    datasets = record.get("datasets") if isinstance(record, dict) else None
    if not isinstance(datasets, dict) or not all(isinstance(v, dict) for v in datasets.values()):
        raise HarnessError(
            f"{path}: expected {{\"datasets\": {{dataset: {{positive: rate, negative: rate}}}}}}"
        )
    # the per-question records stay in the file: the decision needs the rates only
    return {str(k): {key: v.get(key) for key in ("metric", "positive", "negative", "positive_questions",
                                                  "negative_questions")} for k, v in datasets.items()}
