"""Each dataset is loaded once per command: the freeze check hashes the load the stage then uses."""

from __future__ import annotations

import dataclasses

import pytest

from harness.cli.main import main
from harness.data import adapters
from pipeline_support import make_llm_free_study


@pytest.mark.slow
def test_score_loads_each_dataset_once(tmp_path, monkeypatch):
    study = make_llm_free_study(tmp_path / "s")
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    calls: list[str] = []
    for name, entry in list(adapters.ADAPTERS.items()):
        def counted(study, dataset, *args, _load=entry.load, **kwargs):
            calls.append(dataset)
            return _load(study, dataset, *args, **kwargs)
        monkeypatch.setitem(adapters.ADAPTERS, name, dataclasses.replace(entry, load=counted))
    assert main(["score", "--study", str(study.root), "--no-progress"]) == 0
    assert sorted(calls) == sorted(study.config.datasets)  # the freeze check's load, reused by scoring
