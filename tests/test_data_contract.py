"""The adapter contract: every file an adapter opens is in the dataset's `input_files` (so the freeze hashes
it), and load_dataset refuses a dataset that names none. Checked for every registered adapter by watching the
interpreter's own "open" audit events, so a new adapter that reads around its InputReader fails here."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from data_support import CHECKOUT, SHARED_DATA, freshstack_study

from harness.data.common import LoadedDataset
from harness.config.datasets import DATASET_SCHEMAS
from harness.data.adapters import ADAPTERS
from harness.data.load import load_dataset
from harness.errors import HarnessError
from harness.study import Study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
QASPER = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"
DATA_SUFFIXES = (".md", ".json", ".jsonl", ".tsv", ".txt", ".yaml")

_watch: list[str] | None = None  # paths opened while a load is watched; None when not watching


def _audit(event: str, args) -> None:
    if _watch is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _watch.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # hooks cannot be removed; it records only while _watch is set


def opened_while(load) -> tuple[LoadedDataset, set[str]]:
    global _watch
    _watch = []
    try:
        dataset = load()
    finally:
        opened, _watch = _watch, None
    files = {os.path.realpath(p) for p in opened if p.endswith(DATA_SUFFIXES) and os.path.isfile(p)}
    return dataset, files


def jsonl_study(tmp_path: Path) -> tuple[Study, str]:
    for folder in ("configs", "data", "selection"):
        shutil.copytree(DEMO / folder, tmp_path / folder)
    return Study.at(tmp_path), "docs"


def qasper_study(tmp_path: Path) -> tuple[Study, str]:
    if not QASPER.is_file():
        pytest.skip("../shared/data/qasper-train10 is absent")
    (tmp_path / "configs").mkdir()
    config = {"study": "q", "datasets": {"qasper": {"adapter": "qasper", "metric_set": "qasper",
                                                     "files": [str(QASPER)],
                                                     "selection": {"seed": 1, "n_clusters": "all"}}},
              "arms": {"S": {"kind": "S"}}, "retrievers": {"bm25": {"type": "bm25"}}}
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(tmp_path), "qasper"


def fs_study(tmp_path: Path) -> tuple[Study, str]:
    if not (CHECKOUT / "helpers.md").is_file():
        pytest.skip("../shared/data/laravel-docs-724c31cc is absent")
    return freshstack_study(tmp_path, ratio=2), "fs"


def question_evidence_study(tmp_path: Path) -> tuple[Study, str]:
    for folder in ("configs", "data"):
        shutil.copytree(DEMO.parent / "handbook" / folder, tmp_path / folder)
    return Study.at(tmp_path), "handbook"


STUDIES = {"jsonl": jsonl_study, "qasper": qasper_study, "freshstack": fs_study,
           "question_evidence": question_evidence_study}


def test_every_adapter_has_a_contract_case():
    assert set(STUDIES) == set(ADAPTERS)


def test_every_declared_adapter_is_implemented():
    assert list(ADAPTERS) == list(DATASET_SCHEMAS)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_every_file_an_adapter_opens_is_recorded(tmp_path, adapter):
    study, name = STUDIES[adapter](tmp_path)
    dataset, opened = opened_while(lambda: load_dataset(study, name, selection=None))
    recorded = {os.path.realpath(study.resolve(f.path)) for f in dataset.input_files}
    study_config = os.path.realpath(study.config_path)
    assert opened - {study_config}, "the watch saw no data file opened"
    assert opened - {study_config} <= recorded, sorted(opened - recorded)
    assert len(dataset.input_files) == len(recorded)  # one entry per file


def test_a_dataset_without_input_files_is_refused(tmp_path, monkeypatch):
    study, name = jsonl_study(tmp_path)
    real = ADAPTERS["jsonl"]
    monkeypatch.setitem(ADAPTERS, "jsonl", dataclasses.replace(
        real, load=lambda *args: dataclasses.replace(real.load(*args), input_files=())))
    with pytest.raises(HarnessError, match=r"dataset `docs`: the adapter recorded no input files"):
        load_dataset(study, name, selection=None)


def test_counts_that_do_not_add_up_are_refused(tmp_path, monkeypatch):
    study, name = jsonl_study(tmp_path)
    real = ADAPTERS["jsonl"]

    def losing(*args):
        dataset = real.load(*args)
        return dataclasses.replace(dataset, questions=dataset.questions[1:])  # one question lost, uncounted

    monkeypatch.setitem(ADAPTERS, "jsonl", dataclasses.replace(real, load=losing))
    with pytest.raises(
        HarnessError, match=r"dataset `docs`: questions do not add up: 47 in the input, 46 kept"
    ):
        load_dataset(study, name, selection=None)
