"""Registration timeline of the plan and its amendments (docs/design.md, Integrity rules).

A registered file's time is the commit time of its first commit when the study lives in a git repository
and the file is committed (hard to back-date after the fact), else the time plan/REGISTRATION.json records
for it (`harness init` writes that record when the study is in no repository: the time and the SHA-256 of
each file it registered, so an edit since is shown as one), else the `created_at` (amendments) or
`registered_at` (plan.yaml) its YAML records. The record sits in plan/, so the freeze hashes it like the plan;
it is no anchor outside the study's files (the audit still wants git or a published hash).
Whether it came before any outcome is computed here, from the time the first per-question results were
written (results/per_question/FIRST_OUTCOME.json, written once by the first `score`), and never taken
from the file's own `before_outcomes` claim: an amendment registered after outcomes is post-outcome
whatever it says. A file whose time cannot be established counts as post-outcome once outcomes exist.
FIRST_OUTCOME.json also records the plan and amendments (id and SHA-256) of the freeze the first outcome
was written under: a file not in that list, or changed since, was registered under a later freeze and is
post-outcome whatever its time says (a commit date or `created_at` can be backdated; the freeze the
outcome saw cannot). The first outcome's time is never later than the completion time a cell's done
marker records, so moving FIRST_OUTCOME.json's time forward cannot make an amendment pre-outcome.
The claim can only make a label worse, never better: a file that says `before_outcomes: false` (its
authors had seen outcomes, e.g. from an earlier run or another copy of the study) is post-outcome even
when no outcome exists in this directory.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from harness.errors import InputError
from harness.files import atomic_write_json, load_yaml, note_written, read_json, sha256_bytes, sha256_file
from harness.study import Study
from harness.grid.paths import first_outcome_path, per_question_dir

RECORDED_TIME_FIELDS = ("created_at", "registered_at")  # amendments use the first, plan.yaml the second

# where a registration time came from
SOURCE_GIT = "git-commit"
SOURCE_RECORDED = "recorded"  # the file's own created_at / registered_at
SOURCE_RECORD = "registration-record"  # plan/REGISTRATION.json
RECORD_PATH = "plan/REGISTRATION.json"
SOURCE_NONE = "unknown"


@dataclass(frozen=True)
class TimelineEntry:
    id: str  # "plan" or the amendment's file stem, e.g. "0001-key-merge"
    path: str  # relative to the study root
    sha256: str
    registered_at: str | None  # ISO 8601 UTC, e.g. 2025-03-01T12:00:00Z
    time_source: str  # git-commit | registration-record | recorded | unknown
    claimed_before_outcomes: bool | None  # what the YAML says (None: says nothing)
    before_outcomes: bool  # computed by the harness
    changed_since_registration: (
        bool | None
    )  # bytes differ from the first commit or the record (None: neither)

    @property
    def label(self) -> str:
        return "pre-outcome" if self.before_outcomes else "post-outcome"

    @property
    def claim_contradicted(self) -> bool:
        return self.claimed_before_outcomes is True and not self.before_outcomes

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"label": self.label}


# --- time helpers ---


def utc_iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any, *, path: Path, field: str) -> dt.datetime:
    """A YAML timestamp (datetime, date or ISO string) as an aware UTC datetime; naive means UTC."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"`{field}` is not an ISO 8601 time: {value!r}", path=path) from None
    else:
        raise InputError(f"`{field}` must be an ISO 8601 time, got {value!r}", path=path)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


# --- git ---


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """Run git in `root`; None when git is absent or the call fails (not a repository, untracked...)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, timeout=30, check=False
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return proc if proc.returncode == 0 else None


def in_git(root: Path) -> bool:
    """Whether `root` lies inside a git work tree (git installed and the folder tracked by a repository)."""
    proc = _git(root, "rev-parse", "--is-inside-work-tree")
    return proc is not None and proc.stdout.strip() == b"true"


def file_commits(root: Path, rel: str) -> list[tuple[str, dt.datetime]]:
    """(commit, commit time) of every commit that changed `rel` (a file or folder), oldest first."""
    proc = _git(root, "log", "--format=%H %ct", "--", rel)
    if proc is None:
        return []
    fields = proc.stdout.decode().split()  # newest first
    pairs = [(fields[i], dt.datetime.fromtimestamp(int(fields[i + 1]), dt.timezone.utc))
             for i in range(0, len(fields) - 1, 2)]
    return pairs[::-1]


def file_history(root: Path, rel: str) -> list[tuple[str, dt.datetime, list[str]]]:
    """(commit, commit time, parents) of every commit that changed `rel`, merges included, newest first:
    each version is compared with the version of each of its parents, so a change made in a merge (or on
    a branch a merge dropped) shows too."""
    proc = _git(root, "log", "--full-history", "--format=%H %ct %P", "--", rel)
    if proc is None:
        return []
    out = []
    for line in proc.stdout.decode().splitlines():
        commit, when, *parents = line.split()
        out.append((commit, dt.datetime.fromtimestamp(int(when), dt.timezone.utc), parents))
    return out


def commit_times(root: Path, commits: list[str]) -> dict[str, dt.datetime]:
    """commit -> its commit time."""
    proc = _git(root, "show", "-s", "--format=%H %ct", *commits) if commits else None
    if proc is None:
        return {}
    pairs = (line.split() for line in proc.stdout.decode().splitlines() if line.strip())
    return {c: dt.datetime.fromtimestamp(int(t), dt.timezone.utc) for c, t in pairs}


def backdated_parents(root: Path, commit: str) -> list[tuple[str, dt.datetime]]:
    """(parent, time) of each parent of `commit` whose commit time is later than its own: the commit's date
    was set back (a child is always made after its parents)."""
    proc = _git(root, "show", "-s", "--format=%P", commit)
    parents = proc.stdout.decode().split() if proc is not None else []
    times = commit_times(root, [commit, *parents])
    own = times.get(commit)
    return [(p, times[p]) for p in parents if own is not None and p in times and times[p] > own]


def touched_between(root: Path, old: str, new: str, rel: str) -> bool:
    """Whether a commit after `old` up to `new` changed `rel`."""
    proc = _git(root, "rev-list", "-n", "1", f"{old}..{new}", "--", rel)
    return proc is not None and bool(proc.stdout.strip())


def head_commit(root: Path) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return None if proc is None else proc.stdout.decode().strip()


def first_commit(root: Path, rel: str) -> tuple[str, dt.datetime] | None:
    """(commit, commit time) of the oldest commit that touched `rel`, or None."""
    commits = file_commits(root, rel)
    return commits[0] if commits else None


def committed_bytes(root: Path, commit: str, rel: str) -> bytes | None:
    proc = _git(root, "show", f"{commit}:./{rel}")
    return None if proc is None else proc.stdout


# --- the registration record (a study in no git repository) ---


def write_registration_record(root: Path, files: list[str], moment: dt.datetime) -> Path:
    """plan/REGISTRATION.json: `moment` and the SHA-256 of each file (paths relative to `root`)."""
    path = root / RECORD_PATH
    atomic_write_json(
        path,
        {
            "registered_at": utc_iso(moment),
            "written_by": "harness init",
            "files": {rel: sha256_bytes((root / rel).read_bytes()) for rel in sorted(files)},
        },
    )
    return path


def registration_record(root: Path) -> tuple[dt.datetime, dict[str, str]] | None:
    """(time, path -> SHA-256) of plan/REGISTRATION.json, or None when the study has none."""
    path = root / RECORD_PATH
    if not path.is_file():
        return None
    record = read_json(path)
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise InputError("expected an object with `registered_at` and `files` (path -> SHA-256)", path=path)
    return parse_time(record.get("registered_at"), path=path, field="registered_at"), files


# --- outcomes ---


@dataclass(frozen=True)
class FirstOutcome:
    """What FIRST_OUTCOME.json records."""

    at: dt.datetime
    frozen_hash: str | None
    registration: (
        dict[str, str] | None
    )  # id -> SHA-256 of the plan and amendments then frozen (None: not recorded)


class _FirstOutcomeRecord(TypedDict):
    """FIRST_OUTCOME.json as record_first_outcome writes it."""

    first_outcome_at: str
    frozen_hash: str | None
    registration: NotRequired[dict[str, str]]


def record_first_outcome(study: Study, *, frozen_hash: str | None = None) -> dt.datetime:
    """Record now as the time of the first per-question results, once; later calls return that time.

    `score` calls this just before it writes its first per-question file. The file is created with an
    exclusive link, so two concurrent scorers cannot both record a time. Beside the time and the frozen
    hash it records the plan and amendments of that freeze, which the timeline compares later ones with.
    """
    path = first_outcome_path(study)
    recorded = recorded_first_outcome(study)
    if recorded is not None:
        return _outcome_time(study, recorded)
    moment = _now()
    record: _FirstOutcomeRecord = {"first_outcome_at": utc_iso(moment), "frozen_hash": frozen_hash}
    registration = _frozen_registration(study)
    if registration is not None:
        record["registration"] = registration
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    atomic_write_json(tmp, record)
    note_written(
        path, sha256_file(tmp), tmp.stat().st_size
    )  # journaled like any atomic write (harness.files)
    try:
        os.link(tmp, path)
    except FileExistsError:  # another scorer recorded first: its time stands
        recorded = recorded_first_outcome(study)
        moment = moment if recorded is None else _outcome_time(study, recorded)
    finally:
        tmp.unlink()
    return moment


def _frozen_registration(study: Study) -> dict[str, str] | None:
    """id -> SHA-256 of the plan and each amendment as frozen_config.json registers them."""
    if not study.frozen_path.is_file():
        return None
    record = read_json(study.frozen_path)
    registration = record.get("registration") if isinstance(record, dict) else None
    if not isinstance(registration, dict):
        return None
    return {k: v["sha256"] for k, v in sorted(registration.items())
            if isinstance(v, dict) and isinstance(v.get("sha256"), str)}


def recorded_first_outcome(study: Study) -> FirstOutcome | None:
    """FIRST_OUTCOME.json as recorded, or None when no outcome was recorded."""
    path = first_outcome_path(study)
    if not path.exists():
        return None
    record = read_json(path)
    if not isinstance(record, dict) or "first_outcome_at" not in record:
        raise InputError("expected an object with `first_outcome_at`", path=path)
    registration = record.get("registration")
    if registration is not None and not (isinstance(registration, dict)
                                         and all(isinstance(v, str) for v in registration.values())):
        raise InputError("`registration` must map each plan and amendment id to its SHA-256", path=path)
    return FirstOutcome(parse_time(record["first_outcome_at"], path=path, field="first_outcome_at"),
                        record.get("frozen_hash"), registration)


def earliest_completion(study: Study) -> tuple[dt.datetime, str] | None:
    """(time, marker name) of the earliest `completed_at` a cell's done marker under results/per_question
    records: outcomes existed by then, whatever FIRST_OUTCOME.json says."""
    folder = per_question_dir(study)
    best = None
    for path in sorted(folder.glob("*/*.done.json")) if folder.is_dir() else []:
        record = read_json(path)
        value = record.get("completed_at") if isinstance(record, dict) else None
        if value is not None:
            moment = parse_time(value, path=path, field="completed_at")
            if best is None or moment < best[0]:
                best = (moment, path.relative_to(folder).as_posix())
    return best


def first_outcome_time(study: Study) -> dt.datetime | None:
    """When outcomes first existed: FIRST_OUTCOME.json (or the earliest cell completion, if earlier), else
    (never recorded) the oldest per-question file's modification time, so results written without the
    marker still count."""
    recorded = recorded_first_outcome(study)
    if recorded is not None:
        return _outcome_time(study, recorded)
    folder = per_question_dir(study)
    if not folder.is_dir():
        return None
    times = [p.stat().st_mtime for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
    if not times:
        return None
    return dt.datetime.fromtimestamp(int(min(times)), dt.timezone.utc)


def _outcome_time(study: Study, recorded: FirstOutcome) -> dt.datetime:
    """The recorded first outcome, or the earliest cell completion when that came before it."""
    done = earliest_completion(study)
    return recorded.at if done is None else min(recorded.at, done[0])


# --- the timeline ---


def registered_files(study: Study) -> list[tuple[str, Path]]:
    """(id, path) of plan/plan.yaml and every amendments/NNNN-*.yaml, in registration-number order."""
    files = []
    if study.plan_path.is_file():
        files.append(("plan", study.plan_path))
    if study.amendments_dir.is_dir():
        for path in sorted(study.amendments_dir.glob("*.yaml")):
            files.append((path.stem, path))
    return files


def _entry(study: Study, entry_id: str, path: Path, first_outcome: dt.datetime | None,
           record: tuple[dt.datetime, dict[str, str]] | None, seen: dict[str, str] | None) -> TimelineEntry:
    rel = path.relative_to(study.root).as_posix()
    data = path.read_bytes()
    meta = load_yaml(path)
    if not isinstance(meta, dict):
        raise InputError("expected a YAML mapping", path=path)
    claimed = meta.get("before_outcomes")
    if claimed is not None and not isinstance(claimed, bool):
        raise InputError(f"`before_outcomes` must be true or false, got {claimed!r}", path=path)

    registered, source, changed = None, SOURCE_NONE, None
    committed = first_commit(study.root, rel)
    if committed is not None:
        commit, registered = committed
        source = SOURCE_GIT
        original = committed_bytes(study.root, commit, rel)
        changed = None if original is None else original != data
    elif record is not None and rel in record[1]:
        registered, source = record[0], SOURCE_RECORD
        changed = record[1][rel] != sha256_bytes(data)
    else:
        for field in RECORDED_TIME_FIELDS:
            if meta.get(field) is not None:
                registered = parse_time(meta[field], path=path, field=field)
                source = SOURCE_RECORDED
                break

    before = registered is not None and (first_outcome is None or registered < first_outcome)
    if registered is None and first_outcome is None:
        before = True  # nothing has been computed yet, so nothing can have been seen
    if seen is not None and seen.get(entry_id) != sha256_bytes(data):
        before = False  # not in the freeze the first outcome was written under: registered after it
    if claimed is False:
        before = False  # its authors say they had seen outcomes: an admission is never overruled
    return TimelineEntry(
        id=entry_id,
        path=rel,
        sha256=sha256_bytes(data),
        registered_at=None if registered is None else utc_iso(registered),
        time_source=source,
        claimed_before_outcomes=claimed,
        before_outcomes=before,
        changed_since_registration=changed,
    )


def timeline(study: Study) -> list[TimelineEntry]:
    first_outcome = first_outcome_time(study)
    record = registration_record(study.root)
    recorded = recorded_first_outcome(study)
    seen = recorded.registration if recorded is not None else None
    return [
        _entry(study, entry_id, path, first_outcome, record, seen)
        for entry_id, path in registered_files(study)
    ]


def format_timeline(entries: list[TimelineEntry], first_outcome: dt.datetime | None) -> str:
    lines = [f"first outcome: {utc_iso(first_outcome) if first_outcome else '(none yet)'}"]
    for e in entries:
        flags = []
        if e.claim_contradicted:
            flags.append("claims before_outcomes: true")
        if e.changed_since_registration:
            flags.append("edited since registration")
        note = f"  [{'; '.join(flags)}]" if flags else ""
        lines.append(
            f"{e.id:<28} {e.registered_at or '(no time)':<21} {e.time_source:<11} "
            f"{e.label:<13} {e.sha256[:12]}{note}"
        )
    return "\n".join(lines)

