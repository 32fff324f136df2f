"""A folder of Markdown files plus questions with evidence strings, converted to the JSONL format
(docs/jsonl-format.md) by `harness init --markdown DIR --questions F`.

The questions file is JSONL (one object per line) or one JSON list, each record
{"question": str, "evidence": [exact strings], "document": "path/in/the/folder.md" (optional), "qid":
optional,
 "answers", "nuggets", "reference_answer", "answer_type": optional, copied as they are}.
A record naming its `document` searches that document (cluster: the document); a record without one searches
every document of the folder pooled (cluster: the question); a file mixes neither. Each evidence string is
located with the adapters' TextLocator (verbatim, else after collapsing whitespace) in the named document, or
else in the first document (path order) that holds it, and written as a character span. A string found nowhere
is kept as text (the JSONL loader counts it unlocated; a question none of whose strings is found is dropped
and
counted there), so the converted file has every question of the input, and every string is counted here.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data.common import BOM, TextLocator, check_id, decode_utf8, jsonl_objects, normalise_newlines
from harness.errors import InputError

COPIED_FIELDS = ("answers", "nuggets", "reference_answer", "answer_type")  # passed through to questions.jsonl
DOCS_FOLDER = "docs"  # the Markdown copies, next to documents.jsonl


@dataclass(frozen=True)
class ConvertedCorpus:
    documents: list[dict[str, Any]]  # documents.jsonl records
    questions: list[dict[str, Any]]  # questions.jsonl records
    files: dict[str, Path]  # path under DOCS_FOLDER -> the Markdown file to copy there
    counts: dict[
        str, int
    ]  # evidence_located_verbatim / _normalised, evidence_unlocated, questions_without_located_evidence


def markdown_files(folder: Path) -> dict[str, Path]:
    """Relative POSIX path -> file, for every *.md under `folder` (sorted; hidden folders skipped)."""
    if not folder.is_dir():
        raise InputError("not a folder of Markdown files", path=folder)
    found = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.md"))
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)}
    if not found:
        raise InputError("holds no *.md file", path=folder)
    for rel, p in found.items():  # the relative path becomes the doc_id
        check_id(rel, "doc_id (the file's path in the folder)", path=p)
    return found


def read_records(path: Path) -> list[tuple[str, dict]]:
    """(where, record) of a JSONL file or a JSON list; errors name the file and the line or record."""
    try:
        text = decode_utf8(path.read_bytes(), path)
    except FileNotFoundError:
        raise InputError("questions file not found", path=path) from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON (line {e.lineno}): {e.msg}", path=path) from None
        for k, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError("not a JSON object", path=path, record=f"record {k}")
        return [(f"record {k}", item) for k, item in enumerate(items)]
    return [(f"line {n}", obj) for n, obj in jsonl_objects(text, path)]


def convert(folder: Path, questions_path: Path, *, domain: str) -> ConvertedCorpus:
    files = markdown_files(folder)
    # the text the JSONL adapter will read: LF line endings, no byte-order mark (offsets index that text)
    texts = {
        rel: normalise_newlines(decode_utf8(p.read_bytes(), p).removeprefix(BOM))[0]
        for rel, p in files.items()
    }
    locators = {rel: TextLocator(text) for rel, text in texts.items()}
    records = read_records(questions_path)
    if not records:
        raise InputError("holds no questions", path=questions_path)
    named = [bool(r.get("document")) for _, r in records]
    if any(named) and not all(named):
        where = records[named.index(not named[0])][0]
        raise InputError("some records name their `document` and some do not; a study clusters by one unit "
                         "(name it in every record, or in none to search the whole folder)",
                         path=questions_path, record=where)
    counts: Counter = Counter(
        evidence_located_verbatim=0,
        evidence_located_normalised=0,
        evidence_unlocated=0,
        questions_without_located_evidence=0,
    )
    questions, seen = [], set()
    for k, (where, record) in enumerate(records):
        question = _question(record, k, where, questions_path, locators, counts, domain)
        if question["qid"] in seen:
            raise InputError(f"qid {question['qid']!r} appears twice", path=questions_path, record=where)
        seen.add(question["qid"])
        questions.append(question)
    documents = [{"doc_id": rel, "domain": domain, "path": f"{DOCS_FOLDER}/{rel}"} for rel in files]
    return ConvertedCorpus(documents, questions, files, dict(counts))


def _question(record: dict, k: int, where: str, path: Path, locators: dict[str, TextLocator],
              counts: Counter, domain: str) -> dict[str, Any]:
    query = record.get("question", record.get("query"))
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"`question` must be a non-empty string, got {query!r}", path=path, record=where)
    evidence = record.get("evidence")
    if (
        not isinstance(evidence, list)
        or not evidence
        or not all(isinstance(e, str) and e.strip() for e in evidence)
    ):
        raise InputError(f"`evidence` must be a non-empty list of non-empty strings, got {evidence!r}",
                         path=path, record=where)
    qid = record.get("qid", f"q{k + 1:04d}")
    if not isinstance(qid, str) or not qid.strip():
        raise InputError(f"`qid` must be a non-empty string, got {qid!r}", path=path, record=where)
    check_id(qid, "qid", path=path, record=where)
    document = record.get("document")
    if document is not None and document not in locators:
        raise InputError(
            f"`document` {document!r} is not a Markdown file of the folder", path=path, record=where
        )
    searched = [document] if document else list(locators)
    items, found_in = [], []
    for needle in evidence:
        item = _locate(needle, searched, locators, counts)
        items.append(item)
        if "start" in item:
            found_in.append(item["doc_id"])
    if not found_in:
        counts["questions_without_located_evidence"] += 1
    # an unlocated string still needs a doc_id in scope: the question's document, else where its others were
    # found
    fallback = document or (found_in[0] if found_in else searched[0])
    items = [dict(item, doc_id=fallback) if "doc_id" not in item else item for item in items]
    out: dict[str, Any] = {"qid": qid, "query": query}
    out |= ({"scope": {"doc": document}, "cluster": "doc"} if document
            else {"scope": {"domain": domain}, "cluster": "question"})
    out["evidence"] = items
    out |= {key: record[key] for key in COPIED_FIELDS if key in record}
    return out


def _locate(
    needle: str, searched: list[str], locators: dict[str, TextLocator], counts: Counter
) -> dict[str, Any]:
    # a verbatim match in any document comes before a whitespace-normalised one in an earlier document
    verbatim = [rel for rel in searched if needle in locators[rel].text]
    for rel in verbatim[:1] or searched:
        start, end, how = locators[rel].locate(needle)
        if start is not None:
            counts[f"evidence_located_{how}"] += 1
            return {"doc_id": rel, "start": start, "end": end}
    counts["evidence_unlocated"] += 1
    return {"text": needle}
