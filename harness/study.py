"""A study is a directory (docs/design.md, Studies). `Study` knows its paths and loads configs/study.yaml.

`Study.config` is the typed config (harness.config): every section checked against its schema and
every default filled in, so a typo or a bad value stops the run before any stage starts. Sections:
study, datasets, tokenizer, chunking, models, arms, retrievers, budgets, llm, run_depth
(`harness config --study DIR` prints them all, defaults included).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.config import StudyConfig, load_study_config
from harness.config.arms import ArmConfig
from harness.config.chunking import Chunking
from harness.config.models import ModelConfig
from harness.config.retrievers import RetrieverConfig
from harness.errors import HarnessError
from harness.files import load_yaml


@dataclass(frozen=True)
class Study:
    root: Path
    # where results/ lives (harness.grid.paths): None is <root>/results; `audit --rescore` re-runs cells into
    # a
    # scratch folder with the same inputs
    results_root: Path | None = None

    @classmethod
    def at(cls, root: str | Path) -> "Study":
        root = Path(root).resolve()
        if not (root / "configs" / "study.yaml").is_file():
            raise HarnessError(
                f"{root} is not a study directory: configs/study.yaml is missing "
                "(pass --study DIR or STUDY=DIR; the demo study is examples/demo)"
            )
        return cls(root)

    # --- input paths (docs/design.md, Studies; every path under results/ is harness.grid.paths') ---
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
    def lock_path(self) -> Path:
        """Held by the one stage writing the study (harness.study_lock); absent when none runs."""
        return self.root / ".harness.lock"

    def resolve(self, p: str | Path) -> Path:
        """A path from the config: absolute, or relative to the study root."""
        p = Path(p)
        return p if p.is_absolute() else (self.root / p)

    # --- config ---
    @cached_property
    def raw_config(self) -> dict[str, Any]:
        """configs/study.yaml exactly as written (parsed YAML)."""
        cfg = load_yaml(self.config_path)
        if not isinstance(cfg, dict):
            raise HarnessError(f"{self.config_path}: expected a mapping at the top level")
        return cfg

    @cached_property
    def config(self) -> StudyConfig:
        """The typed, validated config with defaults filled in."""
        return load_study_config(self.raw_config, path=self.config_path, default_name=self.root.name)

    @cached_property
    def loaded_datasets(self) -> dict[Any, Any]:
        """The datasets loaded during this command, by (name, selection) (harness.data.load.load_dataset). A
        Study lives for one command, as its `config` does: a new command (a new Study) reads the files
        again."""
        return {}

    @property
    def name(self) -> str:
        return self.config.study

    @property
    def arms(self) -> dict[str, ArmConfig]:
        return self.config.arms

    @property
    def retrievers(self) -> dict[str, RetrieverConfig]:
        return self.config.retrievers

    @property
    def models(self) -> dict[str, ModelConfig]:
        return self.config.models

    @property
    def chunking(self) -> Chunking:
        return self.config.chunking
