"""The study's chunk sets (dataset x arm) and cells (dataset x arm x retriever), resolved once from the
config into typed records: every stage takes these, never names to look up again.

The grid is what the config names: every dataset, every arm, every retriever, minus the restrictions an
entry declares (`datasets: [...]` on arms and retrievers, `arms: [...]` on retrievers). Arms expanded at
retrieval time (E+KX, ...) have no chunk set: their cells rank the chunk set of their `of:` arm. Arms of a
planned kind (declared, no builder yet) have no cells: nothing waits for them.

Specs compare, hash and sort by name: within one study a name identifies its entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config.arm_kinds import ArmKindSpec, is_planned
from harness.config.arms import ALL_DOCUMENTS, ArmConfig, documents_of
from harness.config.datasets import DatasetConfig
from harness.config.retrievers import RetrieverConfig
from harness.errors import HarnessError
from harness.grid.arms import applies_to, arm_kind, source_arm
from harness.study import Study


@dataclass(frozen=True, order=True)
class DatasetSpec:
    name: str
    config: DatasetConfig = field(compare=False, repr=False)  # the typed `datasets:` entry

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class ArmSpec:
    name: str
    config: ArmConfig = field(compare=False, repr=False)  # the typed `arms:` entry
    kind: ArmKindSpec = field(compare=False, repr=False)  # what its kind is (harness.config.arm_kinds)
    # an arm expanded at retrieval time: its `of:` arm, whose chunk set its cells rank (None: its own)
    of: ArmSpec | None = field(compare=False, repr=False, default=None)

    def __str__(self) -> str:
        return self.name

    @property
    def ranks(self) -> ArmSpec:
        """The arm whose chunk set this arm's cells rank: its `of:` arm when expanded at retrieval time, else
        itself."""
        return self.of or self

    @property
    def expansion(self) -> str | None:
        """KX, AX or SX for an arm expanded at retrieval time, else None."""
        return self.kind.expansion

    @property
    def retrieval_time(self) -> bool:
        return self.kind.retrieval_time

    @property
    def documents(self) -> int | str:
        """A seeded sample size, or ALL_DOCUMENTS."""
        return documents_of(self.config)

    @property
    def sampled(self) -> bool:
        return self.documents != ALL_DOCUMENTS


@dataclass(frozen=True, order=True)
class RetrieverSpec:
    name: str
    config: RetrieverConfig = field(compare=False, repr=False)  # the typed `retrievers:` entry

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class ChunkSet:
    dataset: DatasetSpec
    arm: ArmSpec

    @property
    def names(self) -> tuple[str, str]:
        return self.dataset.name, self.arm.name

    def __str__(self) -> str:
        return f"{self.dataset}/{self.arm}"


@dataclass(frozen=True, order=True)
class Cell:
    dataset: DatasetSpec
    arm: ArmSpec
    retriever: RetrieverSpec

    @property
    def names(self) -> tuple[str, str, str]:
        return self.dataset.name, self.arm.name, self.retriever.name

    def record(self) -> dict[str, str]:
        """The cell as markers and manifests write it."""
        return dict(zip(("dataset", "arm", "retriever"), self.names))

    def __str__(self) -> str:
        return "/".join(self.names)


def dataset_spec(study: Study, dataset: str) -> DatasetSpec:
    cfg = study.config.datasets.get(dataset)
    if cfg is None:
        raise HarnessError(
            f"{study.config_path}: no dataset `{dataset}` (configured: {', '.join(study.config.datasets)})"
        )
    return DatasetSpec(dataset, cfg)


def arm_spec(study: Study, arm: str) -> ArmSpec:
    """A configured arm with its kind and the arm its cells rank resolved; unknown arms are an error."""
    cfg = study.arms.get(arm)
    if cfg is None:
        raise HarnessError(f"{study.config_path}: no arm `{arm}` (configured: {', '.join(study.arms)})")
    kind = arm_kind(study, arm)
    return ArmSpec(arm, cfg, kind, arm_spec(study, source_arm(study, arm)) if kind.retrieval_time else None)


def retriever_spec(study: Study, retriever: str) -> RetrieverSpec:
    cfg = study.retrievers.get(retriever)
    if cfg is None:
        raise HarnessError(
            f"{study.config_path}: no retriever `{retriever}` (configured: {', '.join(study.retrievers)})"
        )
    return RetrieverSpec(retriever, cfg)


def chunk_set_of(study: Study, dataset: str, arm: str) -> ChunkSet:
    return ChunkSet(dataset_spec(study, dataset), arm_spec(study, arm))


def cell_of(study: Study, dataset: str, arm: str, retriever: str) -> Cell:
    """The typed cell for three configured names (e.g. from a command line or a released file)."""
    return Cell(dataset_spec(study, dataset), arm_spec(study, arm), retriever_spec(study, retriever))


def _datasets(study: Study) -> list[DatasetSpec]:
    return [DatasetSpec(name, cfg) for name, cfg in study.config.datasets.items()]


def chunk_sets(study: Study) -> list[ChunkSet]:
    """Every chunk set the config names, in config order (datasets, then arms)."""
    arms = [arm_spec(study, a) for a in study.arms]
    return [
        ChunkSet(dataset, arm)
        for dataset in _datasets(study)
        for arm in arms
        if applies_to(arm.config, dataset.name) and not arm.retrieval_time
    ]


def configured_cells(study: Study) -> list[Cell]:
    """Every cell the config names, in config order (datasets, then arms, then retrievers)."""
    arms = [arm_spec(study, a) for a in study.arms if not is_planned(study.arms[a])]
    retrievers = [retriever_spec(study, r) for r in study.retrievers]
    return [
        Cell(dataset, arm, retriever)
        for dataset in _datasets(study)
        for arm in arms
        if applies_to(arm.config, dataset.name)
        for retriever in retrievers
        if applies_to(retriever.config, dataset.name, arm.name)
    ]


def answer_cells(study: Study) -> list[Cell]:
    """Every cell `reader.cells` names, in config order (entries, then their arms), each once."""
    return list(dict.fromkeys(cell_of(study, c.dataset, arm, c.retriever)
                              for c in study.config.reader.cells for arm in c.arms))
