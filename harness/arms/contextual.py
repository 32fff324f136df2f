"""Contextual retrieval arm CR: one call per chunk with the whole document and the chunk.

A document too long for the model's context is cut deliberately, before the call and the same way
every time: the kept window is centred on the chunk (what situates a passage is mostly near it), the
cuts are marked, and each cut prompt is counted. Lengths are measured in cl100k tokens, so the prompt,
and hence the cache key, never depends on loading the model.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.arms.enrich import DocumentOutcome, empty_generated, fields_validator
from harness.data.model import Chunk, Document
from harness.llm.prompts import PromptTemplate
from harness.llm.session import LlmSession
from harness.tokens import count_tokens

CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}
CUT_MARK = "[... document cut to fit the model's context ...]"
SAFETY = 0.9  # cl100k only approximates the model's tokenizer: leave a margin


def fit_document(
    template: PromptTemplate, document: str, chunk: Chunk, limit: int | None
) -> tuple[str, bool]:
    """The document text to put in the prompt, and whether it had to be cut."""
    if limit is None:
        return document, False
    budget = int(limit * SAFETY) - count_tokens(
        template.render({"document_text": "", "chunk_text": chunk.text})
    )
    doc_tokens = count_tokens(document)
    if doc_tokens <= budget:
        return document, False
    if budget <= 0:
        return CUT_MARK, True
    centre = (chunk.spans[0][0] + chunk.spans[-1][1]) // 2 if chunk.spans else 0
    keep = int(len(document) * budget / doc_tokens)
    while True:
        start = max(0, min(centre - keep // 2, len(document) - keep))
        window = document[start : start + keep]
        text = (
            (CUT_MARK + "\n" if start > 0 else "")
            + window
            + ("\n" + CUT_MARK if start + keep < len(document) else "")
        )
        if count_tokens(text) <= budget or keep == 0:
            return text, True
        keep = int(keep * 0.9)


def contextualise_document(
    session: LlmSession,
    template: PromptTemplate,
    document: Document,
    chunks: Sequence[Chunk],
    *,
    seeds: Sequence[int],
) -> DocumentOutcome:
    out = DocumentOutcome()
    validate = fields_validator(["context"])
    limit = session.backend.prompt_token_limit
    for chunk in chunks:
        doc_text, cut = fit_document(template, document.text, chunk, limit)
        prompt = template.render({"document_text": doc_text, "chunk_text": chunk.text})
        result = session.call_json(prompt, schema=CONTEXT_SCHEMA, seeds=seeds, validate=validate)
        generated = empty_generated()
        if out.count_call(result, generated, truncated=cut):
            generated["context"] = result.value["context"]
        out.add_chunk(generated)
    return out
