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
