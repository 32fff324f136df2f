"""The grid resolves each configured name once into a typed spec, and what it resolved is what the stages
read: an expansion arm ranks the spec of its `of:` arm, and a chunk set is read for the spec it is handed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.arms.build import build_arms, read_chunk_set
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.grid.cells import arm_spec, configured_cells
from harness.provenance.freeze import frozen_hash
from harness.study import Study
from pipeline_support import make_llm_free_study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def test_an_expansion_arm_ranks_the_resolved_spec_of_its_of_arm():
    study = Study.at(DEMO)
    expanded, source = arm_spec(study, "E+KX"), arm_spec(study, "E")
    assert expanded.ranks == source and expanded.ranks.config is study.arms["E"]
    assert expanded.ranks.kind.name == "E" and not expanded.ranks.retrieval_time
    assert source.ranks is source  # a chunked arm ranks its own chunk set
    cells = [c for c in configured_cells(study) if c.arm.name == "E+KX"]
    assert cells and all(c.arm.ranks == source for c in cells)


def test_a_chunk_set_is_read_for_the_arm_spec_it_is_handed(tmp_path):
    study = make_llm_free_study(tmp_path, arms=("S", "P"))
    build_arms(study, datasets=["papers"], arms=["P"], frozen_hash=frozen_hash(study), progress=False,
               log=lambda _: None)
    dataset = load_dataset(study, "papers", selection=read_selection(study))
    spec = arm_spec(study, "P")
    assert read_chunk_set(study, dataset, spec, frozen_hash=frozen_hash(study))
    # the spec's own config is what the inputs hash covers, not the config looked up again by name
    other = dataclasses.replace(spec, config=dataclasses.replace(spec.config, datasets=("papers",)))
    with pytest.raises(HarnessError, match="built from other inputs"):
        read_chunk_set(study, dataset, other, frozen_hash=frozen_hash(study))
