"""Issue 23, cases 1-4 and point 9: no way around the freeze, on released copies of the demo study.

A copy of the demo restricted to its LLM-free arms is built, scored and its statistics released once; each
test works on its own copy of that release.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.files import sha256_file
from harness.grid.states import SCORED
from harness.pipeline.status import grid_status
from harness.provenance.freeze import frozen_hash
from harness.study import Study
from pipeline_support import copy_study, edit_config, make_llm_free_study, run_cli
from provenance_support import published_hashes
from harness.grid.paths import results_dir, stats_dir

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    study = make_llm_free_study(tmp_path_factory.mktemp("released") / "s")
    for command in ("build-arms", "score", "stats"):
        args = ["--no-progress"] if command != "stats" else []
        assert main([command, "--study", str(study.root), *args]) == 0, command
    return study.root


copy_of = copy_study
run = run_cli


def edit_margin(study: Study) -> None:
    """The issue's case 1: an equivalence margin of 5 points made 40."""
    text = study.plan_path.read_text(encoding="utf-8")
    assert "margin: 5\n" in text
    study.plan_path.write_text(text.replace("margin: 5\n", "margin: 40\n", 1), encoding="utf-8")


def forge_freeze(study: Study) -> None:
    """The issue's case 2: the plan's new SHA-256 patched into frozen_config.json by hand."""
    record = json.loads(study.frozen_path.read_text(encoding="utf-8"))
    old, new = record["registration"]["plan"]["sha256"], sha256_file(study.plan_path)
    text = study.frozen_path.read_text(encoding="utf-8")
    study.frozen_path.write_text(text.replace(old, new), encoding="utf-8")


def rebuild(study: Study, capsys) -> None:
    for command in ("build-arms", "score", "stats"):
        args = ["--no-progress"] if command != "stats" else []
        code, _, err = run(capsys, command, "--study", str(study.root), *args)
        assert code == 0, (command, err)


# --- case 1: every stage that reads outcomes or the plan checks the freeze ---


def test_case1_edited_plan_is_refused_by_stats_and_every_outcome_stage(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    released_stats = {p.name: p.read_bytes() for p in stats_dir(study).glob("*.json")}
    edit_margin(study)
    results = str(results_dir(study) / "per_question" / "papers.parquet")
    for argv in (["stats"], ["report"], ["audit"], ["answer", "--replay", "--no-progress"],
                 ["compare", "--results", results, "--dataset", "papers", "--a", "S+T", "--b", "S",
                  "--retriever", "bm25", "--metric", "rec@512t"]):
        study_args = [] if argv[0] == "compare" else ["--study", str(study.root)]
        code, out, err = run(capsys, *argv, *study_args)
        assert code == 2, (argv, out, err)  # DriftError, as build-arms and score give
        assert f"{argv[0]}: refusing to run" in err and 'input_files["plan/plan.yaml"]' in err
        assert "registration.plan.sha256" in err
    assert {p.name: p.read_bytes() for p in stats_dir(study).glob("*.json")} == released_stats


# --- case 2: a forged freeze (plan edited, its hash patched, everything rebuilt) ---


def _git(root: Path, env: dict, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env
    )
    return proc.stdout.strip()


def _git_env(date: str) -> dict:
    return os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }


def _date_first_outcome(study: Study, date: str) -> None:
    """FIRST_OUTCOME.json dated `date` (a release committed then cannot have been scored later), recorded."""
    from harness.grid.paths import first_outcome_path
    from provenance_support import record_as_written

    path = first_outcome_path(study)
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | {"first_outcome_at": date}))
    record_as_written(study)


def _commit(root: Path, date: str, message: str, *paths: str) -> str:
    env = _git_env(date)
    _git(root, env, "add", *paths)
    _git(root, env, "commit", "-q", "-m", message)
    return _git(root, env, "rev-parse", "HEAD")


@needs_git
def test_case2_forged_freeze_fails_the_audit_in_git(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    root = str(study.root)
    _git(study.root, _git_env("2025-01-01T00:00:00+00:00"), "init", "-q")
    registering = _commit(study.root, "2025-01-01T00:00:00+00:00", "register", ".", ":!results",
                          ":!frozen_config.json")
    _date_first_outcome(study, "2025-01-02T00:00:00Z")  # this history is set in 2025: so is its first outcome
    _commit(study.root, "2025-01-02T00:00:00+00:00", "release", "results", "frozen_config.json")
    code, out, _ = run(capsys, "audit", "--study", root)
    assert code == 0, out  # the honest release verifies against git
    assert (
        f"PASS  (registration)/plan/plan.yaml: registered in commit {registering[:12]} at "
        "2025-01-01T00:00:00Z"
        in out
    )

    edit_margin(study)
    edit = _commit(study.root, "2025-01-03T00:00:00+00:00", "widen the margin", "plan/plan.yaml")
    forge_freeze(study)
    rebuild(study, capsys)
    code, out, _ = run(capsys, "audit", "--study", root)
    assert code == 1, out
    assert (
        f"FAIL  (registration)/plan/plan.yaml: registered in commit {edit[:12]} at 2025-01-03T00:00:00Z "
        f"(replacing the version of commit {registering[:12]} at 2025-01-01T00:00:00Z), after the first "
        "outcome "
        f"(2025-01-02T00:00:00Z): the plan moved once outcomes existed"
    ) in out
    # a later commit to a registered file is named with its time
    note = study.root / "plan" / "PLAN.md"
    note.write_text(note.read_text(encoding="utf-8") + "Margins widened.\n", encoding="utf-8")
    later = _commit(study.root, "2025-01-04T00:00:00+00:00", "prose", "plan/PLAN.md")
    code, out, _ = run(capsys, "audit", "--study", root)
    assert code == 2  # the prose is frozen too: drift
    note.write_text(note.read_text(encoding="utf-8").replace("Margins widened.\n", ""), encoding="utf-8")
    _commit(study.root, "2025-01-05T00:00:00+00:00", "prose back", "plan/PLAN.md")
    code, out, _ = run(capsys, "audit", "--study", root)
    assert code == 1 and (f"FAIL  (registration)/plan/PLAN.md: changed after its registration (commit "
                          f"{registering[:12]} at 2025-01-01T00:00:00Z) in commit {later[:12]} at "
                          "2025-01-04T00:00:00Z") in out
    # left uncommitted, the edit is named as such
    study.plan_path.write_text(study.plan_path.read_text(encoding="utf-8") + "# note\n", encoding="utf-8")
    forge_freeze(study)
    code, out, _ = run(capsys, "audit", "--study", root)
    assert code == 1 and "FAIL  (registration)/plan/plan.yaml: the frozen content (" in out
    assert "is in no commit; last committed in commit" in out and "the file has uncommitted changes" in out


def test_case2_forged_freeze_is_not_verifiable_outside_git(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    published = frozen_hash(study)
    code, out, _ = run(capsys, "audit", "--study", str(study.root), *published_hashes(study))
    assert code == 0 and f"PASS  (registration)/published hash: frozen hash {published} matches" in out
    edit_margin(study)
    forge_freeze(study)
    rebuild(study, capsys)
    code, out, _ = run(capsys, "audit", "--study", str(study.root))
    assert code == 3, out  # never 0: nothing anchors the registration
    assert "NOT VERIFIABLE  (registration)/plan and amendments: registration not verifiable" in out
    assert out.rstrip().endswith("0 FAIL, 2 NOT VERIFIABLE (not a pass)")  # the registration and the release
    code, out, _ = run(capsys, "audit", "--study", str(study.root), "--registered-hash", published)
    assert code == 1 and f"differs from the published hash {published}" in out


# --- case 3: released results carry content hashes ---


def test_case3_tampered_per_question_csv_fails_the_audit(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    published = frozen_hash(study)
    code, out, _ = run(capsys, "audit", "--study", str(study.root), *published_hashes(study))
    assert code == 0 and "PASS  (results)/papers.csv: " in out
    path = results_dir(study) / "per_question" / "papers.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    fields = lines[1].rstrip("\n").split(",")
    fields[-1] = repr(1.0 - float(fields[-1]) if float(fields[-1]) != 0.5 else 0.25)
    lines[1] = ",".join(fields) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    code, out, _ = run(capsys, "audit", "--study", str(study.root), "--registered-hash", published)
    assert code == 1
    assert "FAIL  (results)/results/per_question/papers.csv: edited after it was written" in out
    assert "FAIL  (results)/papers.csv: 1 value(s) differ from papers.parquet: line 2 value" in out
    # a stage run after the edit refuses to read it, so the edit cannot be recorded afresh
    code, _, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 1 and "results/per_question/papers.csv: edited after it was written" in err


def edit_parquet_value(path: Path) -> None:
    import pandas as pd

    table = pd.read_parquet(path)
    table.loc[0, "value"] = 1.0 - table.loc[0, "value"] if table.loc[0, "value"] != 0.5 else 0.25
    table.to_parquet(path, index=False)


def test_an_edited_table_or_part_is_never_read_and_recorded_afresh(released, tmp_path, capsys):
    """Without the check, stats over a hand-edited Parquet table would release consistent numbers whose
    manifest lists the edited file, and score would assemble an edited part into the table."""
    study = copy_of(released, tmp_path)
    table = results_dir(study) / "per_question" / "papers.parquet"
    kept = table.read_bytes()
    edit_parquet_value(table)
    code, _, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 1 and "results/per_question/papers.parquet: edited after it was written" in err
    # score rebuilds the assembled table from its parts, which are intact: the edit is undone
    assert run(capsys, "score", "--study", str(study.root), "--no-progress")[0] == 0
    assert table.read_bytes() == kept
    assert run(capsys, "stats", "--study", str(study.root))[0] == 0
    part = results_dir(study) / "per_question" / "papers" / "S__bm25.parquet"
    edit_parquet_value(part)
    for stage in (["score", "--no-progress"], ["stats"]):
        code, _, err = run(capsys, *stage, "--study", str(study.root))
        assert code == 1 and "results/per_question/papers/S__bm25.parquet: edited after it was written" in err
    # an unrecorded file under per_question/ (added by hand, or by an interrupted run) is not read by stats
    part.unlink()
    (results_dir(study) / "per_question" / "extra.csv").write_text("x\n", encoding="utf-8")
    code, _, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 1 and "results/per_question/extra.csv: not recorded" in err


def test_results_manifest_covers_stats_runs_chunks_and_unlisted_files(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    from harness.grid.paths import RESULTS_MANIFEST_NAME

    listed = json.loads((results_dir(study) / RESULTS_MANIFEST_NAME).read_text(encoding="utf-8"))["files"]
    folders = {rel.split("/")[0] for rel in listed}
    assert folders == {"chunks", "runs", "per_question", "stats"}
    assert {"per_question/papers.parquet", "per_question/papers.csv", "stats/H3.json", "stats/summary.md",
            "runs/papers/S__bm25.run", "chunks/papers/S.jsonl"} <= set(listed)
    assert all(set(e) == {"sha256", "bytes"} for e in listed.values())
    h3 = stats_dir(study) / "H3.csv"
    h3.write_text(h3.read_text(encoding="utf-8").replace("n.d.", "diff.", 1), encoding="utf-8")
    (results_dir(study) / "runs" / "papers" / "extra.run").write_text("q1 Q0 c1 1 1.0 x\n", encoding="utf-8")
    (results_dir(study) / "chunks" / "papers" / "S.jsonl").unlink()
    code, out, _ = run(capsys, "audit", "--study", str(study.root), "--registered-hash", frozen_hash(study))
    assert code == 1
    assert "FAIL  (results)/results/stats/H3.csv: edited after it was written" in out
    assert "FAIL  (results)/results/runs/papers/extra.run: not listed in results_manifest.json" in out
    assert "FAIL  (results)/results/chunks/papers/S.jsonl: listed in the manifest but missing" in out


# --- case 4: freeze is idempotent ---


def test_case4_noop_refreeze_writes_nothing_and_orphans_nothing(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    before, mtime, digest = (
        study.frozen_path.read_bytes(),
        study.frozen_path.stat().st_mtime_ns,
        frozen_hash(study),
    )
    code, out, _ = run(capsys, "freeze", "--study", str(study.root))  # outcomes exist, no --force
    assert code == 0 and "unchanged" in out and f"frozen hash {digest}" in out
    assert study.frozen_path.read_bytes() == before and study.frozen_path.stat().st_mtime_ns == mtime
    assert not (study.root / "DEVIATIONS.md").exists()
    assert {c.state for c in grid_status(Study.at(study.root)).cells} == {SCORED}
    assert run(capsys, "stats", "--study", str(study.root))[0] == 0


def test_case4_volatile_facts_and_hand_reformatting_keep_the_hash(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    digest = frozen_hash(study)
    record = json.loads(study.frozen_path.read_text(encoding="utf-8"))
    record["harness"]["commit"] = "0" * 40  # volatile facts are recorded beside the hash, not in it
    record["registration"]["plan"]["time_source"] = "git-commit"
    reordered = dict(reversed(list(record.items())))
    study.frozen_path.write_text(json.dumps(reordered, indent=4), encoding="utf-8")  # reformatted by hand
    assert frozen_hash(Study.at(study.root)) == digest
    assert {c.state for c in grid_status(Study.at(study.root)).cells} == {SCORED}
    assert run(capsys, "stats", "--study", str(study.root))[0] == 0
    record["config"]["chunking"]["tau_max"] = 1400  # a hashed value edited by hand is a different freeze
    study.frozen_path.write_text(json.dumps(record), encoding="utf-8")
    assert frozen_hash(Study.at(study.root)) != digest


def test_case4_refreeze_that_changes_the_hash_needs_force_reason(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    digest = frozen_hash(study)
    edit_config(study.root, lambda c: c["chunking"].__setitem__("tau_max", 1400))
    code, _, err = run(capsys, "freeze", "--study", str(study.root))
    assert code == 1 and "pass --force REASON to re-freeze anyway" in err and frozen_hash(study) == digest
    code, _, _ = run(capsys, "freeze", "--study", str(study.root), "--force", "tau_max lowered")
    assert code == 0 and frozen_hash(study) != digest
    assert "- reason: tau_max lowered" in (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")


# --- point 9 ---


def test_point9_status_names_the_drifted_input_instead_of_nothing_to_build(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    assert main(["report", "--study", str(study.root)]) == 0
    code, out, _ = run(capsys, "status", "--study", str(study.root))
    assert "next: nothing to build" in out
    edit_margin(study)
    code, out, _ = run(capsys, "status", "--study", str(study.root))
    assert code == 0 and "nothing to build" not in out
    assert "next: the inputs drifted from the freeze (1 file(s) changed: plan/plan.yaml)" in out


def test_point9_config_error_is_exit_1_naming_file_and_key_not_drift(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    edit_config(study.root, lambda c: c["chunking"].__setitem__("tau_maxx", 1400))
    for command in ("build-arms", "score"):
        code, _, err = run(capsys, command, "--study", str(study.root), "--no-progress")
        assert code == 1, err
        assert "configs/study.yaml" in err and "tau_maxx" in err and "refusing to run" not in err


def test_point9_stats_before_score_says_to_run_score(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    code, _, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 1 and "no per-question results" in err and "run `harness score` first" in err


# --- the outcome stages need no model server ---


def test_outcome_stages_check_the_freeze_without_asking_a_model_server(tmp_path, monkeypatch):
    """stats, compare, report, power and audit read outcomes, never a model: an auditor without the study's
    model servers still gets the freeze check (an edited plan is refused), while build-arms asks for every
    digest."""
    import harness.provenance.frozen_record as frozen_record
    from harness.llm import registry as llm_registry
    from harness.provenance.drift import check_frozen
    from harness.errors import DriftError

    demo = Path(__file__).resolve().parents[1] / "examples" / "demo"
    root = tmp_path / "demo"
    shutil.copytree(demo, root, ignore=shutil.ignore_patterns("results"))
    study = Study.at(root)
    frozen = json.loads(study.frozen_path.read_text(encoding="utf-8"))
    assert frozen["model_digests"], "the demo freezes its models' digests"

    def unreachable(*args):
        raise ConnectionError("server unreachable")

    monkeypatch.setattr(llm_registry, "resolve_digest", unreachable)
    monkeypatch.setattr(frozen_record, "_retriever_model_identity", unreachable)
    assert check_frozen(study, stage="stats", models=False) == frozen_hash(study)
    with pytest.raises(Exception, match="unreachable"):
        check_frozen(study, stage="build-arms")
    edit_margin(study)
    with pytest.raises(DriftError, match="plan/plan.yaml"):
        check_frozen(study, stage="stats", models=False)


def test_dense_code_constants_that_decide_run_file_bytes_are_frozen(tmp_path, monkeypatch):
    """The score rounding and the encoding protocol decide a dense run file's bytes (docs/determinism.md):
    a harness that changes them must not score under the old freeze."""
    import harness.retrieval.dense as dense
    from harness.provenance.drift import check_frozen
    from harness.errors import DriftError

    demo = Path(__file__).resolve().parents[1] / "examples" / "demo"
    root = tmp_path / "demo"
    shutil.copytree(demo, root, ignore=shutil.ignore_patterns("results"))
    study = Study.at(root)
    assert check_frozen(study, stage="score", models=False) == frozen_hash(study)
    monkeypatch.setattr(dense, "SCORE_DECIMALS", dense.SCORE_DECIMALS + 1)
    with pytest.raises(DriftError, match="score_decimals"):
        check_frozen(study, stage="score", models=False)
