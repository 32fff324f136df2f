"""Registration times of the plan and amendments, and the before-outcomes flag the harness computes."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess

import pytest

from harness.errors import InputError
from harness.provenance.registration import verify_first_outcome
from harness.provenance.timeline import (
    backdated_parents,
    first_outcome_time,
    format_timeline,
    record_first_outcome,
    recorded_first_outcome,
    timeline,
)
from harness.study import Study
from provenance_support import edit_yaml, make_study, write_yaml
from harness.grid.paths import first_outcome_path, results_dir


@pytest.fixture
def study(tmp_path):
    return Study.at(make_study(tmp_path / "study"))


def set_first_outcome(study: Study, when: str) -> None:
    path = first_outcome_path(study)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"first_outcome_at": when, "frozen_hash": None}))


def by_id(study: Study):
    return {e.id: e for e in timeline(study)}


def test_created_at_used_outside_git(study):
    entries = timeline(study)
    assert [e.id for e in entries] == ["plan", "0001-first"]
    plan = entries[0]
    assert plan.path == "plan/plan.yaml"
    assert plan.registered_at == "2025-01-10T09:00:00Z" and plan.time_source == "recorded"
    assert plan.before_outcomes and plan.label == "pre-outcome"
    assert plan.changed_since_registration is None
    assert len(plan.sha256) == 64


def test_amendment_after_outcomes_is_post_outcome_whatever_it_claims(study):
    write_yaml(
        study.amendments_dir / "0002-late.yaml",
        {
            "created_at": "2025-04-01T00:00:00Z",
            "before_outcomes": True,
            "reason": "written after seeing results",
        },
    )
    set_first_outcome(study, "2025-03-01T00:00:00Z")
    entries = by_id(study)
    assert entries["0001-first"].before_outcomes and not entries["0001-first"].claim_contradicted
    late = entries["0002-late"]
    assert late.claimed_before_outcomes is True
    assert late.before_outcomes is False and late.label == "post-outcome"
    assert late.claim_contradicted
    assert late.to_json()["label"] == "post-outcome"
    table = format_timeline(list(entries.values()), first_outcome_time(study))
    assert "first outcome: 2025-03-01T00:00:00Z" in table
    assert "0002-late" in table and "post-outcome" in table and "claims before_outcomes: true" in table


def test_registration_at_the_same_second_as_outcomes_is_post_outcome(study):
    set_first_outcome(study, "2025-02-01T00:00:00Z")
    assert by_id(study)["0001-first"].before_outcomes is False


def test_unknown_time_is_post_outcome_once_outcomes_exist(study):
    write_yaml(study.amendments_dir / "0002-undated.yaml", {"reason": "no time"})
    assert by_id(study)["0002-undated"].before_outcomes is True  # nothing computed yet
    set_first_outcome(study, "2030-01-01T00:00:00Z")
    undated = by_id(study)["0002-undated"]
    assert undated.registered_at is None and undated.time_source == "unknown"
    assert undated.before_outcomes is False


def test_record_first_outcome_is_written_once(study):
    assert first_outcome_time(study) is None
    first = record_first_outcome(study, frozen_hash="a" * 64)
    stored = first_outcome_path(study).read_bytes()
    assert record_first_outcome(study, frozen_hash="b" * 64) == first
    assert first_outcome_path(study).read_bytes() == stored
    assert json.loads(stored)["frozen_hash"] == "a" * 64
    assert first_outcome_time(study) == first
    now = dt.datetime.now(dt.timezone.utc)
    assert abs((now - first).total_seconds()) < 60
    assert [p.name for p in first_outcome_path(study).parent.iterdir()] == ["FIRST_OUTCOME.json"]


def test_results_without_marker_count_from_their_oldest_file(study):
    folder = results_dir(study) / "per_question"
    folder.mkdir(parents=True)
    for name, when in [
        ("papers.csv", "2025-03-05T00:00:00+00:00"),
        ("papers.parquet", "2025-03-01T00:00:00+00:00"),
    ]:
        (folder / name).write_text("x")
        stamp = dt.datetime.fromisoformat(when).timestamp()
        os.utime(folder / name, (stamp, stamp))
    assert first_outcome_time(study) == dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc)
    edit_yaml(study.amendments_dir / "0001-first.yaml", lambda a: a.update(created_at="2025-03-02T00:00:00Z"))
    assert by_id(study)["0001-first"].label == "post-outcome"


def test_times_are_normalised_to_utc(study):
    edit_yaml(study.plan_path, lambda p: p.update(registered_at="2025-01-10T11:00:00+02:00"))
    write_yaml(study.amendments_dir / "0002-dated.yaml", {"created_at": "2025-06-01"})
    entries = by_id(study)
    assert entries["plan"].registered_at == "2025-01-10T09:00:00Z"
    assert entries["0002-dated"].registered_at == "2025-06-01T00:00:00Z"


def test_malformed_created_at_names_file(study):
    edit_yaml(study.amendments_dir / "0001-first.yaml", lambda a: a.update(created_at="last tuesday"))
    with pytest.raises(
        InputError, match=r"0001-first.yaml: `created_at` is not an ISO 8601 time: 'last tuesday'"
    ):
        timeline(study)


def test_non_boolean_claim_names_file(study):
    edit_yaml(study.amendments_dir / "0001-first.yaml", lambda a: a.update(before_outcomes="yes please"))
    with pytest.raises(InputError, match=r"0001-first.yaml: `before_outcomes` must be true or false"):
        timeline(study)


def test_malformed_first_outcome_file_is_named(study):
    first_outcome_path(study).parent.mkdir(parents=True)
    first_outcome_path(study).write_text("{}")
    with pytest.raises(InputError, match=r"FIRST_OUTCOME.json: expected an object with `first_outcome_at`"):
        first_outcome_time(study)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_time_wins_over_created_at(study):
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": "2025-03-15T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-03-15T12:00:00+00:00",
    }

    def git(*args):
        subprocess.run(["git", "-C", str(study.root), *args], check=True, capture_output=True, env=env)

    git("init", "-q")
    git("add", "plan/plan.yaml")
    git("commit", "-q", "-m", "register plan")
    env["GIT_COMMITTER_DATE"] = "2025-04-15T12:00:00+00:00"
    git("commit", "-q", "--allow-empty", "-m", "later")
    set_first_outcome(study, "2025-04-01T00:00:00Z")
    entries = by_id(study)
    plan = entries["plan"]
    # the plan claims 2025-01-10 but was first committed on 2025-03-15
    assert plan.registered_at == "2025-03-15T12:00:00Z" and plan.time_source == "git-commit"
    assert plan.before_outcomes and plan.changed_since_registration is False
    # the amendment is not committed yet: its recorded time stands
    assert entries["0001-first"].time_source == "recorded"
    edit_yaml(study.plan_path, lambda p: p.update(families={}))
    assert by_id(study)["plan"].changed_since_registration is True


# --- the first outcome's freeze and time ---


def test_first_outcome_records_the_registration_of_its_freeze(study):
    study.frozen_path.write_text(json.dumps({"registration": {"plan": {"sha256": "a" * 64},
                                                              "0001-first": {"sha256": "b" * 64}}}))
    record_first_outcome(study, frozen_hash="c" * 64)
    recorded = recorded_first_outcome(study)
    assert recorded.frozen_hash == "c" * 64 and recorded.registration == {
        "plan": "a" * 64,
        "0001-first": "b" * 64,
    }


def test_an_amendment_outside_the_first_outcomes_freeze_is_post_outcome_whatever_its_time(study):
    """A backdated amendment: registered under a later freeze than the first outcome's, dated before it."""
    path = first_outcome_path(study)
    path.parent.mkdir(parents=True)
    seen = {e.id: e.sha256 for e in timeline(study)}
    path.write_text(json.dumps({"first_outcome_at": "2030-01-01T00:00:00Z", "frozen_hash": "c" * 64,
                                "registration": seen}))
    write_yaml(
        study.amendments_dir / "0002-late.yaml", {"created_at": "2025-02-02T00:00:00Z", "reason": "late"}
    )
    entries = by_id(study)
    assert entries["plan"].label == entries["0001-first"].label == "pre-outcome"
    assert entries["0002-late"].label == "post-outcome"  # its time says before; the freeze says after
    edit_yaml(study.amendments_dir / "0001-first.yaml", lambda a: a.update(reason="changed after outcomes"))
    assert by_id(study)["0001-first"].label == "post-outcome"


def test_the_first_outcome_is_never_later_than_a_cells_completion(study):
    set_first_outcome(study, "2030-01-01T00:00:00Z")
    marker = first_outcome_path(study).parent / "papers" / "S__bm25.done.json"
    marker.parent.mkdir()
    marker.write_text(json.dumps({"completed_at": "2025-03-01T00:00:00Z"}))
    assert first_outcome_time(study) == dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc)
    assert by_id(study)["0001-first"].label == "pre-outcome"  # created 2025-02-01
    edit_yaml(study.amendments_dir / "0001-first.yaml", lambda a: a.update(created_at="2025-04-01T00:00:00Z"))
    assert (
        by_id(study)["0001-first"].label == "post-outcome"
    )  # the moved FIRST_OUTCOME.json time does not help
    checks = {c.detail for c in verify_first_outcome(study)}
    assert ("first outcome recorded at 2030-01-01T00:00:00Z, after cell papers/S__bm25.done.json completed "
            "(2025-03-01T00:00:00Z)") in checks


def test_a_first_outcome_in_the_future_fails(study):
    set_first_outcome(study, "2999-01-01T00:00:00Z")
    [check] = verify_first_outcome(study)
    assert check.status == "FAIL"
    assert check.detail.startswith("first outcome recorded at 2999-01-01T00:00:00Z, in the future")
    set_first_outcome(study, "2025-01-01T00:00:00Z")
    [check] = verify_first_outcome(study)
    assert check.status == "PASS"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_commit_dated_before_its_parent_is_found(study):
    def git(date, *args):
        env = os.environ | {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        proc = subprocess.run(["git", "-C", str(study.root), *args], check=True, capture_output=True, env=env)
        return proc.stdout.decode().strip()

    git("2025-03-01T00:00:00Z", "init", "-q")
    git("2025-03-01T00:00:00Z", "commit", "-q", "--allow-empty", "-m", "first")
    parent = git("2025-03-01T00:00:00Z", "rev-parse", "HEAD")
    git("2025-02-01T00:00:00Z", "commit", "-q", "--allow-empty", "-m", "backdated")
    backdated = git("2025-02-01T00:00:00Z", "rev-parse", "HEAD")
    assert backdated_parents(study.root, backdated) == [
        (parent, dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc))
    ]
    git("2025-04-01T00:00:00Z", "commit", "-q", "--allow-empty", "-m", "later")
    assert backdated_parents(study.root, git("2025-04-01T00:00:00Z", "rev-parse", "HEAD")) == []
