"""Rolling key dictionary of one document (docs/design.md, Arms).

After chunk i's call its key is inserted (count 1) or counted again; only the 40 most recently used
keys are kept. Rendered most recent first, one line per key.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

EMPTY_RENDERING = "(none yet — this is the first chunk)"
NOT_PROVIDED = "(not provided)"
CAPACITY = 40


def normalise_key(key: object) -> str:
    return str(key).strip().lower() if isinstance(key, str) else ""


class KeyDictionary:
    def __init__(self, capacity: int = CAPACITY):
        if capacity < 1:
            raise ValueError(f"key dictionary capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[int, int]] = OrderedDict()  # key -> (count, last position)
        self.evictions = 0

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys_by_recency(self) -> list[str]:
        """Most recently used first."""
        return list(reversed(self._entries))

    def count(self, key: str) -> int:
        return self._entries[key][0] if key in self._entries else 0

    def observe(self, key: str, position: int) -> str:
        """Record that chunk `position` used `key` (normalised); returns the stored form ("" = ignored)."""
        key = normalise_key(key)
        if not key:
            return ""
        count = self._entries.pop(key, (0, position))[0]
        self._entries[key] = (count + 1, position)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
            self.evictions += 1
        return key

    def filter_related(self, related: Iterable[object], own_key: str, limit: int = 3) -> list[str]:
        """Related keys kept only if already in the dictionary (call before `observe`), deduped, in order."""
        kept: list[str] = []
        for raw in related:
            key = normalise_key(raw)
            if key and key != own_key and key in self._entries and key not in kept:
                kept.append(key)
        return kept[:limit]

    def render(self) -> str:
        if not self._entries:
            return EMPTY_RENDERING
        return "\n".join(f"- {k} (seen {self._entries[k][0]} x)" for k in self.keys_by_recency())
