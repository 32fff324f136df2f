"""Each fetchable file's format: how hub rows become the file the adapter reads, and the adapter's own
reader as the check that a fetched file (or one placed by hand) has the schema it needs."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.data import freshstack, jsonl_corpus, qasper
from harness.data.common import InputReader, iter_jsonl_numbered


@dataclass(frozen=True)
class FileFormat:
    what: str  # what a file placed by hand must be
    from_rows: (
        Callable[[list[dict], str], str] | None
    )  # hub rows (and where they came from) -> the file's text
    check: Callable[
        [Path], int
    ]  # the adapter's reader over the file: its record count, InputError if malformed


def json_lines(rows: list[dict], origin: str) -> str:
    """One JSON object per row, columns in the hub's order (what `Dataset.to_json` writes, byte-stable)."""
    return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)


def qasper_file(rows: list[dict], origin: str) -> str:
    """The original Qasper schema, one object keyed by paper id (as the v0.3 release files)."""
    return json.dumps(qasper.original_schema(rows, origin), ensure_ascii=False) + "\n"


def _check_qasper(path: Path) -> int:
    papers = qasper.read_qasper_file(path)
    for paper_id, record in papers.items():
        qasper.convert_paper(paper_id, record, path=path)  # every field the adapter reads, checked now
    return len(papers)


def _check_documents(path: Path) -> int:
    return len(jsonl_corpus.read_documents(path, Counter(), InputReader(path.parent)))


def _count_objects(path: Path) -> int:
    return sum(1 for _ in iter_jsonl_numbered(path))


# by "<adapter>-<key of its `source:` section>" (harness.sources.targets)
FORMATS: dict[str, FileFormat] = {
    "qasper-files": FileFormat(
        "a Qasper file in the original schema (a v0.3 release file) or the hub's JSON export",
        qasper_file,
        _check_qasper,
    ),
    "freshstack-queries": FileFormat(
        "FreshStack queries as JSON lines (`Dataset.to_json` of the split)",
        json_lines,
        lambda p: len(freshstack.read_queries(p)),
    ),
    "freshstack-corpus": FileFormat(
        "a FreshStack corpus as JSON lines (`Dataset.to_json` of the split)",
        json_lines,
        lambda p: len(freshstack.read_corpus(p, InputReader(p.parent))),
    ),
    "freshstack-qrels": FileFormat(
        "qrels, TREC or BEIR rows",
        None,
        lambda p: sum(map(len, freshstack.read_qrels(p, InputReader(p.parent)).values())),
    ),
    "jsonl-documents": FileFormat("documents.jsonl (docs/jsonl-format.md)", json_lines, _check_documents),
    "jsonl-questions": FileFormat("questions.jsonl (docs/jsonl-format.md)", json_lines, _count_objects),
}
CHECKOUT_WHAT = "a clone of the repository with that commit checked out"
