"""Helpers for the fetch tests: local folders in the Hugging Face hub's layout, studies declaring sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.study import Study


@pytest.fixture(autouse=True)
def private_hub_cache(tmp_path, monkeypatch):
    """`datasets` caches what it loads; keep it in the test's folder (and never ask the hub)."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def hub_folder(folder: Path, config: str, split: str, rows: list[dict]) -> Path:
    """A dataset folder as the hub lays one out: data files, and a README whose `configs:` names them."""
    (folder / config).mkdir(parents=True)
    (folder / config / f"{split}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    card = {
        "configs": [
            {"config_name": config, "data_files": [{"split": split, "path": f"{config}/{split}.jsonl"}]}
        ]
    }
    (folder / "README.md").write_text(
        "---\n" + yaml.safe_dump(card) + "---\n# test dataset\n", encoding="utf-8"
    )
    return folder


def study_with(root: Path, datasets: dict) -> Study:
    config = {"study": "fetched", "datasets": datasets, "arms": {"S": {"kind": "S"}},
              "retrievers": {"bm25": {"type": "bm25"}}}
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return Study.at(root)


def hub(dataset_id: str, split: str, config: str | None = None, **more) -> dict:
    return {
        "huggingface": {
            "id": str(dataset_id),
            "split": split,
            **({"config": config} if config else {}),
            **more,
        }
    }
