"""The repository stands on its own: the design the code follows is docs/design.md, and what cites it names a
section that exists; nothing in the package, the README or docs/ points outside the repository for it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
# a citation is "docs/design.md, <Section name>" ended by punctuation, read with line breaks (and the comment
# marker of a wrapped comment) as spaces
_CITATION = re.compile(r"docs/design\.md, ([A-Z][\w -]*?)(?=[).;:,])")
_LINE_BREAK = re.compile(r"[ \t]*\n\s*(?:#[ \t]*)?")
_OUTSIDE = re.compile(r"shared/DESIGN|DESIGN section|issue [0-9]")


def _sources() -> list[Path]:
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [ROOT / "README.md", *docs, *sorted((ROOT / "harness").rglob("*.py"))]


def _sections() -> set[str]:
    return set(re.findall(r"^## (.+)$", DESIGN.read_text(encoding="utf-8"), re.M))


def test_nothing_cites_a_design_outside_the_repository():
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _sources()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _OUTSIDE.search(line)]
    assert found == []


def test_every_citation_of_the_design_names_one_of_its_sections():
    sections = _sections()
    cited = {(p.relative_to(ROOT).as_posix(), name) for p in _sources()
             for name in _CITATION.findall(_LINE_BREAK.sub(" ", p.read_text(encoding="utf-8")))}
    assert cited, "no citation of docs/design.md found"
    assert sorted(c for c in cited if c[1] not in sections) == []


def test_the_readme_points_to_the_design():
    assert "](docs/design.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
