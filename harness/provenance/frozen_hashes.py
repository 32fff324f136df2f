"""The frozen hash each output records, and the rule that results under two freezes are never combined
(`assert_same_frozen_hash`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from harness.errors import HarnessError
from harness.files import looks_like_sha256, read_json


HASH_KEYS = ("frozen_config_hash", "frozen_hash")  # manifests and sidecars use the first


def read_frozen_hash(path: str | Path) -> str:
    """The frozen hash an output records: a JSON object's `frozen_config_hash` (or `frozen_hash`) key, or
    the same key in a Parquet file's schema metadata."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(path).metadata or {}
        except (OSError, ValueError) as e:
            raise HarnessError(f"{path}: cannot read Parquet metadata: {e}") from None
        found = {meta[k.encode()].decode() for k in HASH_KEYS if k.encode() in meta}
    else:
        record = read_json(path)
        found = {record[k] for k in HASH_KEYS if isinstance(record, dict) and record.get(k) is not None}
    if len(found) > 1:
        raise HarnessError(f"{path}: records two different frozen hashes: {sorted(map(str, found))}")
    value = next(iter(found), None)
    if not isinstance(value, str) or not value:
        raise HarnessError(f"{path}: records no frozen hash (expected a `{HASH_KEYS[0]}` key)")
    return value


def assert_same_frozen_hash(items: Iterable[str | Path]) -> str:
    """The one frozen hash shared by `items` (hashes, or paths of outputs that record one); raise
    HarnessError naming the groups when they come from different frozen configurations."""
    groups: dict[str, list[str]] = {}
    for item in items:
        if looks_like_sha256(item):
            groups.setdefault(str(item), []).append(str(item)[:12])
        else:
            groups.setdefault(read_frozen_hash(item), []).append(str(item))
    if not groups:
        raise HarnessError("no results to combine: expected at least one frozen hash or result file")
    if len(groups) > 1:
        described = "; ".join(
            f"{h[:12]} ({', '.join(sources[:3])}{', ...' if len(sources) > 3 else ''})"
            for h, sources in sorted(groups.items())
        )
        raise HarnessError(
            f"results come from {len(groups)} different frozen configurations and cannot be combined: "
            f"{described}; re-run them under one freeze"
        )
    return next(iter(groups))
