"""The fetch stage: every declared source that is missing is fetched, checked and written atomically;
every one present is verified against data/SOURCES.lock.

Per target, in path order:
  - present and locked: its SHA-256 (a checkout: its HEAD, tree and clean status) must equal the lock's:
    `verified`, else a mismatch;
  - present, not locked: `already present` (placed by hand; `--update` fetches and locks it); a checkout at
    the declared commit is verified and locked;
  - missing (or any target with `update`): fetched at the locked revision (else the declared one, else the
    hub's current one, which the lock then pins), checked (row count, the adapter's reader, and without
    `update` the lock's hash) before anything is written, then renamed into place: `written`.
A mismatch stops the fetch with exit 2 naming the file, the expected and the actual hash; a source that
cannot be reached is reported with what to place by hand instead, and the others are still fetched.
The lock is written after each target, so an interrupted fetch resumes where it stopped.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

from harness.config import to_plain
from harness.data.hub import HubUnavailable, load_rows, resolve_revision
from harness.errors import DriftError, HarnessError
from harness.files import atomic_write_bytes, remove_stale_temporaries, sha256_bytes, sha256_file
from harness.sources import remote
from harness.sources.formats import FORMATS
from harness.sources.lock import lock_path, read_lock, write_lock
from harness.sources.targets import Target, declared_targets
from harness.study import Study

WRITTEN, PRESENT, VERIFIED = "written", "already present", "verified"


@dataclass(frozen=True)
class Outcome:
    path: str
    state: str
    detail: str

    def line(self) -> str:
        return f"{self.state:<16} {self.path}  {self.detail}"


class Mismatch(HarnessError):
    """Content differs from what the lock or the config pins."""


@dataclass
class Report:
    outcomes: list[Outcome]
    mismatches: list[str]
    unavailable: list[str]
    lock_changed: bool


def plan(study: Study) -> list[str]:
    """--dry-run: one line per declared target, what a fetch would do and from which source (no network)."""
    entries = read_lock(study)
    lines = []
    for target in declared_targets(study):
        present = study.resolve(target.path).exists()
        verb = (
            "would verify" if present and target.path in entries else "present" if present else "would write"
        )
        pin = entries.get(target.path, {}).get("revision") or entries.get(target.path, {}).get("commit")
        lines.append(
            f"{verb:<13} {target.path}  <- {target.describe()}" + (f" [locked {pin}]" if pin else "")
        )
    return lines


def fetch(study: Study, *, update: bool = False, progress: bool = True) -> Report:
    entries = read_lock(study)
    targets = declared_targets(study)
    report = Report([], [], [], False)
    for target in tqdm(targets, desc="fetch", unit="source", disable=not progress):
        try:
            outcome, entry = _one(study, target, entries.get(target.path), update=update, progress=progress)
        except Mismatch as e:
            report.mismatches.append(str(e))
            continue
        except (HubUnavailable, remote.Unavailable) as e:
            report.unavailable.append(
                f"source `{target.declared_at}` ({target.describe()}) cannot be fetched: {e}\n"
                f"    instead, place {target.path} by hand ({target.what}) and run `harness fetch` again")
            continue
        report.outcomes.append(outcome)
        if entry is not None and entries.get(target.path) != entry:
            entries[target.path] = entry
            write_lock(study, entries)
            report.lock_changed = True
    return report


def _one(study: Study, target: Target, locked: dict | None, *, update: bool, progress: bool):
    declared = to_plain(target.source)
    if locked is not None and locked.get("source") != declared and not update:
        raise Mismatch(
            f"{target.path}: its source in the config differs from the one in {lock_path(study)} "
            f"(locked {locked.get('source')}, declared {declared}); run `harness fetch --update` to move"
        )
    path = study.resolve(target.path)
    if target.is_checkout:
        return _checkout(target, path, declared, None if update else locked, progress)
    if path.is_file() and not update:
        if locked is None:  # placed by hand: nothing to hold it to, but the adapter must be able to read it
            try:
                FORMATS[target.role].check(path)
            except HarnessError as e:
                raise HarnessError(
                    f"{target.path}: placed by hand, but the adapter refuses it: {e}"
                ) from None
            return Outcome(
                target.path, PRESENT, "(not in the lock: placed by hand; `--update` fetches and locks it)"
            ), None
        expected, pinned_by = _expected_sha256(target, locked)
        _same(target.path, expected, sha256_file(path), pinned_by)
        if locked["sha256"] != expected:  # the lock says otherwise than the config, which outranks it
            locked = {**locked, "sha256": expected, "bytes": path.stat().st_size}
        return Outcome(target.path, VERIFIED, f"sha256 {expected[:12]}"), locked
    data, revision, rows = _content(target, None if update else locked, progress)
    entry = {"source": declared, "sha256": sha256_bytes(data), "bytes": len(data)}
    entry |= {"revision": revision, "rows": rows} if target.source.kind == "huggingface" else {}
    if locked is not None and not update:
        expected, pinned_by = _expected_sha256(target, locked)
        _same(target.path, expected, entry["sha256"], pinned_by)
    if path.is_file() and sha256_file(path) == entry["sha256"]:
        return Outcome(target.path, VERIFIED, f"sha256 {entry['sha256'][:12]} (unchanged upstream)"), entry
    _check_format(target, path, data)
    remove_stale_temporaries(path.parent)
    atomic_write_bytes(path, data)
    return Outcome(target.path, WRITTEN, _describe(entry)), entry


def _expected_sha256(target: Target, locked: dict) -> tuple[str, str]:
    """The hash a fetched file is held to, and who declares it: the config's `sha256` of a plain `url:` file
    outranks the lock (an edited lock must not vouch for an edited file); any other file, the lock's."""
    spec = target.source.spec
    if target.source.kind == "url" and not spec.member:
        return spec.sha256, "config"
    return locked["sha256"], "SOURCES.lock"


def _same(path: str, expected: str, actual: str, declared_in: str = "SOURCES.lock") -> None:
    if expected != actual:
        raise Mismatch(f"{path}: sha256 expected {expected} ({declared_in}), actual {actual}")


def _describe(entry: dict) -> str:
    parts = [f"revision {entry['revision']}" if entry.get("revision") else "",
             f"{entry['rows']} rows" if entry.get("rows") is not None else "",
             f"{entry['bytes']} bytes", f"sha256 {entry['sha256'][:12]}"]
    return ", ".join(p for p in parts if p)


def _content(target: Target, locked: dict | None, progress: bool) -> tuple[bytes, str | None, int | None]:
    """The file's bytes from its source, checked against the declared hash or row count; and the resolved
    revision and row count of hub rows."""
    spec = target.source.spec
    if target.source.kind == "url":
        data = remote.download(spec.href, progress=progress)
        if sha256_bytes(data) != spec.sha256:
            raise Mismatch(f"{target.path}: {spec.href} sha256 expected {spec.sha256} (config), "
                           f"actual {sha256_bytes(data)}")
        return (remote.archive_member(data, spec.member, spec.href) if spec.member else data), None, None
    fmt = FORMATS[target.role]
    revision = (locked or {}).get("revision") or resolve_revision(spec.id, spec.revision)
    rows = load_rows(spec.id, split=spec.split, config=spec.config, revision=revision, progress=progress)
    expected = spec.rows if spec.rows is not None else (locked or {}).get("rows")
    if expected is not None and len(rows) != expected:
        source = "config" if spec.rows is not None else "SOURCES.lock"
        raise Mismatch(
            f"{target.path}: {spec.id} split {spec.split} has {len(rows)} rows, expected {expected} "
            f"({source})"
        )
    try:
        text = fmt.from_rows(rows, f"{spec.id}/{spec.split}")
    except HarnessError as e:
        raise _refused(target, e) from None
    return text.encode("utf-8"), revision, len(rows)


def _check_format(target: Target, path: Path, data: bytes) -> None:
    """The adapter's reader over the bytes, beside the target (relative paths inside resolve), before the
    target is written; a refused file leaves nothing behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(prefix=f".{path.name}.check-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        FORMATS[target.role].check(Path(scratch))
    except HarnessError as e:
        raise _refused(target, e) from None
    finally:
        Path(scratch).unlink(missing_ok=True)


def _refused(target: Target, error: HarnessError) -> HarnessError:
    return HarnessError(
        f"{target.path}: {target.describe()} gave content the adapter refuses, nothing written: {error}"
    )


def _checkout(target: Target, path: Path, declared: dict, locked: dict | None, progress: bool):
    spec = target.source.spec
    commit = str(locked["commit"] if locked else spec.commit)
    if path.exists():
        found = remote.head(path)
        if found is None:
            return Outcome(
                target.path, PRESENT, "(not a git checkout: placed by hand, its commit not verified)"
            ), None
        if not found.startswith(commit):
            raise Mismatch(
                f"{target.path}: HEAD expected {commit} ({'SOURCES.lock' if locked else 'config'}), "
                f"actual {found} (remove the folder to fetch the declared commit)"
            )
        changed = remote.modified_files(path)
        if changed:
            raise Mismatch(f"{target.path}: {len(changed)} tracked file(s) modified since the checkout, e.g. "
                           f"{changed[0].strip()}")
        summary = remote.tree_summary(path)
        if locked and summary["tree"] != locked["tree"]:
            raise Mismatch(
                f"{target.path}: tree expected {locked['tree']} (SOURCES.lock), actual {summary['tree']}"
            )
        return Outcome(target.path, VERIFIED, f"commit {summary['commit']}"), {"source": declared, **summary}
    remote.checkout_commit(spec.repository, commit, path, progress=progress)
    summary = remote.tree_summary(path)
    return Outcome(target.path, WRITTEN, f"commit {summary['commit']}, {summary['files']} files, "
                                         f"{summary['bytes']} bytes"), {"source": declared, **summary}


def finish(report: Report, study: Study, *, update: bool, echo: Callable[[str], Any] = print) -> int:
    """One line per target, the lock, then the refusals: exit 2 on a mismatch, 1 when a source was
    unavailable."""
    for outcome in report.outcomes:
        echo(outcome.line())
    if report.lock_changed:
        echo(f"{'updated' if update else 'wrote'} {lock_path(study)}")
    elif update:
        echo(f"{lock_path(study)} unchanged: every source resolved as locked")
    if report.mismatches:
        raise DriftError("refused, nothing written for these:\n  " + "\n  ".join(report.mismatches))
    if report.unavailable:
        raise HarnessError(
            f"{len(report.unavailable)} source(s) not fetched:\n  " + "\n  ".join(report.unavailable)
        )
    return 0

