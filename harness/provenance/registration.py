"""Registration anchored outside the editable files: the audit's check of the plan and amendments.

frozen_config.json records the SHA-256 of every plan and amendment file, but whoever edits the plan can
patch that hash too. Two anchors the editor does not control:
  - git history: for each file of plan/ and amendments/ the frozen content must be committed. Its
    registering commit is the oldest commit holding exactly that content (earlier versions are re-
    registrations, shown by `harness freeze --show-timeline`); a later commit that changed the file, or an
    uncommitted change, fails with the commit and its time. A plan file whose registering commit comes
    after the first outcome (FIRST_OUTCOME.json, or the first commit of results/per_question) fails too:
    the plan moved once outcomes existed. Amendments may be registered after outcomes; the timeline labels
    them post-outcome. A registering commit dated before its parent was backdated: a FAIL.
  - the published hash: `harness freeze` prints the frozen hash to publish (a registry, a tag, a paper);
    `harness audit --registered-hash H` checks the freeze against it.
A study outside git checked without --registered-hash is NOT VERIFIABLE, never a pass.

The first outcome's time (FIRST_OUTCOME.json) decides which amendments are pre-outcome, so it is checked
against what its editor does not control as easily: it may not lie in the future, nor after the completion
time a cell's done marker records, nor (in git) after the first commit of per-question results; and once
committed, FIRST_OUTCOME.json is never changed (it is written once).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness.files import read_json, sha256_bytes, sha256_file
from harness.grid.paths import first_outcome_path, per_question_dir
from harness.provenance.checks import Check, FAIL, NOT_VERIFIABLE, PASS
from harness.provenance.timeline import (
    backdated_parents, committed_bytes, earliest_completion, file_commits, first_outcome_time, in_git,
    recorded_first_outcome, utc_iso,
)
from harness.study import Study
from harness.provenance.freeze import frozen_hash

SUBJECT = "(registration)"
OUTCOME_SUBJECT = "(timeline)"
REGISTERED_FOLDERS = ("plan/", "amendments/")
CLOCK_SKEW = dt.timedelta(minutes=10)  # between the machine that scored and the one auditing or committing


def registered_file_hashes(study: Study, frozen: dict[str, Any]) -> dict[str, str]:
    """path -> frozen SHA-256 of every file of plan/ and amendments/ the freeze recorded."""
    return {k: v for k, v in sorted(frozen.get("input_files", {}).items())
            if k.startswith(REGISTERED_FOLDERS) and isinstance(v, str)}


def verify_registration(study: Study, *, registered_hash: str | None = None) -> list[Check]:
    """Checks of the freeze against git history and, when given, the published hash."""

    checks = []
    if registered_hash is not None:
        current = frozen_hash(study)
        same = current == registered_hash.strip().lower()
        checks.append(
            Check(
                SUBJECT,
                "published hash",
                PASS if same else FAIL,
                f"frozen hash {current} "
                + (
                    "matches the published hash"
                    if same
                    else f"differs from the published hash {registered_hash}"
                ),
            )
        )
    if in_git(study.root):
        frozen = read_json(study.frozen_path)
        outcome = _first_outcome(study)
        for rel, sha in registered_file_hashes(study, frozen).items():
            checks += _verify_file(study, rel, sha, outcome)
    elif registered_hash is None:
        checks.append(Check(SUBJECT, "plan and amendments", NOT_VERIFIABLE,
                            "registration not verifiable: the study is not in a git repository and no "
                            "--registered-hash was given, so nothing outside its editable files anchors the "
                            "frozen plan hashes"))
    return checks + verify_first_outcome(study)


def study_relative(study: Study, path: Path) -> str | None:
    """`path` relative to the study root (as git names it there), or None when it lies outside."""
    try:
        return path.resolve().relative_to(study.root.resolve()).as_posix()
    except ValueError:
        return None


def _first_results_commit(study: Study) -> tuple[str, dt.datetime] | None:
    """(commit, time) of the first commit of per-question results, or None."""
    rel = study_relative(study, per_question_dir(study))
    committed = file_commits(study.root, rel) if rel is not None else []
    return committed[0] if committed else None


def _first_outcome(study: Study) -> dt.datetime | None:
    """The earliest evidence of outcomes: the recorded first outcome or the first commit of results."""
    times = [t for t in (first_outcome_time(study),) if t is not None]
    committed = _first_results_commit(study)
    if committed:
        times.append(committed[1])
    return min(times) if times else None


def verify_first_outcome(study: Study) -> list[Check]:
    """FIRST_OUTCOME.json's time against the clock, the cells' done markers and (in git) the first commit
    of results; in git, also that it was never changed once committed."""
    recorded = recorded_first_outcome(study)
    if recorded is None:
        return []
    item = study_relative(study, first_outcome_path(study)) or first_outcome_path(study).name
    at, out = recorded.at, []
    now = dt.datetime.now(dt.timezone.utc)
    if at > now + CLOCK_SKEW:
        out.append(
            Check(
                OUTCOME_SUBJECT,
                item,
                FAIL,
                f"first outcome recorded at {utc_iso(at)}, in the future (now {utc_iso(now)})",
            )
        )
    done = earliest_completion(study)
    if done is not None and at > done[0]:
        out.append(Check(OUTCOME_SUBJECT, item, FAIL, f"first outcome recorded at {utc_iso(at)}, after cell "
                                                      f"{done[1]} completed ({utc_iso(done[0])})"))
    anchors = ["not in the future", "not after any cell's recorded completion"]
    if in_git(study.root):
        committed = _first_results_commit(study)
        if committed is not None and at > committed[1] + CLOCK_SKEW:
            out.append(
                Check(
                    OUTCOME_SUBJECT,
                    item,
                    FAIL,
                    f"first outcome recorded at {utc_iso(at)}, after the "
                    f"per-question results were first committed "
                    f"({_at(*committed)})",
                )
            )
        out += _written_once(study, item) if item != first_outcome_path(study).name else []
        anchors.append("not after the first commit of results, unchanged since committed")
    return out or [
        Check(OUTCOME_SUBJECT, item, PASS, f"first outcome at {utc_iso(at)}: {', '.join(anchors)}")
    ]


def _written_once(study: Study, rel: str) -> list[Check]:
    """A file the harness writes once: every commit after its first that changed it, and an uncommitted
    change, is a FAIL."""
    commits = file_commits(study.root, rel)
    if not commits:
        return []
    first = committed_bytes(study.root, commits[0][0], rel)
    out = [Check(OUTCOME_SUBJECT, rel, FAIL, f"written once and first committed in {_at(*commits[0])}, "
                                             f"changed in {_at(c, t)}")
           for c, t in commits[1:] if committed_bytes(study.root, c, rel) != first]
    path = study.root / rel
    if (path.read_bytes() if path.is_file() else None) != first:
        out.append(Check(OUTCOME_SUBJECT, rel, FAIL, f"uncommitted change: written once, it differs from its "
                                                     f"first commit ({_at(*commits[0])})"))
    return out


def _at(commit: str, moment: dt.datetime) -> str:
    return f"commit {commit[:12]} at {utc_iso(moment)}"


def _verify_file(study: Study, rel: str, frozen_sha: str, first_outcome: dt.datetime | None) -> list[Check]:
    commits = file_commits(study.root, rel)
    if not commits:
        return [Check(SUBJECT, rel, FAIL, "never committed: its frozen hash has no anchor in git history")]
    shas = [sha256_bytes(committed_bytes(study.root, c, rel) or b"") for c, _ in commits]
    path = study.root / rel
    current = sha256_file(path) if path.is_file() else None
    head = commits[-1]
    if frozen_sha not in shas:
        return [
            Check(
                SUBJECT,
                rel,
                FAIL,
                f"the frozen content ({frozen_sha[:12]}) is in no commit; "
                f"last committed in {_at(*head)}"
                + ("; the file has uncommitted changes" if current != shas[-1] else ""),
            )
        ]
    i = shas.index(frozen_sha)
    registered = commits[i]
    out = [
        Check(
            SUBJECT,
            rel,
            FAIL,
            f"registered in {_at(*registered)}, dated before its parent {_at(p, t)}: a backdated commit",
        )
        for p, t in backdated_parents(study.root, registered[0])
    ]
    out += [Check(SUBJECT, rel, FAIL, f"changed after its registration ({_at(*registered)}) in {_at(c, t)}")
            for c, t in commits[i + 1:]]
    if current != shas[-1]:
        out.append(
            Check(SUBJECT, rel, FAIL, f"uncommitted change: differs from its last commit ({_at(*head)})")
        )
    if rel.startswith("plan/") and first_outcome is not None and registered[1] > first_outcome:
        replaced = f" (replacing the version of {_at(*commits[i - 1])})" if i else ""
        out.append(
            Check(
                SUBJECT,
                rel,
                FAIL,
                f"registered in {_at(*registered)}{replaced}, after the first outcome "
                f"({utc_iso(first_outcome)}): the plan moved once outcomes existed",
            )
        )
    if not out:
        out.append(Check(SUBJECT, rel, PASS, f"registered in {_at(*registered)}, unchanged since"))
    return out
