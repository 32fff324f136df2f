"""Released results carry content hashes: results/results_manifest.json lists the SHA-256 and size of
every file under the released folders (chunk sets, run files, per-question tables and their parts,
answers, judge records, statistics).

Every stage that writes there calls `record_results` last. It walks the folders generically (so a file a
new stage adds is covered without a list to keep up to date) and rewrites the manifest; it holds no time,
so a rerun that changes nothing writes the same bytes. The audit (`verify_results`) re-hashes every
listed file, reports files under those folders that the manifest does not list, and compares each
per-question CSV with its Parquet twin value by value: any edit is a FAIL naming the file.
A file edited between two stages is refused by the second, which checks every released file against the
write journal before it writes (`require_recorded`, below), so a stage never records what it did not write.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json, remove_stale_temporaries, sha256_file
from harness.provenance.checks import Check, FAIL, PASS
from harness.provenance.freeze import frozen_hash
from harness.provenance.interim import record_deviation
from harness.study import Study
from harness.grid.paths import (
    RELEASED_FOLDERS, RESULTS_MANIFEST_NAME, journal_dir, per_question_dir, results_dir, results_manifest_path,
)
from harness.grid.results import COLUMNS, read_per_question

SUBJECT = "(results)"
MAX_LISTED = 20



def released_files(study: Study) -> dict[str, Path]:
    """results-relative path -> file, for every file under the released folders (temporary files too:
    a leftover of a killed run is not part of a release and must show)."""
    out = {}
    for name in RELEASED_FOLDERS:
        folder = results_dir(study) / name
        if folder.is_dir():
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    out[p.relative_to(results_dir(study)).as_posix()] = p
    return out


def record_results(study: Study) -> Path:
    """Write the results manifest for the released files as they are now; returns its path."""

    files = {rel: {"sha256": sha256_file(p), "bytes": p.stat().st_size} for rel, p in released_files(study).items()}
    path = results_manifest_path(study)
    atomic_write_json(path, {"frozen_config_hash": frozen_hash(study), "files": files})
    return path


def verify_results(study: Study) -> list[Check]:
    path = results_manifest_path(study)
    if not path.is_file():
        return [Check(SUBJECT, RESULTS_MANIFEST_NAME, FAIL, f"{path} is missing: the released results carry no content "
                                                   "hashes; rerun the last stage that wrote them")]
    listed = read_json(path).get("files")
    if not isinstance(listed, dict):
        raise HarnessError(f"{path}: expected an object with a `files` object")
    present = released_files(study)
    checks = [_verify_listed(study, rel, entry) for rel, entry in sorted(listed.items())]
    failed = [c for c in checks if c is not None]
    if not failed:
        failed.append(Check(SUBJECT, RESULTS_MANIFEST_NAME, PASS, f"{len(listed)} released file(s) match their SHA-256"))
    unlisted = sorted(set(present) - set(listed))
    failed += [Check(SUBJECT, f"results/{rel}", FAIL, f"not listed in {RESULTS_MANIFEST_NAME}: added after the last stage")
               for rel in unlisted[:MAX_LISTED]]
    if len(unlisted) > MAX_LISTED:
        failed.append(Check(SUBJECT, "(unlisted)", FAIL, f"... and {len(unlisted) - MAX_LISTED} more unlisted files"))
    return failed + [csv_matches_parquet(p) for p in per_question_csvs(study) if p.with_suffix(".parquet").is_file()]


def _verify_listed(study: Study, rel: str, entry: Any) -> Check | None:
    path = results_dir(study) / rel
    if not path.is_file():
        return Check(SUBJECT, f"results/{rel}", FAIL, "listed in the manifest but missing")
    if not isinstance(entry, dict):
        return Check(SUBJECT, f"results/{rel}", FAIL, f"malformed manifest entry {entry!r}")
    size, sha = path.stat().st_size, sha256_file(path)
    if (entry.get("sha256"), entry.get("bytes")) == (sha, size):
        return None
    return Check(SUBJECT, f"results/{rel}", FAIL, f"edited after it was written: SHA-256 {sha[:12]} ({size} bytes), "
                                                  f"manifest {str(entry.get('sha256'))[:12]} ({entry.get('bytes')} bytes)")


def per_question_csvs(study: Study) -> list[Path]:
    """Every CSV under results/per_question (one without a Parquet twin is the table itself: nothing to compare)."""
    folder = per_question_dir(study)
    return sorted(folder.rglob("*.csv")) if folder.is_dir() else []


def csv_matches_parquet(csv_path: Path) -> Check:
    """The CSV and its Parquet twin hold the same rows, value by value (floats exactly). Both are read
    row by row in step, so a table of millions of rows is never held twice."""

    name = csv_path.name
    parquet = csv_path.with_suffix(".parquet")
    table = read_per_question(parquet)
    expected = table[list(COLUMNS)].itertuples(index=False, name=None)
    with open(csv_path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(header) != COLUMNS:
            return Check(SUBJECT, name, FAIL, f"header {header if header else '(empty file)'} is not {list(COLUMNS)}")
        differences, first, lines, ragged = 0, None, 0, False
        for i, got in enumerate(reader):
            lines += 1
            ragged = ragged or len(got) != len(COLUMNS)
            want = next(expected, None)
            if want is None:
                continue
            for column, g, w in zip(COLUMNS, got, want):
                w = float(w) if column == "value" else str(w)
                if (column == "value" and not _same_float(g, w)) or (column != "value" and g != w):
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


# --- no stage records what it did not write ---
# The write journal (harness.files) holds the SHA-256 of every file the harness wrote under results/, a killed
# run's output included. A stage that records the release first checks that every released file is one the
# harness wrote: a file it did not write (a hand edit, a file added, a result of a lost journal) is refused
# unless the stage rebuilds that very file, or the user adopts it as a logged deviation.

VERIFIED_NAME = "verified.json"  # the journal compacted to the files that passed the last check


def journaled_hashes(study: Study) -> dict[str, set[str]] | None:
    """results-relative path -> every SHA-256 the harness wrote there since the last check, or None when the
    study has no journal (its results predate it)."""
    folder = journal_dir(study)
    if not folder.is_dir():
        return None
    out: dict[str, set[str]] = defaultdict(set)
    verified = folder / VERIFIED_NAME
    if verified.is_file():
        for rel, sha in _object(verified).items():
            out[rel].add(sha)
    for path in sorted(folder.glob("*.jsonl")):
        for rel, sha in _journal_entries(path):
            out[rel].add(sha)
    return out


def _object(path: Path) -> dict:
    record = read_json(path)
    if not isinstance(record, dict):
        raise HarnessError(f"{path}: expected a JSON object (path -> SHA-256)")
    return record


def _journal_entries(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            out.append((entry["path"], entry["sha256"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            if i == len(lines):  # a line cut short by a kill: its file was never renamed into place
                continue
            raise HarnessError(f"{path}: line {i} is not a journal entry (path, sha256, bytes)") from None
    return out


def _compact_journal(study: Study, verified: dict[str, str], read: list[Path]) -> None:
    """Keep what passed the check as the journal's base; drop the per-process files folded into it."""
    atomic_write_json(journal_dir(study) / VERIFIED_NAME, verified)
    for path in read:
        path.unlink(missing_ok=True)


def require_recorded(study: Study, *, stage: str, exempt: Callable[[str], bool] = lambda rel: False,
                     adopt: str | None = None) -> None:
    """Refuse to run while a released file is not one the harness wrote (its journal holds no entry with the
    file's SHA-256), unless `exempt(rel)`: the stage rebuilds that very file from checked inputs (score and
    answer assemble the per-question tables from their parts), or takes it as its declared input. With
    `adopt` (a reason), such files are kept and listed in DEVIATIONS.md instead. On success the journal is
    compacted to the files checked.

    Without this, an edit made between two stages would be recorded afresh by the second (the manifest is
    rewritten from the files as they are). The journal, not the manifest, is the reference: it holds what a
    killed run wrote (so the rerun resumes it), and it still stands when the manifest is edited, deleted or
    written under another freeze."""
    for name in RELEASED_FOLDERS:  # a killed writer's temporaries are no released file
        remove_stale_temporaries(results_dir(study) / name)
    read = sorted(journal_dir(study).glob("*.jsonl")) if journal_dir(study).is_dir() else []
    journaled = journaled_hashes(study)
    problems, verified, foreign = [], {}, {}
    for rel, path in released_files(study).items():
        sha = sha256_file(path)
        written = (journaled or {}).get(rel, set())
        if sha in written:
            verified[rel] = sha
        elif not exempt(rel):
            foreign[rel] = sha
            problems.append(f"results/{rel}: " + ("edited after it was written (its SHA-256 " + sha[:12]
                                                  + " is not one the harness wrote there)" if written else
                                                  "not recorded: the harness never wrote it (added by hand?)"))
    if problems and adopt:
        _adopt(study, stage, adopt, foreign)
        verified |= foreign
    elif problems:
        shown = "\n".join(f"  {p}" for p in problems[:MAX_LISTED])
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        why = (f"the study has no write journal ({journal_dir(study)}): its results predate it, or it was removed"
               if journaled is None else "the write journal holds what every harness stage wrote")
        raise HarnessError(
            f"{stage}: refusing to run over {len(problems)} released file(s) the harness did not write ({why}):\n"
            f"{shown}{more}\n"
            "Restore them, or remove them so that the stage that writes them rebuilds them (`harness score` "
            "rebuilds the per-question tables from its parts); to keep them anyway, rerun with "
            f"`--adopt-unrecorded REASON` (logged in DEVIATIONS.md)."
        )
    _compact_journal(study, verified, read)


def _adopt(study: Study, stage: str, reason: str, files: dict[str, str]) -> None:
    listed = ", ".join(f"results/{rel} ({sha[:12]})" for rel, sha in sorted(files.items())[:MAX_LISTED])
    more = f" and {len(files) - MAX_LISTED} more" if len(files) > MAX_LISTED else ""
    record_deviation(study, f"{reason} [adopted {len(files)} released file(s) the harness did not write: "
                            f"{listed}{more}]", f"harness {stage} --adopt-unrecorded")


def assembled_table(rel: str) -> bool:
    """A dataset's per-question table (results/per_question/<dataset>.parquet or .csv): score and answer
    rebuild it from the parts on every run."""
    folder, _, name = rel.partition("/")
    return folder == "per_question" and "/" not in name and name.endswith((".parquet", ".csv"))
