"""No interim looks: outcomes are withheld until every configured cell is scored; deviations are logged."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.grid.cells import Cell, configured_cells
from harness.grid.paths import done_marker_path, per_question_dir, run_path
from harness.grid.states import mark_cell_done
from harness.pipeline.parts import write_part
from harness.grid.results import ResultRow
from harness.provenance.interim import (
    DEVIATIONS_HEADER,
    outcomes_allowed,
    record_deviation,
    require_outcomes_allowed,
)
from harness.study import Study
from provenance_support import edit_yaml, make_study


@pytest.fixture
def study(tmp_path):
    return Study.at(make_study(tmp_path / "study"))


def score_cell(study: Study, cell: Cell, frozen_hash: str = "f" * 64) -> None:
    run = run_path(study, *cell.names)
    run.parent.mkdir(parents=True, exist_ok=True)
    run.write_text(f"q1 Q0 c1 1 1.0 {cell.arm}\n")
    write_part(per_question_dir(study), *cell.names, [ResultRow(*cell.names, "q1", "c1", "", "hit@1", 1.0)])
    mark_cell_done(study, cell, frozen_hash=frozen_hash, counts={"questions": 1})


def _unrestricted(study) -> Study:
    """The copied demo config with every `datasets:` / `arms:` restriction lifted (the full grid)."""

    def lift(c):
        for entry in [*c["arms"].values(), *c["retrievers"].values()]:
            entry.pop("datasets", None)
            entry.pop("arms", None)

    edit_yaml(study.config_path, lift)
    return Study.at(study.root)


def test_configured_cells_cover_the_grid(study):
    study = _unrestricted(study)
    cells = configured_cells(study)
    assert len(cells) == len(study.config.datasets) * len(study.arms) * len(study.retrievers)
    assert len(set(cells)) == len(cells)
    first_dataset, first_arm, first_retriever = (
        next(iter(study.config.datasets)),
        next(iter(study.arms)),
        next(iter(study.retrievers)),
    )
    assert cells[0].names == (first_dataset, first_arm, first_retriever)


def test_nothing_scored_means_everything_missing(study):
    allowed, missing = outcomes_allowed(study)
    assert allowed is False
    assert missing == configured_cells(study)


def test_one_unscored_cell_is_named(study):
    cells = configured_cells(study)
    for cell in cells[:-1]:
        score_cell(study, cell)
    assert outcomes_allowed(study) == (False, [cells[-1]])
    with pytest.raises(
        HarnessError, match=rf"withheld .*1 cell\(s\) not scored under the current freeze: {cells[-1]}"
    ):
        require_outcomes_allowed(study, command="harness stats")
    score_cell(study, cells[-1])
    assert outcomes_allowed(study) == (True, [])
    assert require_outcomes_allowed(study, command="harness stats") is False


def test_run_file_without_marker_is_not_scored(study):
    cells = configured_cells(study)
    for cell in cells:
        score_cell(study, cell)
    done_marker_path(study, cells[0]).unlink()
    assert outcomes_allowed(study) == (False, [cells[0]])
    score_cell(study, cells[0])
    run_path(study, *cells[1].names).unlink()
    assert outcomes_allowed(study) == (False, [cells[1]])


def test_cells_scored_under_another_freeze_do_not_count(study, monkeypatch):
    study.frozen_path.write_text("{}\n")  # any frozen file: its hash is the current one
    from harness.provenance.freeze import frozen_hash

    current = frozen_hash(study)
    cells = configured_cells(study)
    for cell in cells:
        score_cell(study, cell, frozen_hash=current)
    score_cell(study, cells[2], frozen_hash="0" * 64)
    assert outcomes_allowed(study) == (False, [cells[2]])


def test_arm_restricted_to_a_dataset(study):
    study = _unrestricted(study)
    dataset = next(iter(study.config.datasets))
    arm = next(iter(study.arms))
    edit_yaml(study.config_path, lambda c: c["arms"][arm].update(datasets=[dataset]))
    restricted = Study.at(study.root)
    cells = configured_cells(restricted)
    assert {c.dataset.name for c in cells if c.arm.name == arm} == {dataset}
    assert len(cells) == len(restricted.retrievers) * (
        len(restricted.config.datasets) * len(restricted.arms) - (len(restricted.config.datasets) - 1)
    )


def test_deviation_lets_the_look_through_and_is_logged(study):
    assert (
        require_outcomes_allowed(
            study, command="harness stats", deviation_reason="check the pipeline  runs\nend to end"
        )
        is True
    )
    text = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert text.startswith(DEVIATIONS_HEADER)
    assert "— `harness stats`" in text
    assert "- reason: check the pipeline runs end to end" in text
    assert f"- {len(configured_cells(study))} cell(s) not scored" in text
    assert "- frozen hash: (not frozen)" in text


def test_record_deviation_appends(study):
    path = record_deviation(study, "first reason", "harness stats")
    first = path.read_text(encoding="utf-8")
    record_deviation(study, "second reason", "harness report")
    second = path.read_text(encoding="utf-8")
    assert second.startswith(first)
    assert second.count("# Deviations from the registered plan") == 1
    assert second.count("\n## ") == 2
    assert second.index("first reason") < second.index("second reason")


def test_deviation_needs_a_reason_and_a_command(study):
    with pytest.raises(HarnessError, match="a deviation needs a non-empty reason"):
        record_deviation(study, "   ", "harness stats")
    with pytest.raises(HarnessError, match="a deviation needs the command"):
        record_deviation(study, "why", "")
    assert not (study.root / "DEVIATIONS.md").exists()


def test_malformed_marker_is_named(study):
    cell = configured_cells(study)[0]
    score_cell(study, cell)
    done_marker_path(study, cell).write_text("[]")
    with pytest.raises(HarnessError, match=r"\.done\.json: expected a JSON object"):
        outcomes_allowed(study)


def test_retriever_limited_to_arms_and_datasets():
    from harness.config.retrievers import retriever_settings
    from harness.grid.arms import applies_to

    entry = retriever_settings("r", {"type": "bm25", "datasets": ["papers"], "arms": ["E", "S+T"]})
    assert applies_to(entry, "papers", "E")
    assert not applies_to(entry, "papers", "S")
    assert not applies_to(entry, "docs", "E")
    assert applies_to(retriever_settings("r", {"type": "bm25"}), "docs", "S")
