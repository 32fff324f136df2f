"""The release record, the release hash and the timeline against git: coordinated edits (a file and its
record entry rewritten together, a backdated commit, a deleted deviation) fail the audit.

A small study (the demo's LLM-free arms under BM25, with a scripted reader and judge on three answer cells,
so it has answers, reader and judge records and a generation cache) is built and released once; each test
works on its own copy.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.cli.main import main
from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json, sha256_file
from harness.grid.paths import first_outcome_path, results_dir, results_manifest_path
from harness.provenance.interim import record_deviation
from harness.provenance.release import release_hash
from harness.provenance.timeline import timeline
from harness.study import Study
from pipeline_support import copy_study, make_llm_free_study, run_cli, with_fake_reader_and_judge
from provenance_support import (
    FakeDigests, forge_journal, install_fake_digests, published_hashes, record_as_written,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_answer_stage import ScriptedJudge, _fact_judge  # noqa: E402

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
DIGESTS = FakeDigests({"fake-model": "sha256:fake"})
GRID = ["--no-progress"]
REBUILD = ("build-arms", "score", "answer", "stats")  # a rebuild from the caches


def _reply(prompt: str) -> str:
    if "Required fact:" in prompt:
        return _fact_judge(prompt)
    return '{"answer": "%s"}' % prompt.split("=====\n", 1)[1][:40].replace('"', "").replace("\n", " ")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, str]:
    """(root, release hash) of a study built, scored, answered, with statistics and one logged deviation."""
    import harness.pipeline.answer as stage

    root = tmp_path_factory.mktemp("released") / "s"
    with pytest.MonkeyPatch.context() as mp:
        install_fake_digests(mp, DIGESTS)
        mp.setattr(stage, "make_backend", lambda cfg, replay_from=None: ScriptedJudge(_reply))
        make_llm_free_study(root, freeze=False)
        with_fake_reader_and_judge(root)
        for command in ("select", "freeze", "build-arms", "score", "answer", "stats"):
            assert main([command, "--study", str(root), *(GRID if command in ("build-arms", "score", "answer")
                                                          else [])]) == 0, command
        record_deviation(Study.at(root), "a look logged before the release", "harness test")
    return root, release_hash(Study.at(root))


@pytest.fixture
def fake_models(monkeypatch):
    import harness.pipeline.answer as stage

    install_fake_digests(monkeypatch, DIGESTS)
    monkeypatch.setattr(stage, "make_backend", lambda cfg, replay_from=None: ScriptedJudge(_reply))


def copy_of(released, tmp_path: Path) -> Study:
    return copy_study(released[0], tmp_path)


run = run_cli


def audit(capsys, study: Study, *extra: str) -> tuple[int, str]:
    code, out, _ = run(capsys, "audit", "--study", str(study.root), *extra)
    return code, out


def forge_record(study: Study) -> None:
    """The forger's step: every entry of the release record rewritten from the files as they are now."""
    path = results_manifest_path(study)
    record = read_json(path)
    for key, base in (("files", results_dir(study)), ("study_files", study.root)):
        record[key] = {rel: {"sha256": sha256_file(base / rel), "bytes": (base / rel).stat().st_size}
                       for rel in record[key] if (base / rel).is_file()}
    atomic_write_json(path, record)
    forge_journal(study)  # and the write journal, so that no stage refuses the edited files


def rebuild(study: Study, capsys, *stages: str) -> None:
    for command in stages:
        args = list(GRID) if command in ("build-arms", "score", "answer") else []
        args += ["--replay"] if command == "build-arms" else []  # the scripted reader answers from its cache
        code, _, err = run(capsys, command, "--study", str(study.root), *args)
        assert code == 0, (command, err)


def refreeze(study: Study, capsys) -> None:
    code, _, err = run(capsys, "freeze", "--study", str(study.root), "--force", "x")
    assert code == 0, err


def edit_value(path: Path, value: float | None = None) -> None:
    table = pd.read_parquet(path)
    table.loc[0, "value"] = value if value is not None else (0.25 if table.loc[0, "value"] != 0.25 else 0.75)
    table.to_parquet(path, index=False)


def drop_last_deviation(study: Study) -> None:
    path = study.root / "DEVIATIONS.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.rindex("\n## ")] + "\n", encoding="utf-8")


def add_late_amendment(study: Study) -> None:
    """A new confirmatory family with a 40-point margin, written after the outcomes."""
    (study.amendments_dir).mkdir(exist_ok=True)
    (study.amendments_dir / "0003-late.yaml").write_text(
        "id: '0003'\ncreated_at: '2025-01-21T00:00:00+00:00'\nbefore_outcomes: true\nreason: late\n"
        "adds:\n  families:\n  - id: H9\n    description: late\n    tier: confirmatory\n    multiplicity: "
        "holm\n"
        "    decision: {rule: tost, signflip_required: false}\n    seed: 9\n    tests:\n"
        "    - {id: H9-P, a: S, b: P, retriever: bm25, dataset: papers, metric: rec@512t, margin: 40}\n",
        encoding="utf-8",
    )
    (study.amendments_dir / "0003-late.md").write_text(
        "# Amendment 0003\n\nA late family.\n", encoding="utf-8"
    )


# --- the release record and the release hash ---


def test_the_record_covers_every_released_byte_and_the_hash_is_printed(
    released, tmp_path, capsys, fake_models
):
    study = copy_of(released, tmp_path)
    record = read_json(results_manifest_path(study))
    folders = {rel.split("/")[0] for rel in record["files"]}
    assert folders == {"chunks", "runs", "per_question", "answers", "judges", "stats", "generations"}
    assert {"per_question/FIRST_OUTCOME.json", "answers/reader_acceptance.json", "generations/fake.jsonl",
            "judges/acceptance.json"} <= set(record["files"])
    assert set(record["study_files"]) == {"selection/selection.json", "DEVIATIONS.md"}
    for command in ("release", "report"):
        code, out, _ = run(capsys, command, "--study", str(study.root))
        assert code == 0 and f"release hash {released[1]}" in out, out
    code, out = audit(capsys, study, "--release-hash", released[1])
    assert code == 3, out  # outside git and without --registered-hash: not verifiable, yet no FAIL
    assert f"PASS  (release)/published release hash: the release record hashes to {released[1]}" in out
    # formatting the record by hand moves nothing; a stage rerun that changes nothing writes the same bytes
    path = results_manifest_path(study)
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))) + "\n", encoding="utf-8")
    assert release_hash(study) == released[1]
    rebuild(study, capsys, "score", "stats")
    assert release_hash(study) == released[1]


def test_outside_git_an_unpublished_release_is_not_verifiable(released, tmp_path, capsys, fake_models):
    """As an unanchored registration: without git history and without --release-hash a file edited together
    with its record entry would pass, so the release is NOT VERIFIABLE (exit 3), never a pass."""
    from harness.provenance.freeze import frozen_hash

    study = copy_of(released, tmp_path)
    code, out = audit(capsys, study, "--registered-hash", frozen_hash(study))
    assert code == 3, out
    assert "NOT VERIFIABLE  (release)/results_manifest.json: release not verifiable: the study is not in a " \
           "git repository and no --release-hash was given" in out, out
    assert "NOT VERIFIABLE  (registration)" not in out
    code, out = audit(capsys, study, "--registered-hash", frozen_hash(study), "--release-hash", released[1])
    assert code == 0 and "NOT VERIFIABLE" not in out, out


def _swap_selection(study, capsys):
    selection = json.loads(study.selection_path.read_text(encoding="utf-8"))
    selection["datasets"]["papers"]["selected"] = selection["datasets"]["papers"]["selected"][1:]
    study.selection_path.write_text(json.dumps(selection, indent=2) + "\n", encoding="utf-8")
    deviations = (study.root / "DEVIATIONS.md").read_bytes()
    refreeze(study, capsys)
    (study.root / "DEVIATIONS.md").write_bytes(deviations)
    rebuild(study, capsys, *REBUILD)
    forge_record(study)


def _launder_part(study, capsys):
    edit_value(results_dir(study) / "per_question" / "papers" / "P__bm25.parquet")
    forge_record(study)


def _record_afresh(study, capsys):
    edit_value(results_dir(study) / "per_question" / "papers" / "P__bm25.parquet")
    path = results_manifest_path(study)
    path.write_text(path.read_text(encoding="utf-8").replace(read_json(path)["frozen_config_hash"], "0" * 64))
    code, _, err = run(capsys, "score", "--study", str(study.root), *GRID)
    assert code == 1 and "refusing to run" in err  # the write journal stops the laundering here (recorded.py)


def _launder_table(study, capsys):
    folder = results_dir(study) / "per_question"
    table = pd.read_parquet(folder / "papers.parquet")
    table.loc[0, "value"] = 0.25 if table.loc[0, "value"] != 0.25 else 0.75
    table.to_parquet(folder / "papers.parquet", index=False)
    table.to_csv(folder / "papers.csv", index=False)
    forge_record(study)
    rebuild(study, capsys, "stats")


def _launder_answers(study, capsys):
    path = results_dir(study) / "answers" / "papers" / "S__bm25.parquet"
    table = pd.read_parquet(path)
    table["value"] = 1.0
    table.to_parquet(path, index=False)
    forge_record(study)
    rebuild(study, capsys, "score", "stats")


def _swap_run_lines(study, capsys):
    path = results_dir(study) / "runs" / "papers" / "S__bm25.run"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    a, b = lines[0].split(), lines[1].split()
    a[2], b[2] = b[2], a[2]
    lines[:2] = [" ".join(a) + "\n", " ".join(b) + "\n"]
    path.write_text("".join(lines), encoding="utf-8")
    forge_record(study)


def _edit_generation(study, capsys):
    path = results_dir(study) / "generations" / "fake.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    record["text"] = '{"answer": "injected"}'
    lines[0] = json.dumps(record, sort_keys=True) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    forge_record(study)


def _delete_deviation(study, capsys):
    drop_last_deviation(study)
    forge_record(study)


def _edit_reader_control(study, capsys):
    path = results_dir(study) / "answers" / "reader_acceptance.json"
    record = read_json(path)
    for entry in record["datasets"].values():
        entry["positive"] = 0.9
    atomic_write_json(path, record)
    forge_record(study)
    rebuild(study, capsys, "stats")


COORDINATED_EDITS = {
    "selection-swap": _swap_selection, "part-and-entry": _launder_part, "recorded-afresh": _record_afresh,
    "table-and-csv": _launder_table, "answer-rows": _launder_answers, "run-file": _swap_run_lines,
    "generation-cache": _edit_generation, "deleted-deviation": _delete_deviation,
    "reader-control": _edit_reader_control,
}


@pytest.mark.parametrize("case", sorted(COORDINATED_EDITS))
def test_every_coordinated_edit_fails_the_published_release_hash(
    released, tmp_path, capsys, fake_models, case
):
    study = copy_of(released, tmp_path)
    COORDINATED_EDITS[case](study, capsys)
    code, out = audit(capsys, study, "--release-hash", released[1])
    assert code == 1, out
    assert "FAIL  (release)/published release hash: the release record hashes to" in out, out
    assert f"not the published {released[1]}: it was rewritten since the release" in out


def test_deviations_are_recorded_when_appended_never_when_an_entry_is_lost(
    released, tmp_path, capsys, fake_models
):
    study = copy_of(released, tmp_path)
    record_deviation(study, "a second look", "harness test")  # the writer records what it appended
    code, out = audit(capsys, study)
    assert "FAIL  " not in out, out
    log = study.root / "DEVIATIONS.md"
    log.write_text(log.read_text(encoding="utf-8") + "\n## 2030-01-01T00:00:00Z — `merged`\n\n- reason: x\n",
                   encoding="utf-8")  # an entry appended by a merge
    code, out = audit(capsys, study)
    assert (
        code == 1
        and ("FAIL  (results)/DEVIATIONS.md: entries appended after it was recorded (rerun the last stage")
        in out
    )
    rebuild(study, capsys, "stats")  # a stage records an append
    assert "FAIL  " not in audit(capsys, study)[1]
    drop_last_deviation(study)
    rebuild(study, capsys, "score", "stats")  # ...but never a lost entry
    code, out = audit(capsys, study)
    assert (
        code == 1
        and (
            "FAIL  (results)/DEVIATIONS.md: edited after it was recorded (1 recorded entries removed "
            "or edited)"
        )
        in out
    ), out
    with pytest.raises(
        HarnessError, match="DEVIATIONS.md: 1 entry recorded in .* removed or edited; restore them"
    ):
        record_deviation(study, "a third look", "harness test")


# --- the timeline and the release record against git history ---


def _git_env(date: str) -> dict[str, str]:
    return os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }


def _git(root: Path, date: str, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, env=_git_env(date)
    )
    return proc.stdout.decode().strip()


def commit(study: Study, date: str, message: str, *paths: str) -> str:
    _git(study.root, date, "add", "-A", *paths)
    _git(study.root, date, "commit", "-q", "-m", message)
    return _git(study.root, date, "rev-parse", "HEAD")


def in_git(released, tmp_path) -> Study:
    """A copy registered (everything but results and the freeze) and then released, each in a commit dated
    now: the first outcome (recorded at build time) lies between."""
    study = copy_of(released, tmp_path)
    _git(study.root, "2025-01-01T00:00:00+00:00", "init", "-q")
    commit(study, "2025-01-01T00:00:00+00:00", "register", ".", ":!results", ":!frozen_config.json",
           ":!DEVIATIONS.md")
    now = read_json(first_outcome_path(study))["first_outcome_at"]
    commit(study, now, "release", ".")
    return study


@needs_git
def test_an_honest_release_in_git_passes(released, tmp_path, capsys, fake_models):
    study = in_git(released, tmp_path)
    record_deviation(study, "a later look", "harness test")  # appended, uncommitted: fine
    code, out = audit(capsys, study, "--release-hash", release_hash(study))
    assert code == 0, out
    assert "PASS  (release)/DEVIATIONS.md: 1 commit(s): every entry kept since it was committed" in out
    assert "PASS  (release)/results/results_manifest.json: 1 commit(s): no released file rewritten" in out
    assert "PASS  (timeline)/results/per_question/FIRST_OUTCOME.json: first outcome at " in out


@needs_git
def test_a_backdated_amendment_fails_the_audit(released, tmp_path, capsys, fake_models):
    """A backdated amendment: written after the outcomes, re-frozen, its deviation deleted and
    committed with a date older than its parent commit, then rebuilt."""
    study = in_git(released, tmp_path)
    published = release_hash(study)
    add_late_amendment(study)
    refreeze(study, capsys)
    drop_last_deviation(study)
    late = commit(study, "2024-11-30T00:00:00+00:00", "late amendment", ".")
    rebuild(study, capsys, *REBUILD)
    code, out = audit(capsys, study)
    assert code == 1, out
    assert (f"FAIL  (registration)/amendments/0003-late.yaml: registered in commit {late[:12]} at "
            "2024-11-30T00:00:00Z, dated before its parent commit ") in out
    assert "a backdated commit" in out
    assert "with no entry appended to DEVIATIONS.md in the working copy (uncommitted)" in out
    labels = {e.id: e.label for e in timeline(study)}
    assert labels["0003-late"] == "post-outcome" and labels["plan"] == "pre-outcome"
    code, out = audit(capsys, study, "--release-hash", published)
    assert code == 1 and "it was rewritten since the release" in out


def test_a_post_outcome_amendments_family_is_demoted_and_the_audit_checks_it(released, tmp_path, capsys,
                                                                            fake_models):
    """The late amendment's confirmatory family is decided as exploratory, saying why, in the statistics,
    `stats`' output and the report; setting its tier back in the released file fails the audit."""
    study = copy_of(released, tmp_path)
    add_late_amendment(study)
    refreeze(study, capsys)
    rebuild(study, capsys, "build-arms", "score", "answer")
    code, out, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 0, err
    why = "demoted: amendment 0003 registered after the first outcome"
    assert f"(exploratory: {why})" in out
    path = results_dir(study) / "stats" / "H9.json"
    family = read_json(path)
    assert (family["tier"], family["demoted"]) == ("exploratory", why)
    assert [(row["tier"], row["demoted"]) for row in family["rows"]] == [("exploratory", why)]
    assert all("demoted" not in read_json(p) for p in path.parent.glob("*.json") if p != path)
    code, _, err = run(capsys, "report", "--study", str(study.root))
    assert code == 0, err
    report = (results_dir(study) / "report" / "report.md").read_text(encoding="utf-8")
    assert f"(exploratory, {why}, amendment 0003)" in report
    family["tier"] = "confirmatory"
    del family["demoted"]
    for row in family["rows"]:
        row["tier"] = "confirmatory"
        del row["demoted"]
    atomic_write_json(path, family)
    record_as_written(study)  # the forger records the edit
    code, out = audit(capsys, study, *published_hashes(study))
    assert code == 1, out
    assert any(line.startswith("FAIL  H9/(family): ") for line in out.splitlines()), out
    assert any(line.startswith("FAIL  H9/H9-P: ") for line in out.splitlines()), out


@needs_git
def test_a_first_outcome_moved_into_the_future_fails(released, tmp_path, capsys, fake_models):
    study = in_git(released, tmp_path)
    published = release_hash(study)
    add_late_amendment(study)
    refreeze(study, capsys)
    path = first_outcome_path(study)
    record = read_json(path)
    record["first_outcome_at"] = "2999-01-01T00:00:00Z"
    atomic_write_json(path, record)
    moved = commit(study, dt.datetime.now(dt.timezone.utc).isoformat(), "a later commit, dated now", ".")
    rebuild(study, capsys, *REBUILD)
    code, out = audit(capsys, study)
    assert code == 1, out
    item = "FAIL  (timeline)/results/per_question/FIRST_OUTCOME.json"
    assert f"{item}: first outcome recorded at 2999-01-01T00:00:00Z, in the future" in out
    assert "after cell " in out and "after the per-question results were first committed" in out
    assert f"{item}: written once" in out
    assert f"changed in commit {moved[:12]}" in out
    assert {e.id: e.label for e in timeline(study)}["0003-late"] == "post-outcome"
    code, out = audit(capsys, study, "--release-hash", published)
    assert code == 1 and "it was rewritten since the release" in out


@needs_git
def test_a_deleted_deviation_fails_naming_the_commit(released, tmp_path, capsys, fake_models):
    study = in_git(released, tmp_path)
    drop_last_deviation(study)
    forge_record(study)
    deleting = commit(study, "2030-01-01T00:00:00+00:00", "tidy the log", ".")
    from harness.provenance.freeze import frozen_hash

    for extra in ([], ["--registered-hash", frozen_hash(study)]):
        code, out = audit(capsys, study, *extra)
        assert code == 1, out
        assert (
            "FAIL  (release)/DEVIATIONS.md: entry '" in out
            and f"removed or edited in commit {deleting[:12]} at 2030-01-01T00:00:00Z: entries are only ever "
                f"appended"
            in out
        ), out
    # a correction logged in the open, naming the commit, is not silent
    with (study.root / "DEVIATIONS.md").open("a", encoding="utf-8") as f:
        f.write(
            f"\n## 2030-01-02T00:00:00Z — correction\n\n- reason: commit {deleting[:12]} removed an entry\n"
        )
    code, out = audit(capsys, study)
    assert (
        "PASS  (release)/DEVIATIONS.md: entry '" in out and "logged by the entry '2030-01-02T00:00:00Z" in out
    )


@needs_git
def test_a_committed_record_rewritten_under_one_freeze_fails_naming_the_commit(released, tmp_path, capsys,
                                                                                fake_models):
    study = in_git(released, tmp_path)
    _launder_part(study, capsys)
    code, out = audit(capsys, study)
    assert code == 1 and (
        "released file(s) rewritten under the same freeze" in out
        and "per_question/papers/P__bm25.parquet" in out
        and "in the working copy" in out
    ), out
    edit = commit(study, "2030-01-01T00:00:00+00:00", "fix a value", ".")
    code, out = audit(capsys, study)
    assert code == 1 and f"the harness writes each once per freeze in commit {edit[:12]}" in out, out
    _edit_generation(study, capsys)
    code, out = audit(capsys, study)
    assert (
        code == 1
        and "generations/fake.jsonl: 1 cached generation(s) removed or edited in the working copy" in out
    )
