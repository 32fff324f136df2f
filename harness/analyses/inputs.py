"""What the exploratory analyses read besides per-question results: the loaded questions and chunk sets."""

from __future__ import annotations

from functools import lru_cache

from harness.analyses.run import Blocked
from harness.arms.build import read_chunk_set
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.grid.cells import arm_spec
from harness.study import Study


class StudyInputs:
    """The study's datasets and chunk sets under the current freeze, loaded once; a missing one raises
    Blocked naming the make target that produces it (`make select`, `make build-arms`)."""

    def __init__(self, study: Study, frozen_hash: str | None):
        self.study, self.frozen_hash = study, frozen_hash

    @lru_cache(maxsize=None)
    def dataset(self, name: str):
        try:
            return load_dataset(self.study, name, selection=read_selection(self.study))
        except HarnessError as e:
            raise Blocked(f"the questions of dataset {name} ({e})", "make select") from None

    def chunks(self, name: str, arm: str):
        try:
            return read_chunk_set(self.study, self.dataset(name), arm_spec(self.study, arm),
                                  frozen_hash=self.frozen_hash)
        except HarnessError as e:
            raise Blocked(f"chunk set {name}/{arm} ({e})", "make build-arms") from None

    def moderator_chunks(self, name: str, a: str, b: str):
        """(LoadedDataset, S chunks, A chunks, B chunks) of one dataset."""
        s_arm = next((arm for arm, cfg in self.study.arms.items() if cfg.kind == "S"), None)
        if s_arm is None:
            raise Blocked(
                "an arm of kind S (the header-led chunks that define gold chunks)", "make build-arms"
            )
        return self.dataset(name), self.chunks(name, s_arm), self.chunks(name, a), self.chunks(name, b)
