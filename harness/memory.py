"""Hand memory the process has freed back to the operating system, between large units of work.

Freeing a scope's indexes or a dataset's table returns it to the allocators, not to the system: glibc's
malloc keeps freed pages in its arenas and Arrow's pool keeps its own. A scoring process then holds its
largest moment's memory for the rest of its life, and two worker processes side by side hold two of them.
Trimming costs milliseconds; nothing is recomputed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache


def release_freed_memory() -> None:
    """Return freed heap pages to the system (glibc's malloc_trim, Arrow's pool); a no-op where
    unsupported."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # only a process that used Arrow has a pool to release
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # another C library (musl) has no malloc_trim
        return None
