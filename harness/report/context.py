"""What the report reads, loaded once through the stages' own helpers; a failed read becomes a Missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from harness.arms.build import read_chunk_set
from harness.config.lab import UNITS
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.files import read_json
from harness.metrics.registry import budgets_from_config
from harness.provenance.freeze import frozen_hash
from harness.provenance.interim import Cell, outcomes_allowed
from harness.grid.cells import arm_spec
from harness.grid.paths import per_question_sidecar
from harness.report.chunksets import ChunkSetStats, chunk_set_stats, document_tables
from harness.report.means import arm_means
from harness.report.model import Missing
from harness.stats.demotion import decided_plan
from harness.stats.io import load_per_question
from harness.study import Study


@dataclass
class ReportContext:
    study: Study
    problems: dict[str, Missing] = field(default_factory=dict)
    _chunk_stats: dict[tuple[str, str], ChunkSetStats] = field(default_factory=dict)
    _tables: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)
    _cell_counts: dict[str, dict[str, dict]] = field(default_factory=dict)

    @cached_property
    def frozen_hash(self) -> str | None:
        return frozen_hash(self.study) if self.study.frozen_path.is_file() else None

    @cached_property
    def plan(self):
        # as `stats` decides it: a post-outcome amendment's families and tests demoted
        return decided_plan(self.study) if self.study.plan_path.is_file() else None

    @cached_property
    def selection(self) -> dict | None:
        return read_selection(self.study)

    @cached_property
    def datasets(self) -> dict:
        """name -> LoadedDataset, for every dataset that loads."""
        out = {}
        for name in self.study.config.datasets:
            try:
                out[name] = load_dataset(self.study, name, selection=self.selection)
            except HarnessError as e:
                self.problems[f"dataset {name}"] = Missing(
                    f"dataset `{name}` does not load ({e})", "make select"
                )
        return out

    @cached_property
    def outcomes(self) -> tuple[bool, list[Cell]]:
        return outcomes_allowed(self.study)

    @cached_property
    def per_question(self) -> pd.DataFrame | None:
        try:
            return load_per_question(self.study)
        except HarnessError:
            return None

    @cached_property
    def means(self) -> list:
        if self.per_question is None:
            return []
        stratified = {d: p.stratified for d, p in self.plan.datasets.items()} if self.plan else {}
        return arm_means(self.per_question, stratified=stratified)

    @property
    def budget_unit(self) -> str:
        """What the study's budgets count: the assembler's unit (tokens unless `assembly.unit` says words)."""
        assembly = self.study.config.assembly
        return assembly.unit if assembly is not None else UNITS[0]

    def chunk_stats(self, dataset: str, arm: str) -> ChunkSetStats:
        """A loaded dataset's chunk set of `arm`, measured once per report (the summary's sentences and the
        Chunk sets section both read it); HarnessError when it is not built under the current freeze."""
        if (dataset, arm) not in self._chunk_stats:
            ds = self.datasets[dataset]
            chunks = read_chunk_set(self.study, ds, arm_spec(self.study, arm), frozen_hash=self.frozen_hash)
            if dataset not in self._tables:  # every chunk set of a dataset is checked against its tables
                self._tables[dataset] = document_tables(ds.documents)
            self._chunk_stats[dataset, arm] = chunk_set_stats(chunks, ds.questions, self.budgets(dataset),
                                                             self.budget_unit, ds.documents,
                                                             self._tables[dataset])
        return self._chunk_stats[dataset, arm]

    def cell_counts(self, dataset: str) -> dict[str, dict]:
        """Each scored cell's counts (keyed `dataset/arm/retriever`) from the dataset's per-question manifest,
        read once per report; empty when `score` has not assembled the dataset."""
        if dataset not in self._cell_counts:
            path = per_question_sidecar(self.study, dataset)
            self._cell_counts[dataset] = read_json(path).get("cell_counts", {}) if path.is_file() else {}
        return self._cell_counts[dataset]

    def budgets(self, dataset: str) -> list[int]:
        return list(
            budgets_from_config(self.study.config.budgets, self.study.config.datasets[dataset].metric_set)
        )
