"""`harness chunk`: chunk Markdown files for an LLM-free arm and print the chunks as JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.arms.render import LLM_FREE_ARMS
from harness.chunking import get_chunker
from harness.chunking.header_led import header_led_chunks
from harness.config.chunking import TAU_MAX, TAU_MIN
from harness.chunking.windows import median_token_length
from harness.data.model import Document
from harness.errors import HarnessError, InputError
from harness.provenance.files import jsonl_lines

HELP = "chunk Markdown files for an LLM-free arm and print one JSON chunk per line"


def add_arguments(parser) -> None:
    parser.add_argument("--arm", required=True, choices=list(LLM_FREE_ARMS), help="arm whose chunks to print")
    parser.add_argument("files", nargs="+", metavar="FILE.md", help="Markdown files (UTF-8); doc_id is the path as given")
    parser.add_argument("--tau-min", type=int, default=TAU_MIN, help=f"header-led tau_min in characters (default {TAU_MIN})")
    parser.add_argument("--tau-max", type=int, default=TAU_MAX, help=f"header-led tau_max in characters (default {TAU_MAX})")
    parser.add_argument(
        "--fl-tokens",
        type=int,
        default=None,
        help="FL window length in tokens (default: the median S chunk length over the given files)",
    )


def read_document(path: str) -> Document:
    """The file's text exactly as stored (CRLF kept: offsets refer to these characters)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a Markdown file", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 (byte {e.start}): {e.reason}", path=path) from None
    return Document(doc_id=Path(path).as_posix(), domain="", text=text)


def run(args) -> int:
    docs = [read_document(p) for p in args.files]
    chunker_name, rendering = LLM_FREE_ARMS[args.arm]
    if chunker_name == "header-led":
        params = {"tau_min": args.tau_min, "tau_max": args.tau_max}
    elif chunker_name == "FL":
        tokens = args.fl_tokens
        if tokens is None:
            s_chunks = [c for d in docs for c in header_led_chunks(d, tau_min=args.tau_min, tau_max=args.tau_max)]
            if not s_chunks:
                raise HarnessError("FL needs --fl-tokens: the given files have no S chunks to take a median from")
            tokens = median_token_length(s_chunks)
        params = {"tokens": tokens}
    else:
        params = {}
    chunker = get_chunker(chunker_name)
    for doc in docs:
        sys.stdout.write(jsonl_lines(rendering(c).to_json() for c in chunker(doc, **params)))
    return 0
