"""The chunking lab's settings (docs/chunking-lab.md): arm schemas, the chunk-graph retriever, the assembler
options.

Every lab default is written here once; the chunkers (harness.chunking.sentences / provisions / qes), the
graph scorer (harness.retrieval.graph) and the assembler (harness.metrics.assembly) take them from here.

A lab arm's `L` may be a list: the config then expands it into one arm per value, named `<arm>@L<value>`
(the chunk-size sweep, expand_sweeps); everything downstream sees ordinary arms.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.arm_settings import DATASETS, contextual_headers_setting
from harness.config.fields import (
    Either, Flag, Int, ListOf, Number, OneOf, Optional, Text, Where, replace, setting,
)

LAB_L = 450  # characters per chunk
OVERLAP_CHARS = 50  # fixed window step L - 50; sentence-window carry budget
REF_PATTERN = r"Section (\d+(?:\.\d+)+)"  # group 1: the provision id
REF_CHARS = 320  # characters of a referenced provision appended to the indexed text
QES_MU = 0.05  # DP: cost per chunk
QES_ALPHA = 0.02  # greedy: gain per newly covered unit
QES_FLOOR = 0.5  # greedy: candidate windows of at least this share of L
QES_BUDGET_FACTOR = 1.35  # greedy: index budget as a multiple of the document length

# chunk graph (SpectRAG-style): edge weights (0 switches a type off), PageRank and the score mix
EDGE_TYPES = ("adjacency", "section", "xref", "lexical")
GRAPH_ADJACENCY, GRAPH_SECTION, GRAPH_XREF, GRAPH_LEXICAL = 1.0, 0.5, 1.0, 0.5
GRAPH_LEXICAL_THRESHOLD = 0.2  # Jaccard of token sets
GRAPH_SEEDS, GRAPH_RESTART, GRAPH_ITERATIONS = 3, 0.5, 25
GRAPH_BASE_WEIGHT = 0.6  # final = 0.6 x normalised base + 0.4 x normalised PageRank mass
GRAPH_BASE = "bm25"  # the base retriever: a `retrievers:` entry

# assembler (scoring): today's behaviour is cl100k tokens, cut at the budget, no novelty filter
UNITS = ("tokens", "words")
OVERFLOWS = ("cut", "skip")
NOVELTY = 0.3  # the lab's novelty filter share (harness lab); a study switches it on explicitly
UNIT_SUFFIX = {"tokens": "t", "words": "w"}  # metric names: complete@512t, complete@120w

BM25_TOKENIZERS = ("words", "lab")  # lab: stop words dropped, light suffix stemmer

SWEEP_SEPARATOR = "@L"
_L = Either((Int(1), ListOf(Int(1), min_len=1, unique=True)))


@dataclass(frozen=True)
class _LabArm:
    kind: str = setting(check=Text(non_empty=True))
    datasets: tuple[str, ...] | None = setting(None, DATASETS)
    L: int | tuple[int, ...] = setting(LAB_L, _L)  # a list: the chunk-size sweep
    contextual_headers: bool | None = contextual_headers_setting()


@dataclass(frozen=True)
class WindowArm(_LabArm):
    """fixed (L characters every L - overlap) and sentence (whole sentences, carried overlap)."""

    overlap: int = setting(OVERLAP_CHARS, Int(0))

    def completed(self, where: Where) -> "WindowArm":
        for L in _values(self.L):
            if self.overlap >= L:  # a fixed window steps L - overlap; a sentence window carries less than L
                raise where.child("overlap").expected(f"an integer < L ({L})", self.overlap)
        return self


@dataclass(frozen=True)
class ProvisionsArm(_LabArm):
    resolve_refs: bool = setting(True, Flag())
    ref_pattern: str = setting(REF_PATTERN, Text(non_empty=True))
    ref_chars: int = setting(REF_CHARS, Int(0))

    def completed(self, where: Where) -> "ProvisionsArm":
        import re

        try:
            groups = re.compile(self.ref_pattern).groups
        except re.error as e:
            raise where.child("ref_pattern").fail(f"is not a regular expression: {e}") from None
        if groups < 1:
            raise where.child("ref_pattern").fail(
                "needs a group capturing the provision id, e.g. Section (\\d+(?:\\.\\d+)+)"
            )
        return self


@dataclass(frozen=True)
class QesDpArm(_LabArm):
    mu: float = setting(QES_MU, Number(0))


@dataclass(frozen=True)
class QesGreedyArm(_LabArm):
    alpha: float = setting(QES_ALPHA, Number(0))
    floor: float = setting(QES_FLOOR, Number(0, 1))
    budget_factor: float = setting(QES_BUDGET_FACTOR, Number(0, above=True))


LabArm = WindowArm | ProvisionsArm | QesDpArm | QesGreedyArm


def _values(L: int | tuple[int, ...]) -> tuple[int, ...]:
    return L if isinstance(L, tuple) else (L,)


def expand_sweeps(arms: dict, where: Where) -> dict:
    """Lab arms with a list `L` become one arm per value (`<arm>@L<value>`), in config order."""
    out: dict = {}
    for name, cfg in arms.items():
        if isinstance(cfg, _LabArm) and isinstance(cfg.L, tuple):
            expanded = {f"{name}{SWEEP_SEPARATOR}{L}": replace(cfg, L=L) for L in cfg.L}
        else:
            expanded = {name: cfg}
        for new in expanded:
            if new in out or (new != name and new in arms):
                raise (
                    where.child(name).child("L").fail(f"expands to arm `{new}`, which is already configured")
                )
        out.update(expanded)
    return out


@dataclass(frozen=True)
class Assembly:
    """How a ranking fills a budget before the budgeted metrics are measured (harness.metrics.assembly)."""

    unit: str = setting(UNITS[0], OneOf(UNITS))
    overflow: str = setting(OVERFLOWS[0], OneOf(OVERFLOWS))
    novelty: float | None = setting(None, Optional(Number(0, 1)))  # None: no novelty filter

    @property
    def is_default(self) -> bool:
        return self == Assembly()

    @property
    def suffix(self) -> str:
        return UNIT_SUFFIX[self.unit]
