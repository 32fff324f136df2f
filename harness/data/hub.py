"""The one call into the Hugging Face `datasets` library: a split's rows as plain dicts.

Used by the Qasper adapter's `hub:` option (read at load time) and by `harness fetch` (a `source:
huggingface` written once to the adapter's files). `id` is a hub id or a local folder in the hub's layout
(data files plus a README whose `configs:` metadata names them), which is how the tests run offline.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import HarnessError

OFFLINE_VALUES = ("1", "on", "yes", "true")


class HubUnavailable(HarnessError):
    """The hub cannot be asked (offline, unreachable, unknown id): the caller names what to place by hand."""


def is_local(dataset_id: str) -> bool:
    return Path(dataset_id).expanduser().is_dir()


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in OFFLINE_VALUES


def load_rows(dataset_id: str, *, split: str, config: str | None = None, revision: str | None = None,
              progress: bool = True) -> list[dict]:
    """Every row of the split, in the hub's order. HubUnavailable when it cannot be loaded."""
    if offline() and not is_local(dataset_id):
        raise HubUnavailable("HF_HUB_OFFLINE is set")
    try:
        import datasets
    except ImportError:
        raise HarnessError(
            "the `datasets` package is not installed; install the pinned requirements"
        ) from None
    if progress:
        datasets.enable_progress_bars()
    else:
        datasets.disable_progress_bars()
    # a local folder has no revision to key the cache on: read it afresh every time
    fresh = {"download_mode": "force_redownload"} if is_local(dataset_id) else {}
    try:
        rows = datasets.load_dataset(dataset_id, name=config, split=split, revision=revision, **fresh)
    except Exception as e:  # offline, unknown id, config or split, a loader error: the message says which
        raise HubUnavailable(f"{type(e).__name__}: {e}") from None
    return [dict(row) for row in rows]


def resolve_revision(dataset_id: str, revision: str | None) -> str | None:
    """The commit a hub revision (a branch, tag or None for the default branch) points to now; a local
    folder has none. HubUnavailable when the hub cannot be asked."""
    if is_local(dataset_id):
        return revision
    if offline():
        raise HubUnavailable("HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(dataset_id, revision=revision).sha
    except Exception as e:  # no network, unknown id or revision
        raise HubUnavailable(f"{type(e).__name__}: {e}") from None
