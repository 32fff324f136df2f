"""Adapters over chunker libraries (docs/plugins.md): a class of LangChain's text splitters, LlamaIndex's node
parsers or Chonkie, built with the arm's `params:`, as a function of a document's text and id giving its
pieces, the shape a `kind: python` function has. Each library is imported here only, when an arm uses it
(the optional extra `plugins`); pieces are located in the source text by harness.chunking.outside."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from harness.errors import HarnessError
from harness.plugins import import_extra

Cutter = Callable[[str, str], list]  # (text, doc_id) -> chunk texts or (start, end) spans


def _instance(module: Any, module_name: str, name: str, params: Mapping[str, Any], what: str) -> Any:
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise HarnessError(f"{what}: `{module_name}` has no class `{name}`")
    try:
        return cls(**params)
    except Exception as e:  # the library refuses the parameters: say which arm, not a traceback
        call = f"{module_name}.{name}(**{dict(params)!r})"
        raise HarnessError(f"{what}: {call} failed: {type(e).__name__}: {e}") from None


def _span_or_text(text: str, start: Any, end: Any, content: str) -> Any:
    """The library's own offsets when they hold its chunk text exactly, else the text (located afterwards)."""
    offsets = isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)
    if offsets and text[start:end] == content:
        return (start, end)
    return content


def langchain(name: str, params: Mapping[str, Any], what: str) -> Cutter:
    module = "langchain_text_splitters"
    splitter = _instance(import_extra(module, what=what), module, name, params, what)
    return lambda text, doc_id: list(splitter.split_text(text))


def llamaindex(name: str, params: Mapping[str, Any], what: str) -> Cutter:
    module = "llama_index.core.node_parser"
    parser = _instance(import_extra(module, what=what), module, name, params, what)
    document_class = import_extra("llama_index.core", what=what).Document

    def cut(text: str, doc_id: str) -> list:
        nodes = parser.get_nodes_from_documents([document_class(text=text, id_=doc_id)])
        return [_span_or_text(text, n.start_char_idx, n.end_char_idx, n.get_content()) for n in nodes]

    return cut


def chonkie(name: str, params: Mapping[str, Any], what: str) -> Cutter:
    module = "chonkie"
    chunker = _instance(import_extra(module, what=what), module, name, params, what)
    return lambda text, doc_id: [
        _span_or_text(text, c.start_index, c.end_index, c.text) for c in chunker.chunk(text)
    ]
