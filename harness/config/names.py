"""The error for a config value that must name an entry of another section (`models:`, `datasets:`, ...)."""

from __future__ import annotations

import difflib
from typing import Any

from harness.config.fields import Where
from harness.errors import HarnessError


def not_a_name(where: Where, value: str, known: dict[str, Any], section: str) -> HarnessError:
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return where.fail(f"is {value!r}, which is not an entry of `{section}:`{hint}; configured: {', '.join(known) or 'none'}")
