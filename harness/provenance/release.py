"""The release record: results/results_manifest.json lists the SHA-256 and size of every released byte
that can move a verdict: every file under the released folders (chunk sets, run files, per-question tables
and their parts, FIRST_OUTCOME.json, answers and the reader's controls, judge records, statistics, the
generation caches) and the model outputs cached under embeddings/ (results-relative, under `files`), and
the study's selection/selection.json and DEVIATIONS.md (study-relative, under `study_files`), with the
frozen hash they were produced under. The frozen hash binds everything the freeze hashes (config, plan,
amendments, prompts, data); the report, estimate.json and the embedding vectors (recomputed by
`audit --rescore`) are not verdict inputs and are left out.

Every stage that writes results calls `record_results` last. It walks the folders generically (so a file a
new stage adds is covered without a list to keep up to date) and rewrites the manifest; it holds no time,
so a rerun that changes nothing writes the same bytes. The selection is recorded as it is (the freeze,
checked first by every stage, binds it). DEVIATIONS.md is recorded with the SHA-256 of each entry: a
logged deviation records its own append, a stage records entries appended (by a merge, say), but a file
that lost a recorded entry keeps its old entry and refuses further appends, so a hand edit is never
recorded afresh by running a command. The audit (`verify_results`) re-hashes every
listed file, reports files under those folders that the manifest does not list, and compares each
per-question CSV with its Parquet twin value by value: any edit is a FAIL naming the file.
A file edited between two stages is listed afresh by the second; the CSV-Parquet comparison and the
audit's recomputation from Parquet are what catch an edit there.

The release hash is the SHA-256 of the record's canonical JSON: `harness release` (and `harness report`)
print it to publish beside the registered hash, and `harness audit --release-hash H` checks that the record
still hashes to H; with every file matching the record, any later edit, however consistent with the
record, fails. harness.provenance.release_history checks the record against git history.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.files import atomic_write_json, canonical_json, read_json, sha256_file, sha256_text
from harness.provenance.checks import Check, FAIL, PASS
from harness.provenance.freeze import frozen_hash
from harness.study import Study
from harness.grid.paths import (
    RELEASED_FOLDERS, RESULTS_MANIFEST_NAME, model_output_namespaces, per_question_dir, results_dir,
    results_manifest_path,
)
from harness.grid.results import COLUMNS, read_per_question

SUBJECT = "(results)"
RELEASE_SUBJECT = "(release)"
MAX_LISTED = 20
CSV_BLOCK_ROWS = 50_000  # rows of a per-question CSV held at once by csv_matches_parquet
DEVIATIONS_NAME = "DEVIATIONS.md"
DEVIATION_START = re.compile(r"(?m)^(?=## )")



def released_files(study: Study) -> dict[str, Path]:
    """results-relative path -> file, for every file under the released folders (temporary files too:
    a leftover of a killed run is not part of a release and must show)."""
    out = {}
    for folder in [results_dir(study) / name for name in RELEASED_FOLDERS] + model_output_namespaces(study):
        if folder.is_dir():
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    out[p.relative_to(results_dir(study)).as_posix()] = p
    return dict(sorted(out.items()))


def released_study_files(study: Study) -> dict[str, Path]:
    """study-relative path -> file: the released files outside results/ (the selection, the deviations)."""
    paths = (study.selection_path, study.root / DEVIATIONS_NAME)
    return {p.relative_to(study.root).as_posix(): p for p in paths if p.is_file()}


def deviation_entries(text: str) -> list[str]:
    """The entries of a DEVIATIONS.md text: each `## ` heading with its lines (the header is not one)."""
    return [e.rstrip() for e in DEVIATION_START.split(text)[1:]]


def _entry(path: Path) -> dict[str, Any]:
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _study_file_entry(rel: str, path: Path) -> dict[str, Any]:
    """A study file's entry; DEVIATIONS.md's also lists the SHA-256 of each entry, so an append (a merge, a
    logged deviation) can be told from an edit."""
    entry = _entry(path)
    if rel == DEVIATIONS_NAME:
        text = path.read_text(encoding="utf-8", errors="replace")
        entry["entries"] = [sha256_text(e) for e in deviation_entries(text)]
    return entry


def _recorded_study_files(path: Path) -> dict[str, Any]:
    record = read_json(path) if path.is_file() else {}
    listed = record.get("study_files") if isinstance(record, dict) else None
    return listed if isinstance(listed, dict) else {}


def lost_deviations(study: Study) -> int:
    """How many DEVIATIONS.md entries the release record holds that the file no longer has (removed or
    edited)."""
    recorded = _recorded_study_files(results_manifest_path(study)).get(DEVIATIONS_NAME)
    if not isinstance(recorded, dict):
        return 0
    path = study.root / DEVIATIONS_NAME
    kept = set(_study_file_entry(DEVIATIONS_NAME, path)["entries"]) if path.is_file() else set()
    return sum(1 for h in recorded.get("entries", []) if h not in kept)


def record_results(study: Study) -> Path:
    """Write the results manifest for the released files as they are now; returns its path. A study file
    that is gone, or a DEVIATIONS.md that lost a recorded entry, keeps its recorded entry: a stage never
    records such an edit afresh (the audit shows it)."""

    files = {rel: _entry(p) for rel, p in released_files(study).items()}
    path = results_manifest_path(study)
    carried = _recorded_study_files(path)
    study_files = carried | {rel: _study_file_entry(rel, p) for rel, p in released_study_files(study).items()}
    if lost_deviations(study):
        study_files[DEVIATIONS_NAME] = carried[DEVIATIONS_NAME]
    atomic_write_json(path, {"frozen_config_hash": frozen_hash(study), "files": files,
                             "study_files": dict(sorted(study_files.items()))})
    return path


def require_deviations_kept(study: Study) -> None:
    """Refuse to append to a DEVIATIONS.md that lost an entry the release record holds (the append would
    otherwise be recorded with the loss)."""
    lost = lost_deviations(study)
    if lost:
        raise HarnessError(
            f"{study.root / DEVIATIONS_NAME}: {lost} entr{'y' if lost == 1 else 'ies'} recorded in "
            f"{results_manifest_path(study)} removed or edited; restore them: entries are only "
            "ever appended"
        )


def record_study_file(study: Study, rel: str) -> None:
    """Record one study file as it is now in an existing release record (its writer calls this)."""
    path = results_manifest_path(study)
    if path.is_file():
        record = read_json(path)
        listed = _recorded_study_files(path) | {rel: _study_file_entry(rel, study.root / rel)}
        record["study_files"] = dict(sorted(listed.items()))
        atomic_write_json(path, record)


def release_hash(study: Study) -> str:
    """The SHA-256 of the release record's canonical JSON (formatting the file by hand does not move it)."""
    return sha256_text(canonical_json(read_json(results_manifest_path(study))))


def publishable_release_hash(study: Study) -> str:
    """The release hash, once every released file matches the record; else a HarnessError naming them."""
    path = results_manifest_path(study)
    if not path.is_file():
        raise HarnessError(f"{path} is missing: nothing is released yet (run the stages first)")
    failed = [c for c in verify_results(study) if c.status != PASS]
    if failed:
        shown = "\n".join(f"  {c.item}: {c.detail}" for c in failed[:MAX_LISTED])
        raise HarnessError(f"{len(failed)} released file(s) differ from {path}:\n{shown}\nno release hash to "
                           "publish: rerun the stage that writes them (`harness audit` lists every check)")
    return release_hash(study)


def verify_release_hash(study: Study, published: str) -> list[Check]:
    """The record hashes to the published release hash and was written under the current freeze (the
    files are checked against the record by verify_results)."""
    path = results_manifest_path(study)
    if not path.is_file():
        return [
            Check(
                RELEASE_SUBJECT,
                RESULTS_MANIFEST_NAME,
                FAIL,
                f"{path} is missing: nothing to check against the published release hash {published}",
            )
        ]
    current, published = release_hash(study), published.strip().lower()
    checks = [
        Check(
            RELEASE_SUBJECT,
            "published release hash",
            PASS if current == published else FAIL,
            f"the release record hashes to {current}"
            + (
                ", the published hash"
                if current == published
                else f", not the published {published}: it was rewritten since the release"
            ),
        )
    ]
    recorded, frozen = read_json(path).get("frozen_config_hash"), frozen_hash(study)
    if recorded != frozen:
        checks.append(
            Check(
                RELEASE_SUBJECT,
                RESULTS_MANIFEST_NAME,
                FAIL,
                f"written under frozen hash {str(recorded)[:12]}, but the study is frozen as {frozen[:12]}",
            )
        )
    return checks


def verify_results(study: Study) -> list[Check]:
    path = results_manifest_path(study)
    if not path.is_file():
        return [
            Check(
                SUBJECT,
                RESULTS_MANIFEST_NAME,
                FAIL,
                f"{path} is missing: the released results carry no content "
                "hashes; rerun the last stage that wrote them",
            )
        ]
    record = read_json(path)
    listed = record.get("files") if isinstance(record, dict) else None
    if not isinstance(listed, dict):
        raise HarnessError(f"{path}: expected an object with a `files` object")
    present = released_files(study)
    checks = [_verify_listed(study, rel, entry) for rel, entry in sorted(listed.items())]
    failed = [c for c in checks if c is not None]
    if not failed:
        failed.append(
            Check(SUBJECT, RESULTS_MANIFEST_NAME, PASS, f"{len(listed)} released file(s) match their SHA-256")
        )
    unlisted = sorted(set(present) - set(listed))
    failed += [
        Check(
            SUBJECT,
            f"results/{rel}",
            FAIL,
            f"not listed in {RESULTS_MANIFEST_NAME}: added after the last stage",
        )
        for rel in unlisted[:MAX_LISTED]
    ]
    if len(unlisted) > MAX_LISTED:
        failed.append(
            Check(SUBJECT, "(unlisted)", FAIL, f"... and {len(unlisted) - MAX_LISTED} more unlisted files")
        )
    failed += _verify_study_files(study, record.get("study_files"))
    return failed + [
        csv_matches_parquet(p) for p in per_question_csvs(study) if p.with_suffix(".parquet").is_file()
    ]


def _verify_study_files(study: Study, listed: Any) -> list[Check]:
    if not isinstance(listed, dict):
        return [
            Check(
                SUBJECT,
                RESULTS_MANIFEST_NAME,
                FAIL,
                "lists no study files (the selection, DEVIATIONS.md): "
                "written by an older harness; rerun the last stage",
            )
        ]
    out = []
    for rel, entry in sorted(listed.items()):
        path = study.root / rel
        if not path.is_file():
            out.append(Check(SUBJECT, rel, FAIL, f"listed in {RESULTS_MANIFEST_NAME} but missing"))
        elif not isinstance(entry, dict) or {k: entry.get(k) for k in ("sha256", "bytes")} != _entry(path):
            lost = lost_deviations(study) if rel == DEVIATIONS_NAME else None
            what = (
                "entries appended after it was recorded (rerun the last stage to record them)"
                if lost == 0
                else "edited after it was recorded"
                + (f" ({lost} recorded entries removed or edited)" if lost else "")
            )
            out.append(Check(SUBJECT, rel, FAIL, f"{what}: SHA-256 {sha256_file(path)[:12]}, manifest "
                                                 f"{str((entry or {}).get('sha256'))[:12]}"))
    out += [Check(SUBJECT, rel, FAIL, f"not listed in {RESULTS_MANIFEST_NAME}: written after the last record")
            for rel in sorted(set(released_study_files(study)) - set(listed))]
    return out or [Check(SUBJECT, "study files", PASS, f"{len(listed)} study file(s) match their SHA-256 "
                                                      f"({', '.join(sorted(listed))})")]


def _verify_listed(study: Study, rel: str, entry: Any) -> Check | None:
    path = results_dir(study) / rel
    if not path.is_file():
        return Check(SUBJECT, f"results/{rel}", FAIL, "listed in the manifest but missing")
    if not isinstance(entry, dict):
        return Check(SUBJECT, f"results/{rel}", FAIL, f"malformed manifest entry {entry!r}")
    size, sha = path.stat().st_size, sha256_file(path)
    if (entry.get("sha256"), entry.get("bytes")) == (sha, size):
        return None
    return Check(
        SUBJECT,
        f"results/{rel}",
        FAIL,
        f"edited after it was written: SHA-256 {sha[:12]} ({size} bytes), "
        f"manifest {str(entry.get('sha256'))[:12]} ({entry.get('bytes')} bytes)",
    )


def per_question_csvs(study: Study) -> list[Path]:
    """Every CSV under results/per_question (one without a Parquet twin is the table itself: nothing to
    compare)."""
    folder = per_question_dir(study)
    return sorted(folder.rglob("*.csv")) if folder.is_dir() else []


def csv_matches_parquet(csv_path: Path) -> Check:
    """The CSV and its Parquet twin hold the same rows, value by value (floats exactly, as float() reads the
    CSV's text). The CSV is read a block of rows at a time and compared with the table's rows at C speed;
    a file that differs anywhere (or has a row of another width) is compared again row by row, which
    names the first difference."""

    table = read_per_question(csv_path.with_suffix(".parquet"))
    if _blocks_equal(csv_path, table):
        return Check(SUBJECT, csv_path.name, PASS,
                     f"{len(table)} rows equal to {csv_path.with_suffix('.parquet').name}, value by value")
    return _rows_compared(csv_path, table)


def _blocks_equal(csv_path: Path, table: pd.DataFrame) -> bool:
    """True only when _rows_compared passes: the header is COLUMNS, every row has their width, the row
    counts agree and every field equals the table's (an id as text, the value as float() parses it; NaN
    equals NaN). Anything the C parser reads otherwise (a blank line, a short row) differs from the
    table, whose values are never NaN, or fails the parse; the row-by-row comparison then says what."""
    with open(csv_path, encoding="utf-8", newline="") as f:
        if tuple(next(csv.reader(f), ())) != COLUMNS:
            return False
        start = 0
        try:
            for block in pd.read_csv(f, header=None, dtype=object, keep_default_na=False, na_filter=False,
                                     skip_blank_lines=False, chunksize=CSV_BLOCK_ROWS):
                end = start + len(block)
                if end > len(table) or block.shape[1] != len(COLUMNS) or not _block_equal(
                        block, table.iloc[start:end]):
                    return False
                start = end
        except ValueError:  # no row after the header, a row too wide, a byte not UTF-8
            return False
    return start == len(table)


def _block_equal(block: pd.DataFrame, want: pd.DataFrame) -> bool:
    *texts, values = (block[i].tolist() for i in range(len(COLUMNS)))
    if any(got != want[c].tolist() for c, got in zip(COLUMNS, texts)):
        return False
    try:
        got = np.array(values, dtype=object).astype(float)  # float() of each text, as _same_float reads it
    except (TypeError, ValueError):
        return False
    expected = want["value"].to_numpy()
    return bool(np.all((got == expected) | (np.isnan(got) & np.isnan(expected))))


def _rows_compared(csv_path: Path, table: pd.DataFrame) -> Check:
    """The comparison row by row, in step with the table: how many values differ, and the first."""
    name = csv_path.name
    parquet = csv_path.with_suffix(".parquet")
    expected = table[list(COLUMNS)].itertuples(index=False, name=None)
    with open(csv_path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(header) != COLUMNS:
            return Check(
                SUBJECT, name, FAIL, f"header {header if header else '(empty file)'} is not {list(COLUMNS)}"
            )
        differences, first, lines, ragged = 0, None, 0, False
        for i, got in enumerate(reader):
            lines += 1
            ragged = ragged or len(got) != len(COLUMNS)
            want = next(expected, None)
            if want is None:
                continue
            for column, g, w in zip(COLUMNS, got, want):
                w = float(w) if column == "value" else str(w)
                same = _same_float(g, w) if isinstance(w, float) else g == w  # a float: the value column
                if not same:
                    differences += 1
                    first = first or f"line {i + 2} {column}: {g!r} in the CSV, {w!r} in {parquet.name}"
    if lines != len(table) or ragged:
        differences += 1
        first = first or f"{lines} rows in the CSV, {len(table)} in {parquet.name}"
    if differences:
        return Check(SUBJECT, name, FAIL, f"{differences} value(s) differ from {parquet.name}: {first}")
    return Check(SUBJECT, name, PASS, f"{lines} rows equal to {parquet.name}, value by value")


def _same_float(text: str, value: float) -> bool:
    try:
        parsed = float(text)
    except ValueError:
        return False
    return parsed == value or (math.isnan(parsed) and math.isnan(value))
