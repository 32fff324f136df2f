"""A study is a directory (DESIGN section 2). `Study` knows its paths and loads configs/study.yaml.

configs/study.yaml sections (each stage reads its own):

    study: name
    datasets:            # name -> {adapter, metric_set (qasper|freshstack), adapter options, selection}
    tokenizer: cl100k_base
    chunking:            # tau_min, tau_max, f512c_chars, f256t_tokens, f256t_stride, p_pack_chars
    models:              # name -> {backend, name, ...options}
    arms:                # arm name -> {kind: <registered or declared-only arm kind>, model: <model name>,
                         #   model_options (per-arm, per-dataset model limits), datasets, documents + seed
                         #   (a seeded sample), allow_shortfall, ...}
    retrievers:          # name -> {type: bm25|dense|rrf|rerank, ...}
    budgets:             # metric_set -> [token budgets]
    llm:                 # workers, retry_seeds, spend_cap_usd (a study-wide total over every arm)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError


def load_yaml(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except FileNotFoundError:
        raise HarnessError(f"{path}: file not found") from None
    except yaml.YAMLError as e:
        raise HarnessError(f"{path}: not valid YAML: {e}") from None


@dataclass(frozen=True)
class Study:
    root: Path

    @classmethod
    def at(cls, root: str | Path) -> "Study":
        root = Path(root).resolve()
        if not (root / "configs" / "study.yaml").is_file():
            raise HarnessError(
                f"{root} is not a study directory: configs/study.yaml is missing "
                "(pass --study DIR or STUDY=DIR; the demo study is examples/demo)"
            )
        return cls(root)

    # --- paths (DESIGN section 2) ---
    @property
    def config_path(self) -> Path:
        return self.root / "configs" / "study.yaml"

    @property
    def plan_path(self) -> Path:
        return self.root / "plan" / "plan.yaml"

    @property
    def amendments_dir(self) -> Path:
        return self.root / "amendments"

    @property
    def prompts_dir(self) -> Path:
        return self.root / "prompts"

    @property
    def selection_path(self) -> Path:
        return self.root / "selection" / "selection.json"

    @property
    def frozen_path(self) -> Path:
        return self.root / "frozen_config.json"

    @property
    def results(self) -> Path:
        return self.root / "results"

    def chunks_path(self, dataset: str, arm: str) -> Path:
        return self.results / "chunks" / dataset / f"{arm}.jsonl"

    def manifest_path(self, dataset: str, arm: str) -> Path:
        return self.results / "chunks" / dataset / f"{arm}.manifest.json"

    def run_path(self, dataset: str, arm: str, retriever: str) -> Path:
        return self.results / "runs" / dataset / f"{arm}__{retriever}.run"

    def per_question_path(self, dataset: str, suffix: str = "parquet") -> Path:
        return self.results / "per_question" / f"{dataset}.{suffix}"

    @property
    def stats_dir(self) -> Path:
        return self.results / "stats"

    def resolve(self, p: str | Path) -> Path:
        """A path from the config: absolute, or relative to the study root."""
        p = Path(p)
        return p if p.is_absolute() else (self.root / p)

    # --- config ---
    @cached_property
    def config(self) -> dict[str, Any]:
        cfg = load_yaml(self.config_path)
        if not isinstance(cfg, dict):
            raise HarnessError(f"{self.config_path}: expected a mapping at the top level")
        for key in ("datasets", "arms", "retrievers"):
            if not isinstance(cfg.get(key), dict) or not cfg[key]:
                raise HarnessError(f"{self.config_path}: section `{key}` must be a non-empty mapping")
        return cfg

    @property
    def name(self) -> str:
        return str(self.config.get("study", self.root.name))

    @property
    def datasets(self) -> dict[str, dict[str, Any]]:
        return self.config["datasets"]

    @property
    def arms(self) -> dict[str, dict[str, Any]]:
        return self.config["arms"]

    @property
    def retrievers(self) -> dict[str, dict[str, Any]]:
        return self.config["retrievers"]

    @property
    def models(self) -> dict[str, dict[str, Any]]:
        return self.config.get("models", {})

    @property
    def chunking(self) -> dict[str, Any]:
        defaults = {
            "tau_min": 100,
            "tau_max": 1500,
            "f512c_chars": 512,
            "f256t_tokens": 256,
            "f256t_stride": 224,
            "p_pack_chars": 1500,
        }
        return defaults | dict(self.config.get("chunking", {}))
