"""`arms:` one entry per arm, its schema chosen by `kind:` (DESIGN section 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.config.fields import Either, Int, ListOf, OneOf, Optional, Text, Variants, Where, setting

LLM_FREE_KINDS = ("S", "S+T", "F512c", "F256t", "P", "FL")  # harness.arms.render.LLM_FREE_ARMS builds these
LLM_KINDS = ("E", "E-K", "CR", "PF")  # harness.arms.llm_arms builds these
ALL_DOCUMENTS = "all"


@dataclass(frozen=True)
class LlmFreeArm:
    kind: str = setting(check=OneOf(LLM_FREE_KINDS))
    datasets: tuple[str, ...] | None = setting(None, Optional(ListOf(Text(non_empty=True), min_len=1)))  # None: all


@dataclass(frozen=True)
class LlmArm:
    kind: str = setting(check=OneOf(LLM_KINDS))
    model: str = setting(check=Text(non_empty=True))  # a `models:` entry
    datasets: tuple[str, ...] | None = setting(None, Optional(ListOf(Text(non_empty=True), min_len=1)))
    documents: int | str = setting(ALL_DOCUMENTS, Either((OneOf((ALL_DOCUMENTS,)), Int(1))))  # a seeded subset
    seed: int | None = setting(None, Optional(Int()))  # draws the subset when `documents` is a number

    def completed(self, where: Where) -> "LlmArm":
        if self.documents != ALL_DOCUMENTS and self.seed is None:
            raise where.child("seed").fail(f"is required with `documents: {self.documents}` (an integer seed)")
        return self


def _arm_schema(raw: Mapping[str, Any]) -> type | None:
    kind = raw.get("kind")
    return LlmFreeArm if kind in LLM_FREE_KINDS else LlmArm if kind in LLM_KINDS else None


ARM = Variants("kind", _arm_schema, LLM_FREE_KINDS + LLM_KINDS)
ArmConfig = LlmFreeArm | LlmArm
