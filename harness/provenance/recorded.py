"""No stage records what it did not write: the write journal checked before a stage records the release.

The write journal (harness.files) holds the SHA-256 of every file the harness wrote under results/, a killed
run's output included. A stage that records the release first checks that every released file is one the
harness wrote: a file it did not write (a hand edit, a file added, a result of a lost journal) is refused
unless the stage rebuilds that very file, or the user adopts it as a logged deviation. The model-output
caches (generations/, and the model outputs under embeddings/) grow by appended lines, not atomic writes:
they are not journaled, and are bound by the release record and re-derived by the audit instead.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json, remove_stale_temporaries, sha256_file
from harness.grid.paths import RELEASED_FOLDERS, journal_dir, results_dir
from harness.provenance.interim import record_deviation
from harness.provenance.release import MAX_LISTED, record_results, released_files
from harness.study import Study

APPENDED_CACHES = ("generations/", "embeddings/")

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


def _object(path: Path) -> dict[str, Any]:
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
        if rel.startswith(APPENDED_CACHES):
            continue
        sha = sha256_file(path)
        written = (journaled or {}).get(rel, set())
        if sha in written:
            verified[rel] = sha
        elif not exempt(rel):
            foreign[rel] = sha
            problems.append(
                f"results/{rel}: "
                + (
                    "edited after it was written (its SHA-256 "
                    + sha[:12]
                    + " is not one the harness wrote there)"
                    if written
                    else "not recorded: the harness never wrote it (added by hand?)"
                )
            )
    if problems and adopt:
        _adopt(study, stage, adopt, foreign)
        verified |= foreign
    elif problems:
        shown = "\n".join(f"  {p}" for p in problems[:MAX_LISTED])
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        why = (
            f"the study has no write journal ({journal_dir(study)}): its results predate it, or it was "
            "removed"
            if journaled is None
            else "the write journal holds what every harness stage wrote"
        )
        raise HarnessError(
            f"{stage}: refusing to run over {len(problems)} released file(s) the harness did not write "
            f"({why}):\n"
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


def record_release(study: Study) -> None:
    """A writing stage's last step: the release record (harness.provenance.release.record_results), then the
    journal compacted to the recorded files it holds, so that a rerun which changes nothing finds nothing
    to fold in and writes nothing."""
    manifest = read_json(record_results(study))
    read = sorted(journal_dir(study).glob("*.jsonl")) if journal_dir(study).is_dir() else []
    journaled = journaled_hashes(study)
    if journaled is None:
        return
    verified = {rel: entry["sha256"] for rel, entry in manifest.get("files", {}).items()
                if entry.get("sha256") in journaled.get(rel, ())}
    _compact_journal(study, verified, read)
