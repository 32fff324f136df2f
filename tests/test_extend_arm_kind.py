"""docs/extending.md, An arm kind, as a test: a new kind added in its two registries only (the declaration
and the builder) is configured, registered in the plan, built, scored, decided and reported on the
rehearsal twin."""

from __future__ import annotations

import json

from harness.arms import registry as arm_registry
from harness.arms.builder import ArmBuilder
from harness.arms.chunker_arms import build_chunked
from harness.arms.render import render_section_path
from harness.config import arm_kinds
from harness.config.arm_kinds import ArmKindSpec

from extend_support import DATASET, edit_config, register_test, rehearse, report, scored_cells, starter_study

KIND = "P+T"  # paragraph chunks indexed with their section path (the recipe's example)
TEST = "X-P+T"


def test_a_new_arm_kind_runs_from_config_and_plan_to_the_report(tmp_path, monkeypatch):
    monkeypatch.setitem(arm_kinds.ARM_KINDS, KIND, ArmKindSpec(KIND, "P"))
    monkeypatch.setitem(arm_registry.BUILDERS, KIND, ArmBuilder(render_section_path, build_chunked))
    study = starter_study(tmp_path)
    edit_config(study, lambda config: config["arms"].update({KIND: {"kind": KIND}}))
    register_test(study, {"id": TEST, "a": KIND, "b": "S", "retriever": "hybrid", "dataset": DATASET,
                          "metric": "rec@512t"}, arm=KIND)

    twin = rehearse(study, tmp_path / "twin")

    assert (DATASET, KIND, "hybrid") in scored_cells(twin)
    path = twin.root / "results" / "chunks" / DATASET / f"{KIND}.jsonl"
    chunks = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert chunks and all(c["indexed_text"].endswith(c["text"]) for c in chunks)
    assert any(c["indexed_text"] != c["text"] for c in chunks)  # the section path rendered before the text
    assert f"| {TEST} | {KIND} - S | {DATASET} |" in report(twin)
