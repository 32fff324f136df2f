"""data/SOURCES.lock: what `harness fetch` wrote, so every later fetch and the freeze can hold to it.

A JSON object {"format": 1, "files": {path: entry}}, path as configured. A file's entry: its `source` as
declared, the `revision` the hub resolved (the pin when the config gives none), `rows`, `sha256` and `bytes`
of the file written. A checkout's entry: `source`, `commit` (full), git's `tree` id, tracked `files` and
`bytes`.

A file of its own rather than a section of frozen_config.json: fetching comes before `select` and `freeze`
(the selection needs the data), and it must be re-runnable on a fresh clone before any freeze exists. The
freeze then copies the entries of the declared sources (`sources_record`), so a study frozen on one revision
refuses another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json
from harness.sources.targets import declared_targets
from harness.study import Study

FORMAT = 1
LOCK = Path("data") / "SOURCES.lock"


def lock_path(study: Study) -> Path:
    return study.root / LOCK


def read_lock(study: Study) -> dict[str, dict[str, Any]]:
    """path -> entry ({} when there is no lock yet)."""
    path = lock_path(study)
    if not path.is_file():
        return {}
    record = read_json(path)
    if (
        not isinstance(record, dict)
        or record.get("format") != FORMAT
        or not isinstance(record.get("files"), dict)
    ):
        raise HarnessError(
            f"{path}: not a SOURCES.lock of format {FORMAT}; delete it and run `harness fetch --update`"
        )
    return record["files"]


def write_lock(study: Study, entries: dict[str, dict[str, Any]]) -> None:
    atomic_write_json(lock_path(study), {"format": FORMAT, "files": dict(sorted(entries.items()))})


def sources_record(study: Study) -> dict[str, Any] | None:
    """For the freeze: each declared target's lock entry (None when it was not fetched: placed by hand), or
    None for a study that declares no source, whose frozen record then has no `sources` key at all."""
    targets = declared_targets(study)
    if not targets:
        return None
    entries = read_lock(study)
    return {t.path: entries.get(t.path) for t in targets}
