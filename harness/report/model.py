"""The report as data: sections of tables, figures and notes; renderers (Markdown, HTML, CSV, LaTeX) read it.

A section whose inputs are missing carries `Missing` records (what, and the make target that produces it)
instead of tables, so no table is ever left silently empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


LONG_TABLE_ROWS = 12


@dataclass(frozen=True)
class Table:
    name: str  # file stem under tables/, e.g. "verdicts-primary"
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    collapsed: bool = False  # a long reference table: on the page inside a closed <details>


@dataclass(frozen=True)
class Figure:
    name: str  # file stem under figures/, e.g. "forest-primary"
    caption: str
    svg: str  # the SVG document (inlined into the HTML page, written as <name>.svg)


@dataclass(frozen=True)
class Missing:
    what: str
    target: str  # the make target that produces it, e.g. "make score"

    def sentence(self) -> str:
        return f"Missing: {self.what}; run `{self.target}`."


@dataclass(frozen=True)
class Definition:
    """One glossary entry. A code (an arm, a metric, a verdict, ...) is linked to its entry wherever it
    appears on the report's first screen; a word (cluster, margin, ...) at its first appearance in a block."""

    group: str  # e.g. "Arms", "Metrics"
    term: str
    text: str
    code: bool = True

    @property
    def anchor(self) -> str:
        return "glossary-" + slug(self.group) + "-" + slug(self.term)


def slug(text: str) -> str:
    """An HTML id fragment: letters, digits and -_. kept; + and @ spelled out (S+T and S-T stay apart)."""
    spelled = text.replace("+", "-plus-").replace("@", "-at-")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", spelled).strip("-")


@dataclass
class Section:
    id: str  # HTML anchor
    title: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)  # after the paragraphs, e.g. one sentence per test
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    preformatted: list[str] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)  # the glossary, in its groups' order


def table(name: str, caption: str, header, rows, notes=(), *, collapsed: bool | None = None) -> Table:
    """A Table with every cell rendered as text (None as an en dash). `collapsed` None: collapsed when longer
    than LONG_TABLE_ROWS, so no long table pushes the sections after it down."""
    cells = tuple(tuple("–" if v is None else str(v) for v in r) for r in rows)
    folded = len(cells) > LONG_TABLE_ROWS if collapsed is None else collapsed
    return Table(name, caption, tuple(header), cells, tuple(notes), folded)


def points(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def interval(ci, digits: int = 1) -> str:
    return "–" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def p_value(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"
