"""The differences between two records (a frozen one and one rebuilt now, or any two JSON trees): every
differing leaf by key path, whether it is refused or only reported (frozen_record.REPORTED), and their
printed form."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from harness.files import looks_like_sha256
from harness.provenance.frozen_record import is_reported

MAX_DIFF_LINES = 30
MAX_VALUE_CHARS = 72


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT = _Absent()


@dataclass(frozen=True)
class Difference:
    keys: tuple[str, ...]
    old: Any
    new: Any
    refused: bool

    @property
    def path(self) -> str:
        return key_path(self.keys)

    def describe(self) -> str:
        return f"{self.path}: {_short(self.old)} -> {_short(self.new)}"


def key_path(keys: Iterable[str]) -> str:
    """Dotted path; keys that contain dots or spaces are bracketed: prompts["enrich.txt"]."""
    out = ""
    for key in keys:
        if key.isdigit() and out:
            out += f"[{key}]"
        elif key and all(c.isalnum() or c in "_-+" for c in key):
            out += f".{key}" if out else key
        else:
            out += f"[{json.dumps(key, ensure_ascii=False)}]"
    return out


def _short(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if looks_like_sha256(value):
        return f"{value[:12]}…"  # a SHA-256: the prefix is enough to tell two apart
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def compare_records(old: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    """Every leaf that differs, sorted by key path; lists of equal length are compared item by item."""
    out: list[Difference] = []

    def walk(a: Any, b: Any, keys: tuple[str, ...]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key, ABSENT), b.get(key, ABSENT), keys + (key,))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and _has_containers(a + b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, keys + (str(i),))
        elif a is ABSENT or b is ABSENT or a != b or type(a) is not type(b):
            out.append(Difference(keys, a, b, refused=not is_reported(keys)))

    walk(old, new, ())
    return out


def _has_containers(items: list[Any]) -> bool:
    return any(isinstance(x, (dict, list)) for x in items)


def format_differences(diffs: list[Difference]) -> str:
    lines = [f"  {d.describe()}" for d in diffs[:MAX_DIFF_LINES]]
    if len(diffs) > MAX_DIFF_LINES:
        lines.append(f"  ... and {len(diffs) - MAX_DIFF_LINES} more")
    return "\n".join(lines)
