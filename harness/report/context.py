"""What the report reads, loaded once through the stages' own helpers; a failed read becomes a Missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from harness.errors import HarnessError
from harness.provenance.interim import Cell, outcomes_allowed
from harness.report.model import Missing
from harness.study import Study


@dataclass
class ReportContext:
    study: Study
    problems: dict[str, Missing] = field(default_factory=dict)

    @cached_property
    def frozen_hash(self) -> str | None:
        from harness.provenance.freeze import frozen_hash

        return frozen_hash(self.study) if self.study.frozen_path.is_file() else None

    @cached_property
    def plan(self):
        from harness.stats.plan import load_study_plan

        return load_study_plan(self.study) if self.study.plan_path.is_file() else None

    @cached_property
    def selection(self) -> dict | None:
        from harness.data.load import read_selection

        return read_selection(self.study)

    @cached_property
    def datasets(self) -> dict:
        """name -> LoadedDataset, for every dataset that loads."""
        from harness.data.load import load_dataset

        out = {}
        for name in self.study.config.datasets:
            try:
                out[name] = load_dataset(self.study, name, selection=self.selection)
            except HarnessError as e:
                self.problems[f"dataset {name}"] = Missing(f"dataset `{name}` does not load ({e})", "make select")
        return out

    @cached_property
    def outcomes(self) -> tuple[bool, list[Cell]]:
        return outcomes_allowed(self.study)

    @cached_property
    def per_question(self) -> pd.DataFrame | None:
        from harness.stats.io import load_per_question

        try:
            return load_per_question(self.study)
        except HarnessError:
            return None

    @cached_property
    def means(self) -> list:
        from harness.report.means import arm_means

        if self.per_question is None:
            return []
        stratified = {d: p.stratified for d, p in self.plan.datasets.items()} if self.plan else {}
        return arm_means(self.per_question, stratified=stratified)

    @property
    def budget_unit(self) -> str:
        """What the study's budgets count: the assembler's unit (tokens unless `assembly.unit` says words)."""
        from harness.config.lab import UNITS

        assembly = self.study.config.assembly
        return assembly.unit if assembly is not None else UNITS[0]

    def budgets(self, dataset: str) -> list[int]:
        from harness.metrics.registry import budgets_from_config

        return list(budgets_from_config(self.study.config.budgets, self.study.config.datasets[dataset].metric_set))
