"""Hand-made enriched (E) chunks for the merge, control and expansion tests."""

from __future__ import annotations

from harness.data.model import Chunk, make_chunk_id


def e_chunk(
    pos: int,
    text: str,
    key: str = "",
    *,
    doc_id: str = "d/doc.md",
    related: tuple[str, ...] = (),
    section: str = "Intro",
    summary: str | None = None,
    keywords: tuple[str, ...] = (),
    questions: tuple[str, ...] = (),
) -> Chunk:
    """Chunk `pos` of a document: 10 lines apart, spans 10,000 characters apart, E fields filled."""
    return Chunk(
        doc_id=doc_id,
        chunk_id=make_chunk_id(doc_id, pos, text),
        text=text,
        spans=((pos * 10_000, pos * 10_000 + len(text)),),
        section_path=section,
        start_line=pos * 10 + 1,
        end_line=pos * 10 + 5,
        block_types=("paragraph",),
        generated={
            "title": f"title {pos}",
            "summary": f"summary {pos}" if summary is None else summary,
            "keywords": list(keywords) or [f"kw{pos}"],
            "entities": [],
            "questions": list(questions) or [f"question {pos}?"],
            "key": key,
            "related_keys": list(related),
            "context": "",
            "llm_failed": False,
        },
    )


def sized(pos: int, length: int, key: str = "", **kw) -> Chunk:
    """A chunk whose text is exactly `length` characters (a letter per position, so texts differ)."""
    return e_chunk(pos, chr(ord("a") + pos % 26) * length, key, **kw)


def doc_chunks(keys: list[str], length: int = 100, **kw) -> list[Chunk]:
    return [sized(i, length, k, **kw) for i, k in enumerate(keys)]


PLANNED_KIND = "E+future"


def declare_planned_kind(monkeypatch) -> str:
    """Register a kind the plan may name before its builder exists (the shipped kinds are all buildable), so
    the planned-kind path is tested on the real tables."""
    from harness.arms.builder import ArmBuilder
    from harness.arms.registry import BUILDERS
    from harness.arms.render import render_enriched
    from harness.config.arm_kinds import ARM_KINDS, HEADER_LED, ArmKindSpec

    monkeypatch.setitem(
        ARM_KINDS, PLANNED_KIND, ArmKindSpec(PLANNED_KIND, HEADER_LED, needs_model=True, planned=True)
    )
    monkeypatch.setitem(BUILDERS, PLANNED_KIND, ArmBuilder(render_enriched))
    return PLANNED_KIND
