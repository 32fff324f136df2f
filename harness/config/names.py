"""The one rule for the names a study gives (datasets, arms, retrievers, models, domains; the plan's families
and tests), and the error for a config value that must name an entry of another section.

A name becomes part of file names under results/ (chunks/<dataset>/<arm>.jsonl,
runs/.../<arm>__<retriever>.run)
and a field of TREC run files and CSVs, so it is checked once, where the config and the plan are loaded
(docs/pipeline.md, "Names and numbers"): a letter or digit, then letters, digits and `_ . + @ -`, no `__`
(it joins an arm and a retriever in a file name), at most NAME_MAX characters. No path separator, white
space, control character or leading dot can pass.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from harness.config.fields import ValueCheck, Where
from harness.errors import HarnessError

NAME_MAX = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+@-]*")
NAME_RULE = (f"a letter or digit, then letters, digits, '_', '.', '+', '@' or '-' (no '__'), "
             f"at most {NAME_MAX} characters")


def is_safe_name(value: Any) -> bool:
    return (isinstance(value, str) and len(value) <= NAME_MAX and _NAME.fullmatch(value) is not None
            and "__" not in value)


@dataclass(frozen=True)
class SafeName(ValueCheck):
    """A name by the rule above (NAME_RULE says it in words)."""

    expected = f"a name ({NAME_RULE})"

    def __call__(self, value: Any, where: Where) -> Any:
        if not is_safe_name(value):
            raise where.expected(self.expected, value)
        return value


NAME = SafeName()


def not_a_name(where: Where, value: str, known: dict[str, Any], section: str) -> HarnessError:
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return where.fail(
        f"is {value!r}, which is not an entry of `{section}:`{hint}; configured: {', '.join(known) or 'none'}"
    )
