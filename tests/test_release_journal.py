"""Issue 40, case 3 (a, b): no stage records what it did not write.

An edited per-question part whose manifest entry is rewritten to match (3a), or hidden by a manifest moved to
another freeze or deleted (3b), used to be assembled into the table and recorded afresh by `score`. Every
stage that records the release now checks the released files against the write journal (what the harness
wrote, harness.files), which the manifest edit does not touch; keeping such a file is an explicit deviation.
Each test works on its own copy of one released LLM-free study.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.cli.main import main
from harness.files import sha256_file
from harness.grid.paths import RESULTS_MANIFEST_NAME, journal_dir, per_question_path, results_dir
from harness.study import Study
from pipeline_support import make_llm_free_study

PART = "per_question/papers/S__bm25.parquet"


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    study = make_llm_free_study(tmp_path_factory.mktemp("released") / "s")
    for argv in (["build-arms", "--no-progress"], ["score", "--no-progress"], ["stats", "--threads", "1"]):
        assert main([*argv, "--study", str(study.root)]) == 0, argv
    return study.root


def copy_of(released: Path, tmp_path: Path) -> Study:
    shutil.copytree(released, tmp_path / "s")
    return Study.at(tmp_path / "s")


def run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().err


def edit_part(study: Study) -> float:
    """Set the first value of the S/bm25 part to 1.0; returns the value it had."""
    path = results_dir(study) / PART
    table = pd.read_parquet(path)
    old = float(table.loc[0, "value"])
    table.loc[0, "value"] = 1.0 if old != 1.0 else 0.0
    table.to_parquet(path, index=False)
    return old


def manifest(study: Study) -> dict:
    return json.loads((results_dir(study) / RESULTS_MANIFEST_NAME).read_text(encoding="utf-8"))


def write_manifest(study: Study, record: dict) -> None:
    (results_dir(study) / RESULTS_MANIFEST_NAME).write_text(json.dumps(record, indent=2), encoding="utf-8")


def assert_refused(capsys, study: Study, argv: list[str], detail: str) -> None:
    table = per_question_path(study, "papers").read_bytes()
    code, err = run(capsys, *argv, "--study", str(study.root))
    assert code == 1, err
    assert "refusing to run over 1 released file(s) the harness did not write" in err
    assert f"results/{PART}: {detail}" in err and "--adopt-unrecorded REASON" in err
    assert per_question_path(study, "papers").read_bytes() == table  # the edit was not assembled


@pytest.mark.parametrize("stage", [["score", "--no-progress"], ["stats"], ["build-arms", "--no-progress"]])
def test_case3a_an_edited_part_with_its_manifest_entry_rewritten_is_refused(
    released, tmp_path, capsys, stage
):
    study = copy_of(released, tmp_path)
    edit_part(study)
    record = manifest(study)
    path = results_dir(study) / PART
    record["files"][PART] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    write_manifest(study, record)
    assert_refused(capsys, study, stage, "edited after it was written")


def test_case3b_a_manifest_moved_to_another_freeze_checks_every_file(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    edit_part(study)
    write_manifest(study, manifest(study) | {"frozen_config_hash": "ab" * 32})
    assert_refused(capsys, study, ["score", "--no-progress"], "edited after it was written")


def test_case3b_a_deleted_manifest_is_recovered_only_as_a_logged_deviation(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    edit_part(study)
    (results_dir(study) / RESULTS_MANIFEST_NAME).unlink()
    assert_refused(capsys, study, ["score", "--no-progress"], "edited after it was written")
    assert not (study.root / "DEVIATIONS.md").exists()
    # adopting is explicit and logged, naming the file, its hash and the reason
    code, err = run(capsys, "score", "--no-progress", "--adopt-unrecorded", "restored from a backup",
                    "--study", str(study.root))
    assert code == 0, err
    deviations = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    sha = sha256_file(results_dir(study) / PART)
    assert "`harness score --adopt-unrecorded`" in deviations and "restored from a backup" in deviations
    assert f"adopted 1 released file(s) the harness did not write: results/{PART} ({sha[:12]})" in deviations
    assert manifest(study)["files"][PART]["sha256"] == sha  # recorded now, and read by the next stage
    assert run(capsys, "stats", "--study", str(study.root))[0] == 0


def test_a_deleted_manifest_alone_hides_nothing_the_journal_holds(released, tmp_path, capsys):
    """The journal, not the manifest, is what a stage checks: without an edit, score records the release
    again (every file is one the harness wrote), and nothing is logged."""
    study = copy_of(released, tmp_path)
    before = manifest(study)
    (results_dir(study) / RESULTS_MANIFEST_NAME).unlink()
    assert run(capsys, "score", "--no-progress", "--study", str(study.root))[0] == 0
    assert manifest(study) == before and not (study.root / "DEVIATIONS.md").exists()


def test_results_without_a_journal_are_refused_until_adopted(released, tmp_path, capsys):
    """Results from before the journal (or with it removed) are not taken on the manifest's word."""
    study = copy_of(released, tmp_path)
    shutil.rmtree(journal_dir(study))
    code, err = run(capsys, "stats", "--study", str(study.root))
    assert code == 1 and f"the study has no write journal ({journal_dir(study)})" in err
    assert "not recorded: the harness never wrote it" in err
    code, err = run(
        capsys, "stats", "--adopt-unrecorded", "built before the journal", "--study", str(study.root)
    )
    assert code == 0, err
    assert "built before the journal [adopted " in (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert run(capsys, "stats", "--study", str(study.root))[0] == 0


def test_a_file_added_by_hand_is_refused_and_one_removed_is_rebuilt(released, tmp_path, capsys):
    study = copy_of(released, tmp_path)
    extra = results_dir(study) / "runs" / "papers" / "extra.run"
    extra.write_text("q1 Q0 c1 1 1.0 x\n", encoding="utf-8")
    code, err = run(capsys, "score", "--no-progress", "--study", str(study.root))
    assert code == 1 and "results/runs/papers/extra.run: not recorded: the harness never wrote it" in err
    extra.unlink()
    part = (results_dir(study) / PART).read_bytes()
    (results_dir(study) / PART).unlink()  # removed: its stage rebuilds it
    assert run(capsys, "score", "--no-progress", "--study", str(study.root))[0] == 0
    assert (results_dir(study) / PART).read_bytes() == part
