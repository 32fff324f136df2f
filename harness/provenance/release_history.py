"""The release record and DEVIATIONS.md against git history (docs/integrity.md, "The release record").

A file and its entry in results/results_manifest.json edited together pass the check of files against
the record; a published release hash catches that, and so does git once the record was committed:

  - DEVIATIONS.md only grows. Each committed version is compared with the version of each parent (and the
    working copy with HEAD's): an entry (a `## ` heading and its lines) of the earlier one that the later
    one lacks was removed or edited: a FAIL naming the commit, unless a later entry names that commit (a
    correction logged in the open).
  - The release record is never rewritten under one freeze. The harness writes a chunk set, run file,
    per-question part, answer file or cached model output once for a given freeze (the same inputs give
    the same bytes), so between two committed versions of the record with the same frozen hash such an
    entry may be added but not changed or dropped. The tables assembled from parts, the reader's and
    judge's records and the statistics are rebuilt as the grid fills; the audit recomputes those. A cell's
    done marker carries its completion time and may be rewritten.
  - A change of frozen hash once per-question results were committed is a re-freeze after outcomes: it
    needs an entry appended to DEVIATIONS.md in between (as `harness freeze --force` writes).
  - A generation cache keeps every complete line it had: a line dropped or edited is a FAIL, unless the
    freeze changed with a logged deviation.

Outside git and without a published release hash nothing anchors the record: the release is NOT VERIFIABLE,
as an unanchored registration is (harness.provenance.registration), never a pass.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from harness.grid.paths import RESULTS_MANIFEST_NAME, results_manifest_path
from harness.provenance.checks import Check, FAIL, NOT_VERIFIABLE, PASS
from harness.provenance.registration import study_relative
from harness.provenance.release import DEVIATIONS_NAME, deviation_entries
from harness.provenance.timeline import (
    committed_bytes, file_history, head_commit, in_git, touched_between, utc_iso,
)
from harness.study import Study

SUBJECT = "(release)"
MAX_NAMED = 3
WORKING_COPY = "the working copy (uncommitted)"
# written once per freeze: a cell's or chunk set's files (not its done marker, which carries a time) and the
# cached model outputs of embeddings/; the rest is rebuilt as the grid fills, or only grows (generations)
WRITTEN_ONCE = re.compile(r"^(?:(?:chunks|runs|per_question|answers)/[^/]+/(?!.*\.done\.json$)|embeddings/)")


def verify_release_history(study: Study, *, release_hash: str | None = None) -> list[Check]:
    """The record and DEVIATIONS.md against git history; outside git, with no published release hash
    (checked by harness.provenance.release.verify_release_hash), a NOT VERIFIABLE release."""
    if in_git(study.root):
        return _deviations_only_grow(study) + _record_never_rewritten(study)
    if release_hash is not None:
        return []
    return [Check(SUBJECT, RESULTS_MANIFEST_NAME, NOT_VERIFIABLE,
                  "release not verifiable: the study is not in a git repository and no --release-hash was "
                  "given, so nothing outside its editable files anchors the release record (a file edited "
                  "with its entry passes the check against the record)")]


def _steps(
    root: Path, history: list[tuple[str, dt.datetime, list[str]]],
) -> list[tuple[str | None, str | None, str]]:
    """(commit, its time, parent) for each commit of a file's history and each of its parents, then (None,
    None, HEAD): the working copy against the last commit."""
    steps = [(c, utc_iso(t), p) for c, t, parents in history for p in parents]
    head = head_commit(root)
    return steps + ([(None, None, head)] if head is not None else [])


# --- DEVIATIONS.md ---


def _deviations_only_grow(study: Study) -> list[Check]:
    root, rel = study.root, DEVIATIONS_NAME
    path = root / rel
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    history = file_history(root, rel)
    if not history:
        return []
    out = []
    for commit, when, parent in _steps(root, history):
        before = committed_bytes(root, parent, rel)
        if before is None:
            continue
        after = (
            current
            if commit is None
            else (committed_bytes(root, commit, rel) or b"").decode("utf-8", "replace")
        )
        kept = set(deviation_entries(after))
        lost = [e for e in deviation_entries(before.decode("utf-8", "replace")) if e not in kept]
        if not lost:
            continue
        where = WORKING_COPY if commit is None else f"commit {commit[:12]} at {when}"
        corrections = [e for e in deviation_entries(current) if commit is not None and commit[:12] in e]
        named = "; ".join(repr(e.splitlines()[0][3:]) for e in lost[:MAX_NAMED])
        more = f" and {len(lost) - MAX_NAMED} more" if len(lost) > MAX_NAMED else ""
        if corrections:
            out.append(
                Check(
                    SUBJECT,
                    rel,
                    PASS,
                    f"entry {named}{more} edited or removed in {where}, logged by "
                    f"the entry {corrections[0].splitlines()[0][3:]!r}",
                )
            )
        else:
            out.append(
                Check(
                    SUBJECT,
                    rel,
                    FAIL,
                    f"entry {named}{more} removed or edited in {where}: entries are only ever appended",
                )
            )
    return out or [
        Check(SUBJECT, rel, PASS, f"{len(history)} commit(s): every entry kept since it was committed")
    ]


# --- the release record ---


def _record(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        record = json.loads(data)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _files(record: dict[str, Any]) -> dict[str, Any]:
    files = record.get("files")
    return files if isinstance(files, dict) else {}


def _record_never_rewritten(study: Study) -> list[Check]:
    root = study.root
    rel = study_relative(study, results_manifest_path(study))
    if rel is None:
        return []
    history = file_history(root, rel)
    if not history:
        return []
    results = rel[: -len(RESULTS_MANIFEST_NAME)]  # the results folder, study-relative, with its slash
    path = root / rel
    out = []
    for commit, when, parent in _steps(root, history):
        before = _record(committed_bytes(root, parent, rel))
        if before is None:
            continue
        after = _record(path.read_bytes() if path.is_file() else None) if commit is None else \
            _record(committed_bytes(root, commit, rel))
        where = WORKING_COPY if commit is None else f"commit {commit[:12]} at {when}"
        refrozen = after is None or before.get("frozen_config_hash") != after.get("frozen_config_hash")
        logged = refrozen and _deviation_logged(study, parent, commit)
        if after is None:
            if any(k.startswith("per_question/") for k in _files(before)) and not logged:
                out.append(
                    Check(
                        SUBJECT,
                        rel,
                        FAIL,
                        f"deleted in {where} once per-question results existed, with "
                        f"no entry appended to {DEVIATIONS_NAME}",
                    )
                )
            continue
        out += [Check(SUBJECT, rel, FAIL, f"{problem} in {where}")
                for problem in _rewrites(study, before, after, logged, results, parent, commit)]
    return out or [
        Check(
            SUBJECT,
            rel,
            PASS,
            f"{len(history)} commit(s): no released file rewritten under one "
            "freeze, no re-freeze after outcomes unlogged, no generation lost",
        )
    ]


def _deviation_logged(study: Study, parent: str, commit: str | None) -> bool:
    """Whether DEVIATIONS.md gained an entry after `parent` up to `commit` (None: the working copy)."""
    if commit is not None:
        return touched_between(study.root, parent, commit, DEVIATIONS_NAME)
    path = study.root / DEVIATIONS_NAME
    now = path.read_text(encoding="utf-8") if path.is_file() else ""
    then = (committed_bytes(study.root, parent, DEVIATIONS_NAME) or b"").decode("utf-8", "replace")
    return len(deviation_entries(now)) > len(deviation_entries(then))


def _rewrites(study: Study, before: dict[str, Any], after: dict[str, Any], logged: bool, results: str,
              parent: str, commit: str | None) -> list[str]:
    """What a change from one version of the record to the next did that no stage does."""
    problems = []
    old_files, new_files = _files(before), _files(after)
    old_hash, new_hash = before.get("frozen_config_hash"), after.get("frozen_config_hash")
    changed = sorted(k for k, e in old_files.items() if new_files.get(k) != e)
    if old_hash == new_hash:
        rewritten = [k for k in changed if WRITTEN_ONCE.match(k)]
        if rewritten:
            more = f" and {len(rewritten) - MAX_NAMED} more" if len(rewritten) > MAX_NAMED else ""
            problems.append(f"{len(rewritten)} released file(s) rewritten under the same freeze "
                            f"{str(new_hash)[:12]} ({', '.join(rewritten[:MAX_NAMED])}{more}): the harness "
                            "writes each once per freeze")
    elif any(k.startswith("per_question/") for k in old_files) and not logged:
        problems.append(
            f"re-frozen from {str(old_hash)[:12]} to {str(new_hash)[:12]} once per-question results "
            f"existed, with no entry appended to {DEVIATIONS_NAME}"
        )
    if old_hash != new_hash and logged:
        return problems  # a logged re-freeze may regenerate the model outputs (a new model, FRESH=1)
    for key in (k for k in changed if k.startswith("generations/")):
        lost = _lost_lines(study, results + key, parent, commit)
        if lost:
            problems.append(f"{key}: {lost} cached generation(s) removed or edited")
    return problems


def _lost_lines(study: Study, rel: str, parent: str, commit: str | None) -> int:
    """Complete lines of `rel` at `parent` missing from it at `commit` (None: the working copy)."""
    before = committed_bytes(study.root, parent, rel)
    if before is None:
        return 0  # not committed: nothing to compare with
    if commit is None:
        path = study.root / rel
        after = path.read_bytes() if path.is_file() else b""
    else:
        after = committed_bytes(study.root, commit, rel) or b""
    kept = set(after.splitlines())
    complete = before[: before.rfind(b"\n") + 1]  # a torn last line is cut on the next write
    return sum(1 for line in complete.splitlines() if line not in kept)
