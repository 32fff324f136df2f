"""Arms the plan registers before their builders exist, and amendments that admit seeing outcomes."""

from __future__ import annotations

import pytest

from harness.arms.build import build_arms
from harness.grid.arms import buildable_arm_kind
from harness.errors import HarnessError
from harness.grid.cells import configured_cells
from harness.provenance.timeline import timeline
from harness.study import Study
from arms_support import declare_planned_kind
from provenance_support import edit_yaml, make_study, write_yaml


@pytest.fixture
def study(tmp_path, monkeypatch):
    planned = declare_planned_kind(monkeypatch)
    root = make_study(tmp_path / "study")
    edit_yaml(
        root / "configs" / "study.yaml", lambda c: c["arms"].update({"M": {"kind": planned, "of": "E"}})
    )
    return Study.at(root)


def test_declared_kind_is_refused_by_name_with_its_reason(study):
    with pytest.raises(
        HarnessError,
        match=r"arm `M` has kind 'E\+future', which the plan names but this harness does not "
        r"implement yet",
    ):
        buildable_arm_kind(study, "M")
    with pytest.raises(HarnessError, match="does not implement yet"):
        build_arms(study, arms=["M"], frozen_hash=None, log=lambda _: None)


def test_unknown_kind_is_still_an_error(study):
    edit_yaml(study.config_path, lambda c: c["arms"].update({"Q": {"kind": "Q"}}))
    with pytest.raises(HarnessError, match=r"`arms.Q.kind` is 'Q', not a known value"):
        Study.at(study.root).arms


def test_declared_arms_have_no_cells_to_wait_for(study):
    arms = {cell.arm.name for cell in configured_cells(study)}
    assert "M" not in arms and {"S", "E"} <= arms


def test_an_admitted_post_outcome_amendment_is_labelled_so_without_outcomes(study):
    write_yaml(study.amendments_dir / "0002-late.yaml",
               {"created_at": "2025-02-02T00:00:00Z", "before_outcomes": False, "reason": "after H1-H3"})
    entries = {e.id: e for e in timeline(study)}
    assert entries["0001-first"].label == "pre-outcome"  # no outcomes here, and it claims none
    assert entries["0002-late"].label == "post-outcome"  # its authors had seen outcomes
    assert not entries["0002-late"].claim_contradicted


def test_sampled_arm_has_no_rows_for_documents_outside_its_sample(tmp_path):
    from types import SimpleNamespace

    from harness.config.arm_kinds import get_kind
    from harness.grid.cells import ArmSpec, Cell, DatasetSpec, RetrieverSpec
    from harness.pipeline.score import Scope, score_cell
    from harness.metrics.registry import ScoringCache
    from metrics_support import question

    outside = Scope("doc-b", [], [question("alpha beta gamma delta epsilon", qid="q2")])
    dataset = SimpleNamespace(name="papers", metric_set="qasper", documents=[], questions=[])
    # no scope with chunks: the retriever is never asked (late-chunking retrievers are handed the documents)
    context = SimpleNamespace(get=lambda name: None, add_documents=lambda documents: None, memo=None,
                              rank_arm=lambda *args: None)

    def score(arm_cfg):
        study = SimpleNamespace(root=tmp_path, results_root=None, config=SimpleNamespace(ir_measures=None))
        cell = Cell(DatasetSpec("papers", None), ArmSpec("A", arm_cfg, get_kind(arm_cfg.kind)),
                    RetrieverSpec("bm25", None))
        return score_cell(study, dataset, cell, [outside], context, ScoringCache(), (512,), run_depth=10)

    rows, _, counts = score(SimpleNamespace(kind="PF", documents=1, seed=1))
    assert rows == [] and counts["questions_outside_arm"] == 1 and counts["questions"] == 0
    rows, _, counts = score(
        SimpleNamespace(kind="S")
    )  # an arm over every document: an empty scope is a scored zero
    assert (
        counts["questions_empty_scope"] == 1
        and rows
        and all(r.value == 0 for r in rows if r.metric == "rec@512t")
    )
