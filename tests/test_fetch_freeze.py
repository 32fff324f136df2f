"""The freeze records each declared source's lock entry: a study frozen on one hub revision refuses
another."""

from __future__ import annotations

import json

import pytest
from fetch_support import hub, hub_folder, private_hub_cache  # noqa: F401 - the fixture
from provenance_support import FakeDigests, edit_yaml, install_fake_digests, make_study, model_keys

from harness.errors import DriftError
from harness.files import atomic_write_json, read_json
from harness.provenance.drift import check_frozen
from harness.provenance.freeze import freeze
from harness.sources import fetch as fetching
from harness.sources.lock import lock_path
from harness.study import Study


@pytest.fixture
def study(tmp_path, monkeypatch):
    """The demo study copied, its `papers` questions declared as hub rows and fetched."""
    digests = FakeDigests()
    install_fake_digests(monkeypatch, digests)
    root = make_study(tmp_path / "study")
    for i, key in enumerate(model_keys(root / "configs" / "study.yaml")):
        digests[key] = f"sha256:{i:064d}"
    questions = root / "data" / "papers" / "questions.jsonl"
    rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    folder = hub_folder(tmp_path / "hub", "papers", "train", rows)
    edit_yaml(root / "configs" / "study.yaml", lambda c: c["datasets"]["papers"].update(
        source={"questions": hub(folder, "train", "papers")}))
    questions.unlink()
    study = Study.at(root)
    assert [o.state for o in fetching.fetch(study, progress=False).outcomes] == ["written"]
    return study


def relock(study: Study, revision: str) -> None:
    lock = read_json(lock_path(study))
    lock["files"]["data/papers/questions.jsonl"]["revision"] = revision  # as if the hub had resolved it
    atomic_write_json(lock_path(study), lock)


def test_a_study_frozen_on_one_revision_refuses_another(study):
    relock(study, "a" * 40)
    freeze(study)
    assert read_json(study.frozen_path)["sources"]["data/papers/questions.jsonl"]["revision"] == "a" * 40
    check_frozen(Study.at(study.root), stage="build-arms", note=lambda text: None)  # unchanged: no drift
    relock(study, "b" * 40)
    with pytest.raises(
        DriftError, match=r'sources\["data/papers/questions.jsonl"\].revision: "a{40}" -> "b{40}"'
    ):
        check_frozen(Study.at(study.root), stage="build-arms", note=lambda text: None)
