"""`harness status` on a copy of the demo study (LLM-free arms, BM25) in each state of the grid:
fresh, partly built, fully scored, and scored under an older freeze."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.pipeline.grid import MISSING, SCORED, STALE, cell_part_path, configured_cells
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
    assert not study.results.exists()
    assert row(out, "papers", "FL", "FL").split() == ["papers", "FL", "FL", "missing", "-", "-", "-"]
    assert row(out, "docs", "S+T", "missing").split() == ["docs", "S+T", "missing"]  # the cell row
    assert f"chunk sets: {N_SETS} ({N_SETS} missing); cells: {N_SETS} ({N_SETS} missing)" in out
    assert out.rstrip().endswith(f"next: make build-arms ({N_SETS} chunk sets missing)")


def test_status_loads_no_model_library(tmp_path):
    study = make_llm_free_study(tmp_path / "s")
    code = ("import sys; from harness.cli.main import main; rc = main(['status', '--study', sys.argv[1]]); "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'llama_cpp') if m in sys.modules]; "
            "print('HEAVY', heavy); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, str(study.root)], cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
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
    s_chunks = read_json(study.manifest_path("papers", "S"))["chunk_set"]["chunks"]
    assert row(out, "papers", "S", "S").split() == ["papers", "S", "S", "built", str(s_chunks), "-", "-"]
    assert row(out, "papers", "E", "E").split() == ["papers", "E", "E", "missing", "-", f"?/{s_chunks}", "-"]
    assert row(out, "docs", "F256t", "F256t").split()[3] == "missing"
    assert "next: make build-arms (13 chunk sets missing)" in out  # 3 x 6 + E, minus S and P on 3 datasets


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
        assert row(out, cell.dataset, cell.arm, "missing")
        assert "next: make score (1 cell missing)" in out
    finally:
        part.write_bytes(kept)


@pytest.mark.slow
def test_scored_under_an_older_freeze_is_stale(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s")
    for command in ("build-arms", "score"):
        assert main([command, "--study", str(study.root), "--no-progress"]) == 0
    edit_config(study.root, lambda c: c["retrievers"]["bm25"].__setitem__("k1", 1.2))
    assert main(["freeze", "--study", str(study.root), "--force", "test: a re-freeze orphans the results"]) == 0
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
    """H4, H5 and H7 wait only for their inputs: their arms are in the grid, none is 'not buildable yet'."""
    from harness.cli.main import main

    assert main(["status", "--study", str(REPO)]) == 0
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:3]) for line in out.splitlines()}
    for arm in ("M", "E-K+M", "RM", "SM", "M-TP"):
        assert ("qasper", arm, arm if arm != "E-K+M" else "M") in rows, arm
    cell_arms = {line.split()[1] for line in out.split("cells (")[1].splitlines()[2:] if line.strip()}
    assert {"M", "E-K+M", "RM", "SM", "M-TP", "E+KX", "E+AX", "E+SX"} <= cell_arms
    not_implemented = {line.split()[1] for line in out.split("cells (")[0].splitlines() if "not implemented" in line}
    assert not_implemented == {"E+keys", "E+entities"}
