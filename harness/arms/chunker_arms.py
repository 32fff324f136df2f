"""Builder of the arms a document chunker cuts with no LLM call (S, S+T, F512c, F256t, P, FL)."""

from __future__ import annotations

from typing import Any

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs
from harness.chunking import chunk_document, params_from_config
from harness.chunking.windows import median_token_length
from harness.config.arm_kinds import HEADER_LED, ArmKindSpec


def build_chunked(kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs) -> ArmChunks:
    extra: dict[str, Any] = {}
    if kind.boundaries == HEADER_LED:
        by_doc = inputs.header_chunks()
        raw = [c for d in inputs.documents for c in by_doc[d.doc_id]]
    else:
        params = params_from_config(kind.boundaries, inputs.chunking)
        if kind.needs_s_chunks:
            tokens = inputs.fl_tokens
            if tokens is None:
                by_doc = inputs.header_chunks()
                tokens = median_token_length([c for d in inputs.documents for c in by_doc[d.doc_id]])
            params = {"tokens": tokens}
            extra["fl_window_tokens"] = tokens
        raw = [c for d in inputs.documents for c in chunk_document(kind.boundaries, d, **params)]
    extra["chunker"] = kind.boundaries
    return ArmChunks([builder.render(c) for c in raw], extra)
