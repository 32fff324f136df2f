"""Chunkers by canonical name. Each is `fn(doc: Document, **params) -> list[Chunk]`.

`params_from_config` maps the study config's `chunking:` section (harness.config.chunking.Chunking, with
its defaults filled in) to a chunker's keyword parameters, so the CLI and build-arms pass the same values.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.chunking.header_led import header_led_chunks
from harness.chunking.paragraphs import paragraph_chunks
from harness.chunking.windows import f256t_chunks, f512c_chunks, fl_chunks
from harness.config.chunking import Chunking
from harness.data.model import Chunk, Document
from harness.errors import InputError

Chunker = Callable[..., list[Chunk]]

CHUNKERS: dict[str, Chunker] = {
    "header-led": header_led_chunks,
    "F512c": f512c_chunks,
    "F256t": f256t_chunks,
    "P": paragraph_chunks,
    "FL": fl_chunks,
}

# chunker name -> {its keyword parameter: key in the config's `chunking:` section}
_CONFIG_KEYS: dict[str, dict[str, str]] = {
    "header-led": {"tau_min": "tau_min", "tau_max": "tau_max"},
    "F512c": {"chars": "f512c_chars"},
    "F256t": {"tokens": "f256t_tokens", "stride": "f256t_stride"},
    "P": {"pack_chars": "p_pack_chars"},
    "FL": {},  # its length is measured from the S chunks, not configured
}


def get_chunker(name: str) -> Chunker:
    try:
        return CHUNKERS[name]
    except KeyError:
        raise InputError(f"unknown chunker {name!r}; known: {', '.join(CHUNKERS)}") from None


def params_from_config(name: str, chunking: Chunking) -> dict[str, Any]:
    get_chunker(name)
    return {param: getattr(chunking, key) for param, key in _CONFIG_KEYS[name].items()}


def chunk_document(name: str, doc: Document, **params: Any) -> list[Chunk]:
    return get_chunker(name)(doc, **params)
