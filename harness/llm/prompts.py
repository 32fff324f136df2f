"""Prompt templates: .txt files in a study's prompts/ folder with {placeholder} fields.

Only `{lower_snake}` is a placeholder, so JSON examples in a template (`{"name": ...}`) stay literal.
Every placeholder must be given a value; a missing one is an error naming the template file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from harness.errors import HarnessError
from harness.files import sha256_text

PLACEHOLDER_RE = re.compile(r"\{([a-z][a-z0-9_]*)\}")


@dataclass(frozen=True)
class PromptTemplate:
    path: Path
    text: str

    @classmethod
    def load(cls, prompts_dir: str | Path, name: str) -> "PromptTemplate":
        path = Path(prompts_dir) / name
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HarnessError(
                f"prompt template {path} not found (each LLM arm needs its template)"
            ) from None
        return cls(path, text)

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(sorted(set(PLACEHOLDER_RE.findall(self.text))))

    def render(self, values: Mapping[str, str]) -> str:
        missing = [p for p in self.placeholders if p not in values]
        if missing:
            raise HarnessError(
                f"prompt template {self.path}: no value for placeholder(s) {', '.join(missing)}"
            )
        # one pass, so a value that itself contains "{x}" is never substituted again
        return PLACEHOLDER_RE.sub(lambda m: str(values[m.group(1)]), self.text)
