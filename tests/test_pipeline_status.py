"""`harness status` on a copy of the demo study (LLM-free arms, BM25) in each state of the grid:
fresh, partly built, fully scored, and scored under an older freeze."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.grid.cells import configured_cells
from harness.grid.paths import cell_part_path, chunk_manifest_path, results_dir
from harness.grid.states import MISSING, SCORED, STALE
from harness.pipeline.status import grid_status
from harness.files import read_json
from pipeline_support import LLM_FREE, edit_config, make_llm_free_study

REPO = Path(__file__).resolve().parents[1]
N_SETS = 3 * len(LLM_FREE)  # papers, papers-pooled and docs; bm25 only, so one cell per chunk set


def status_text(capsys, study) -> str:
    capsys.readouterr()
    assert main(["status", "--study", str(study.root)]) == 0
    return capsys.readouterr().out


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def row(text: str, *words: str) -> str:
    """The one table line that starts with these words."""
    lines = [ln for ln in text.splitlines() if ln.split()[: len(words)] == list(words)]
    assert len(lines) == 1, (words, lines)
    return lines[0]


def test_unselected_and_unfrozen_studies_say_what_comes_first(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s", freeze=False)
    assert "next: make select (no selection/selection.json yet)" in status_text(capsys, study)
    assert main(["select", "--study", str(study.root)]) == 0
    out = status_text(capsys, study)
    assert "frozen config (not frozen)" in out and "next: make freeze" in out


def test_fresh_study(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    before = snapshot(study.root)
    out = status_text(capsys, study)
    assert snapshot(study.root) == before  # status writes nothing
    assert not results_dir(study).exists()
    assert row(out, "papers", "FL", "FL").split() == ["papers", "FL", "FL", "missing", "-", "-", "-"]
    assert row(out, "docs", "S+T", "missing").split() == ["docs", "S+T", "missing"]  # the cell row
    assert f"chunk sets: {N_SETS} ({N_SETS} missing); cells: {N_SETS} ({N_SETS} missing)" in out
    assert out.rstrip().endswith(f"next: make build-arms ({N_SETS} chunk sets missing)")


def test_status_loads_no_model_library(tmp_path):
    study = make_llm_free_study(tmp_path / "s")
    code = ("import sys; from harness.cli.main import main; rc = main(['status', '--study', sys.argv[1]]); "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'llama_cpp') if m in sys.modules]; "
            "print('HEAVY', heavy); sys.exit(rc)")
    done = subprocess.run(
        [sys.executable, "-c", code, str(study.root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


def test_partly_built_study(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    assert main(["build-arms", "--study", str(study.root), "--arm", "S", "--arm", "P", "--no-progress"]) == 0
    # an LLM arm added to the config: its calls are known from the S chunks, its cached share is not
    edit_config(study.root, lambda c: (
        c["arms"].__setitem__("E", {"kind": "E", "model": "m", "datasets": ["papers"]}),
        c.__setitem__("models", {"m": {"backend": "ollama", "name": "never-called"}}),
    ))
    out = status_text(capsys, study)
    s_chunks = read_json(chunk_manifest_path(study, "papers", "S"))["chunk_set"]["chunks"]
    assert row(out, "papers", "S", "S").split() == ["papers", "S", "S", "built", str(s_chunks), "-", "-"]
    assert row(out, "papers", "E", "E").split() == ["papers", "E", "E", "missing", "-", f"?/{s_chunks}", "-"]
    assert row(out, "docs", "F256t", "F256t").split()[3] == "missing"
    # the config was edited after the freeze: status names the drift first (build-arms would refuse) ...
    assert "next: the inputs drifted from the freeze (1 file(s) changed: configs/study.yaml)" in out
    # ... and counts the grid of the edited config: 3 x 6 + E, minus S and P on 3 datasets
    assert (
        replace(grid_status(study), drifted_files=[]).next_step() == "make build-arms (13 chunk sets missing)"
    )


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    study = make_llm_free_study(tmp_path_factory.mktemp("scored"))
    for command in ("build-arms", "score"):
        assert main([command, "--study", str(study.root), "--no-progress"]) == 0
    return study


@pytest.mark.slow
def test_fully_scored_study(scored, capsys):
    before = snapshot(scored.root)
    out = status_text(capsys, scored)
    assert snapshot(scored.root) == before
    assert f"chunk sets: {N_SETS} ({N_SETS} built); cells: {N_SETS} ({N_SETS} scored)" in out
    assert row(out, "docs", "P", "scored").split() == ["docs", "P", "scored"]
    assert "next: make stats (no statistics yet)" in out
    assert {s.state for s in grid_status(scored).cells} == {SCORED}


@pytest.mark.slow
def test_a_lost_part_file_makes_its_cell_missing(scored, capsys, tmp_path):
    cell = configured_cells(scored)[0]
    part = cell_part_path(scored, cell)
    kept = part.read_bytes()
    part.unlink()
    try:
        out = status_text(capsys, scored)
        assert row(out, *cell.names[:2], "missing")
        assert "next: make score (1 cell missing)" in out
    finally:
        part.write_bytes(kept)


@pytest.mark.slow
def test_scored_under_an_older_freeze_is_stale(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    for command in ("build-arms", "score"):
        assert main([command, "--study", str(study.root), "--no-progress"]) == 0
    edit_config(study.root, lambda c: c["retrievers"]["bm25"].__setitem__("k1", 1.2))
    assert (
        main(["freeze", "--study", str(study.root), "--force", "test: a re-freeze orphans the results"]) == 0
    )
    out = status_text(capsys, study)
    assert f"chunk sets: {N_SETS} ({N_SETS} stale); cells: {N_SETS} ({N_SETS} stale)" in out
    assert row(out, "papers", "S", "S").split()[3] == "stale"
    assert f"next: make build-arms ({N_SETS} chunk sets stale)" in out
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    out = status_text(capsys, study)
    assert f"next: make score ({N_SETS} cells stale)" in out
    assert {s.state for s in grid_status(study).cells} == {STALE}
    # the interim-look gate reads the same grid: stale cells are not scored
    assert main(["stats", "--study", str(study.root)]) == 1
    assert f"{N_SETS} cell(s) not scored under the current freeze" in capsys.readouterr().err
    assert MISSING not in {s.state for s in grid_status(study).chunk_sets}


def test_flagship_add_on_arms_are_buildable_and_have_cells(capsys):
    """H4, H5, H7 and the indexing family wait only for their inputs: their arms are in the grid, none is 'not
    buildable yet'."""
    from harness.cli.main import main

    assert main(["status", "--study", str(REPO)]) == 0
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:3]) for line in out.splitlines()}
    for arm in ("M", "E-K+M", "RM", "SM", "M-TP"):
        assert ("qasper", arm, arm if arm != "E-K+M" else "M") in rows, arm
    cell_block = out.split("\ncells (")[1].split("\n\n")[0]  # the scoring cells' table, up to the next block
    cell_arms = {line.split()[1] for line in cell_block.splitlines()[2:] if line.strip()}
    answer_block = out.split("\nanswer cells (")[1].split("\n\n")[0]
    assert {tuple(line.split()) for line in answer_block.splitlines()[2:]} >= {
        ("qasper", "E", "hybrid", "missing"), ("qasper", "S+T", "hybrid", "missing")}
    assert {"M", "E-K+M", "RM", "SM", "M-TP", "E+KX", "E+AX", "E+SX", "E+keys", "E+entities"} <= cell_arms
    not_implemented = {
        line.split()[1] for line in out.split("cells (")[0].splitlines() if "not implemented" in line
    }
    assert not_implemented == set()


# --- answer cells (the `reader.cells` of the answer stage) ---


def _with_reader(study, cells):
    edit_config(study.root, lambda c: c.update({
        "models": {"m": {"backend": "ollama", "name": "never-called"}},
        "reader": {"model": "m", "cells": cells},
    }))
    from harness.study import Study

    return Study.at(study.root)


def test_answer_cells_are_answered_missing_or_stale_by_their_marker(tmp_path, capsys):
    from harness.grid.cells import cell_of
    from harness.grid.paths import answers_dir, answers_path
    from harness.grid.states import ANSWERED, mark_answer_done
    from harness.pipeline.parts import write_part
    from harness.grid.results import ResultRow
    from harness.pipeline.status import format_status
    from harness.pipeline.table import update_manifest

    study = _with_reader(make_llm_free_study(tmp_path / "s"), [
        {"dataset": "papers", "retriever": "bm25", "arms": ["S", "S+T"]},
        {"dataset": "docs", "retriever": "bm25", "arms": ["S"]},
    ])
    status = grid_status(study)
    current = status.frozen_hash
    assert [(str(a.cell), a.state) for a in status.answer_cells] == [
        ("papers/S/bm25", MISSING), ("papers/S+T/bm25", MISSING), ("docs/S/bm25", MISSING)]
    s, st, docs = (
        cell_of(study, *names)
        for names in (("papers", "S", "bm25"), ("papers", "S+T", "bm25"), ("docs", "S", "bm25"))
    )
    for cell, frozen in ((s, current), (st, "an-older-freeze"), (docs, current)):
        write_part(
            answers_dir(study), *cell.names, [ResultRow(*cell.names, "q1", "c1", "", "answer_f1@512t", 0.5)]
        )
        answers_path(study, cell).write_text('{"qid": "q1"}\n', encoding="utf-8")
        mark_answer_done(study, cell, frozen_hash=frozen, counts={"questions": 1})
    answers_path(study, docs).unlink()  # a marker without its answers file proves nothing
    # answered once the per-question table holds the rows (its manifest lists the cell)
    assert [a.state for a in grid_status(study).answer_cells] == [MISSING, STALE, MISSING]
    update_manifest(study, "papers", {"answer_cells": [str(s)]})
    status = grid_status(study)
    assert [a.state for a in status.answer_cells] == [ANSWERED, STALE, MISSING]
    text = format_status(status)
    assert row(text, "papers", "S", "bm25").split() == ["papers", "S", "bm25", "answered"]
    assert row(text, "papers", "S+T", "bm25").split() == ["papers", "S+T", "bm25", "stale"]
    assert row(text, "docs", "S", "bm25").split() == ["docs", "S", "bm25", "missing"]
    assert "answer cells: 3 (1 answered, 1 stale, 1 missing)" in text
    # the chunk sets come first; once every cell is scored, the answer cells are what is next (the fixture
    # adds its reader after the freeze, a drift status reports first and which is set aside here)
    assert status.drifted_files == ["configs/study.yaml"]
    status = replace(status, drifted_files=[])
    assert status.next_step().startswith("make build-arms")
    scored = replace(status, chunk_sets=[], cells=[replace(c, state=SCORED) for c in status.cells])
    assert scored.next_step() == "make answer (1 answer cell missing, 1 answer cell stale)"
    done = replace(scored, answer_cells=[replace(a, state=ANSWERED) for a in status.answer_cells])
    assert done.next_step() == "make stats (no statistics yet)"


def test_a_study_without_reader_cells_says_so(tmp_path, capsys):
    out = status_text(capsys, make_llm_free_study(tmp_path / "s"))
    assert "answer cells: none (no `reader.cells`)" in out and "answer cells (" not in out
