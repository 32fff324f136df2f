"""The studies shipped with the harness match their frozen configs: a change to the harness that moves what
a study records (a new config default, the canonical dataset form) must come with a logged re-freeze."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.provenance.drift import check_frozen
from harness.study import Study

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.parent for p in (REPO / "examples").glob("*/frozen_config.json"))


def test_there_are_shipped_studies():
    assert {p.name for p in SHIPPED} >= {"demo", "handbook"}


@pytest.mark.parametrize("root", SHIPPED, ids=lambda p: p.name)
def test_shipped_study_has_no_drift(root):
    notes = []
    check_frozen(Study.at(root), stage="test", note=notes.append)  # raises DriftError (exit 2) on drift
