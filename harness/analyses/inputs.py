"""What the moderator analyses read besides per-question results: the questions and three chunk sets."""

from __future__ import annotations

from functools import lru_cache

from harness.analyses.run import Blocked
from harness.errors import HarnessError
from harness.study import Study


def chunk_inputs_for(study: Study, frozen_hash: str | None):
    """A loader for run_analyses: (LoadedDataset, S chunks, A chunks, B chunks) of one dataset, or Blocked
    naming `make build-arms` when a chunk set is missing or stale."""
    from harness.arms.build import read_chunk_set
    from harness.data.load import load_dataset, read_selection

    @lru_cache(maxsize=None)
    def dataset(name: str):
        return load_dataset(study, name, selection=read_selection(study))

    def chunks(name: str, arm: str):
        try:
            return read_chunk_set(study, dataset(name), arm, frozen_hash=frozen_hash)
        except HarnessError as e:
            raise Blocked(f"chunk set {name}/{arm} ({e})", "make build-arms") from None

    def load(name: str, a: str, b: str):
        s_arm = next((arm for arm, cfg in study.arms.items() if cfg.kind == "S"), None)
        if s_arm is None:
            raise Blocked("an arm of kind S (the header-led chunks that define gold chunks)", "make build-arms")
        return dataset(name), chunks(name, s_arm), chunks(name, a), chunks(name, b)

    return load
