"""Contextual headers, an option of every arm (`contextual_headers: true`, docs/chunking-lab.md).

After an arm's own builder and rendering, each chunk's indexed text is prefixed with the heading paths of
the provisions it touches (harness.chunking.provisions: segments and their paths), one path per line, each
distinct path once, in document order; a blank line separates them from what the arm indexed before. The
rendering is S+T's (harness.arms.render.render_heading_paths). `text` and `spans` stay the source slice, so
budgets and evidence metrics never see the prefix.

A chunk that touches no headed text (a document without headings, text before the first heading) keeps
its indexed text unchanged; the manifest counts those chunks and names the documents without headings.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.arms.render import render_heading_paths
from harness.chunking.provisions import segments, touched_paths
from harness.data.model import Chunk, Document
from harness.errors import HarnessError


def add_contextual_headers(
    chunks: Sequence[Chunk], documents: Sequence[Document], *, arm: str
) -> tuple[list[Chunk], dict[str, Any]]:
    """The chunks with their heading paths prefixed, and the counts for the chunk set's manifest."""
    segs = {d.doc_id: segments(d.text) for d in documents}
    out: list[Chunk] = []
    paths_per_chunk: list[int] = []
    for chunk in chunks:
        doc_segs = segs.get(chunk.doc_id)
        if doc_segs is None:
            raise HarnessError(
                f"arm `{arm}`: chunk {chunk.chunk_id} belongs to document {chunk.doc_id!r}, which is "
                "not among the documents it was built from"
            )
        paths = touched_paths(doc_segs, chunk.spans)
        paths_per_chunk.append(len(paths))
        out.append(render_heading_paths(chunk, paths) if paths else chunk)
    without_headings = sorted(d for d, s in segs.items() if not any(seg.path for seg in s))
    manifest = {
        "chunks_with_headers": sum(n > 0 for n in paths_per_chunk),
        "chunks_without_headers": sum(n == 0 for n in paths_per_chunk),
        "chunks_with_several_paths": sum(n > 1 for n in paths_per_chunk),
        "max_paths_per_chunk": max(paths_per_chunk, default=0),
        "documents_without_headings": len(without_headings),
        "documents_without_headings_ids": without_headings,
    }
    return out, manifest
