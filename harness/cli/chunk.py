"""`harness chunk`: chunk Markdown files for an LLM-free arm and print the chunks as JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.arms.builder import BuildInputs
from harness.arms.registry import build_chunks
from harness.chunking import get_chunker
from harness.config.arm_kinds import HEADER_LED, get_kind, llm_free_kinds
from harness.config.chunking import TAU_MAX, TAU_MIN, Chunking
from harness.config.fields import replace
from harness.data.common import BOM
from harness.data.model import Document
from harness.errors import HarnessError, InputError
from harness.files import jsonl_lines

HELP = "chunk Markdown files for an LLM-free arm and print one JSON chunk per line"


def add_arguments(parser) -> None:
    parser.add_argument("--arm", required=True, choices=llm_free_kinds(), help="arm whose chunks to print")
    parser.add_argument(
        "files", nargs="+", metavar="FILE.md", help="Markdown files (UTF-8); doc_id is the path as given"
    )
    parser.add_argument(
        "--tau-min", type=int, default=TAU_MIN, help=f"header-led tau_min in characters (default {TAU_MIN})"
    )
    parser.add_argument(
        "--tau-max", type=int, default=TAU_MAX, help=f"header-led tau_max in characters (default {TAU_MAX})"
    )
    parser.add_argument(
        "--fl-tokens",
        type=int,
        default=None,
        help="FL window length in tokens (default: the median S chunk length over the given files)",
    )
    parser.add_argument(
        "--contextual-headers",
        action="store_true",
        help="prefix each chunk's indexed text with the heading paths of the provisions it touches",
    )


def read_document(path: str) -> Document:
    """The file's text as stored (CRLF kept: offsets refer to these characters), without an opening
    byte-order mark, which the dataset loader strips too (it would hide the first header)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a Markdown file", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 (byte {e.start}): {e.reason}", path=path) from None
    return Document(doc_id=Path(path).as_posix(), domain="", text=text.removeprefix(BOM))


def run(args) -> int:
    docs = [read_document(p) for p in args.files]
    kind = get_kind(args.arm)
    tau = {"tau_min": args.tau_min, "tau_max": args.tau_max}
    header = get_chunker(HEADER_LED)
    by_doc: dict[str, list] = {}

    def header_chunks() -> dict[str, list]:
        if not by_doc:
            by_doc.update((d.doc_id, header(d, **tau)) for d in docs)
        return by_doc

    if kind.needs_s_chunks and args.fl_tokens is None and not any(header_chunks().values()):
        raise HarnessError("FL needs --fl-tokens: the given files have no S chunks to take a median from")
    # the schema's chunking defaults, with the taus given here
    chunking = replace(Chunking(), **tau)
    options = {"contextual_headers": True} if args.contextual_headers else {}
    built = build_chunks(kind, BuildInputs(docs, chunking, header_chunks, arm=args.arm, arm_config=options,
                                           fl_tokens=args.fl_tokens))
    sys.stdout.write(jsonl_lines(c.to_json() for c in built.chunks))  # document order, as given
    return 0
