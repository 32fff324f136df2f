"""Spend ledger per arm: what generating the arm cost, and the study-wide hard cap checked before every call.

Costs are counted from cache records, so a cache-warm rebuild reports the same generation cost as
the run that paid for it; `fresh_calls` / `cache_hits` say what this run actually did.

The cap (`llm.spend_cap_usd`) is a total for the whole study, not per arm: every paid call is a line in
one of the study's generation caches, so what the study has spent before an arm starts is the sum over
those lines (`study_spend_usd`), and the arm's ledger refuses a call that would take that sum plus its own
fresh spend past the cap. A cache hit costs nothing new.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.llm.base import SpendCapReached
from harness.llm.cache import CacheRecord


@dataclass(frozen=True)
class LedgerTotals:
    calls: int
    fresh_calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    cost_usd: float

    def as_dict(self) -> dict:
        n = max(self.calls, 1)
        return {
            "calls": self.calls,
            "fresh_calls": self.fresh_calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "prompt_tokens_per_call": round(self.prompt_tokens / n, 3),
            "completion_tokens_per_call": round(self.completion_tokens / n, 3),
            "wall_s": round(self.wall_s, 3),
            "cost_usd": round(self.cost_usd, 6),
        }


def study_spend_usd(generations_dir: str | Path) -> float:
    """Everything the study has paid so far: the sum of `cost_usd` over every line of every generation
    cache (*.jsonl) in the folder. A torn or unreadable line is skipped (it recorded no finished call)."""
    folder = Path(generations_dir)
    if not folder.is_dir():
        return 0.0
    return sum(_file_spend(path) for path in sorted(folder.glob("*.jsonl")))


# path -> (inode, size, mtime_ns, its spend): a process building many arms reads each cache once, not once
# per arm; a cache only grows (append-only) or is replaced, so a changed file is read again
_spend_by_file: dict[Path, tuple[int, int, int, float]] = {}
_spend_lock = threading.Lock()


def _file_spend(path: Path) -> float:
    stat = path.stat()
    with _spend_lock:
        known = _spend_by_file.get(path)
        if known is not None and known[:3] == (stat.st_ino, stat.st_size, stat.st_mtime_ns):
            return known[3]
    total = 0.0
    with open(path, "rb") as f:
        for line in f:
            try:
                total += float(json.loads(line).get("cost_usd") or 0.0)
            except (ValueError, AttributeError):
                continue
    with _spend_lock:
        _spend_by_file[path] = (stat.st_ino, stat.st_size, stat.st_mtime_ns, total)
    return total


class SpendLedger:
    """`cap_usd` None means no cap; it is the study-wide cap, and `spent_before_usd` what the study had
    spent before this ledger started (study_spend_usd). Thread-safe: estimates are reserved so parallel
    calls cannot overshoot."""

    def __init__(self, arm: str, cap_usd: float | None, *, spent_before_usd: float = 0.0):
        if cap_usd is not None and cap_usd < 0:
            raise ValueError(f"spend cap for arm {arm!r} must be >= 0, got {cap_usd}")
        if spent_before_usd < 0:
            raise ValueError(f"spend before arm {arm!r} must be >= 0, got {spent_before_usd}")
        self.arm = arm
        self.cap_usd = cap_usd
        self.spent_before_usd = spent_before_usd
        self._lock = threading.Lock()
        self._reserved = 0.0
        self._calls = self._fresh = self._hits = self._tok_in = self._tok_out = 0
        self._wall = self._cost = self._fresh_cost = 0.0

    def reserve(self, estimate_usd: float, *, billed: bool) -> float:
        """Before a call: refuse it if it could take the study's spend past the cap; else hold its
        estimate."""
        with self._lock:
            if billed and self.cap_usd is not None:
                spent = self.spent_before_usd + self._fresh_cost
                committed = spent + self._reserved
                if committed >= self.cap_usd or committed + estimate_usd > self.cap_usd:
                    raise SpendCapReached(
                        f"arm {self.arm}: spend cap ${self.cap_usd:.4f} reached (spent ${spent:.4f} "
                        "study-wide, "
                        f"${self.spent_before_usd:.4f} of it before this arm; next call up to "
                        f"${estimate_usd:.4f}); the cap is a total over all arms: raise llm.spend_cap_usd in "
                        "configs/study.yaml to continue; completed calls are cached and will not be paid "
                        "again"
                    )
            self._reserved += estimate_usd
            return estimate_usd

    def release(self, reservation: float) -> None:
        with self._lock:
            self._reserved -= reservation

    def settle(self, reservation: float, record: CacheRecord) -> None:
        """A fresh call's cost replaces its reservation in one step: releasing first would let a parallel
        call see neither, and pass the cap."""
        with self._lock:
            self._reserved -= reservation
            self._count(record, fresh=True)

    def record(self, record: CacheRecord, *, fresh: bool) -> None:
        with self._lock:
            self._count(record, fresh=fresh)

    def _count(self, record: CacheRecord, *, fresh: bool) -> None:  # under self._lock
        self._calls += 1
        self._fresh += int(fresh)
        self._hits += int(not fresh)
        self._tok_in += record.prompt_tokens
        self._tok_out += record.completion_tokens
        self._wall += record.wall_s
        self._cost += record.cost_usd
        if fresh:
            self._fresh_cost += record.cost_usd

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._cost

    def totals(self) -> LedgerTotals:
        with self._lock:
            return LedgerTotals(
                self._calls, self._fresh, self._hits, self._tok_in, self._tok_out, self._wall, self._cost
            )
