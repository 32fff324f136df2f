"""Every blocked path of the exploratory analyses names the make target that produces the missing input.

Each case removes one input and checks the target against INPUT_TARGETS' meaning: questions come with
`make select`, chunk sets with `make build-arms`, retrieval metrics with `make score`, answer-level metrics
with `make answer`, and a field the data files lack with `make freeze` after adding it.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from harness.analyses.inputs import StudyInputs
from harness.analyses.run import INPUT_TARGETS, Blocked, run_analyses
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table
from pipeline_support import make_llm_free_study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
ANSWER_TYPED = ("extractive", "abstractive", "yes-no", "unanswerable")


@pytest.fixture(scope="module")
def plan():
    return load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")


def _table(arms=("S", "F512c", "E", "S+T"), metrics=("rec@512t",)):
    return long_table(
        np.random.default_rng(2),
        [SyntheticDataset("papers", 12, 2.0), SyntheticDataset("docs", 30, 1.0, ("ledger", "tern", "skiff"))],
        {a: 0.0 for a in arms},
        ["bm25", "minilm", "hybrid"],
        {"papers": list(metrics), "docs": ["prec@1024t"]},
    )


class _Typed:
    """Inputs whose questions all carry an answer type; no chunk set is built."""

    def __init__(self, table):
        self.qids = sorted(set(table.qid))

    def dataset(self, name):
        return SimpleNamespace(questions=[SimpleNamespace(qid=q, answer_type=ANSWER_TYPED[i % 4])
                                          for i, q in enumerate(self.qids)])

    def moderator_chunks(self, name, a, b):
        raise Blocked(f"chunk set {name}/{a}", INPUT_TARGETS["chunk sets"])


def _blocked(plan, table, inputs) -> dict[str, tuple[str, str]]:
    out = {}
    for r in run_analyses(plan, table, inputs):
        if r["status"] == "blocked":
            assert r["rows"] == [] and r["missing"], r["id"]
            out[r["id"]] = (r["missing"][0]["target"], r["missing"][0]["what"])
    return out


def test_no_study_inputs(plan):
    blocked = _blocked(plan, _table(), None)
    assert {k: t for k, (t, _) in blocked.items()} == {
        "bridging-papers": "make build-arms", "targeting-papers": "make build-arms",
        "overlap-papers": "make build-arms", "answer-type-papers": "make select",
        "f1-by-recall-papers": "make answer"}


def test_retrieval_results_missing(plan):
    """No per-question rows at all: every analysis that pairs arms waits for `make score`."""
    empty = _table().iloc[0:0]
    blocked = _blocked(plan, empty, _Typed(_table()))
    assert blocked["win-tie-loss"][0] == "make score"
    assert blocked["domains-docs"][0] == "make score"
    assert blocked["answer-type-papers"][0] == "make score"
    assert blocked["f1-by-recall-papers"][0] == "make answer"  # its outcome is answer-level


def test_answer_results_missing_but_recall_present(plan):
    blocked = _blocked(plan, _table(), _Typed(_table()))
    target, what = blocked["f1-by-recall-papers"]
    assert target == "make answer" and "answer_f1@512t" in what
    assert "answer-type-papers" not in blocked and "win-tie-loss" not in blocked


def test_answer_types_absent_from_the_data(plan):
    class Untyped(_Typed):
        def dataset(self, name):
            return SimpleNamespace(questions=[SimpleNamespace(qid=q, answer_type="") for q in self.qids])

    target, what = _blocked(plan, _table(), Untyped(_table()))["answer-type-papers"]
    assert target == "make freeze" and "answer_type" in what


def test_a_real_study_without_chunks_or_with_a_stale_selection(plan, tmp_path):
    from harness.cli.main import main
    from harness.files import atomic_write_json, read_json

    study = make_llm_free_study(tmp_path / "s", freeze=False)
    assert main(["select", "--study", str(study.root)]) == 0
    blocked = _blocked(plan, _table(), StudyInputs(study, None))
    assert blocked["bridging-papers"][0] == "make build-arms"  # selected, not built
    assert "answer-type-papers" not in blocked  # the demo's papers record their answer types
    selection = read_json(study.selection_path)
    del selection["datasets"]["papers"]  # a selection that no longer covers the config
    atomic_write_json(study.selection_path, selection)
    blocked = _blocked(plan, _table(), StudyInputs(study, None))
    assert blocked["answer-type-papers"][0] == "make select"
    assert blocked["bridging-papers"][0] == "make select"  # its questions come before its chunks


def test_every_target_is_a_make_target_and_others_are_refused():
    assert all(t.startswith("make ") for t in INPUT_TARGETS.values())
    with pytest.raises(ValueError, match="blocked target 'harness score'"):
        Blocked("anything", "harness score")


def test_stats_cli_and_report_print_the_same_target(plan, tmp_path):
    from harness.report.model import Missing

    record = next(
        r for r in run_analyses(plan, pd.DataFrame(_table()), None) if r["id"] == "answer-type-papers"
    )
    m = record["missing"][0]
    assert Missing(m["what"], m["target"]).sentence().endswith("run `make select`.")
