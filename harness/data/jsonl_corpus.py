"""The generic JSONL corpus format (adapter `jsonl`): bring your own documents and questions.

The format is specified in docs/jsonl-format.md. In short: documents.jsonl holds {doc_id, domain, path | text,
provenance}; questions.jsonl holds {qid, query, scope, cluster, stratum, evidence, answers, nuggets,
answer_type}. Paths are
relative to the directory of documents.jsonl. Evidence offsets index the document text after CRLF -> LF.
Malformed records raise InputError naming the file and line; evidence text that is not in its document is
counted and kept unlocated, and a question with no located evidence is dropped and counted.
Counts start from the files: `questions_in_input` = kept + `questions_dropped_no_located_evidence` +
`questions_dropped_not_selected`, and `documents_in_input` = kept + `documents_dropped_unscoped` (load.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.config.datasets import JsonlDataset
from harness.data.answer_types import ANSWER_TYPES, NO_TYPE
from harness.data.common import (
    Adapter, InputReader, LoadedDataset, SimulatedCorpus, check_id, exclusion_paths, normalise_newlines,
)
from harness.data.model import Document, Evidence, Question
from harness.data.sampling import select_clusters
from harness.errors import HarnessError, InputError
from harness.files import atomic_write_jsonl, atomic_write_text
from harness.study import Study

COUNT_KEYS = ("evidence_unlocated", "evidence_span_text_mismatch", "questions_dropped_no_located_evidence",
              "questions_dropped_not_selected", "documents_crlf_normalised", "documents_empty")


def _text_field(obj: dict, key: str, path, line: int, *, required: bool = True, default: str = "") -> str:
    if key not in obj:
        if required:
            raise InputError(f"missing field `{key}`", path=path, record=f"line {line}")
        return default
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(f"field `{key}` must be a string, got {type(value).__name__}", path=path,
                         record=f"line {line}")
    return value


def _string_list(obj: dict, key: str, path, line: int) -> tuple[str, ...]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"field `{key}` must be a list of strings", path=path, record=f"line {line}")
    return tuple(value)


def read_documents(path: Path, counts: Counter, reader: InputReader) -> dict[str, Document]:
    documents: dict[str, Document] = {}
    for line, row in reader.iter_jsonl(path):
        where = f"line {line}"
        doc_id = _text_field(row, "doc_id", path, line)
        domain = _text_field(row, "domain", path, line)
        if not doc_id.strip() or not domain.strip():
            raise InputError("`doc_id` and `domain` must be non-empty", path=path, record=where)
        check_id(doc_id, "doc_id", path=path, record=where)
        if doc_id in documents:
            raise InputError(f"doc_id {doc_id!r} appears twice", path=path, record=where)
        if ("path" in row) == ("text" in row):
            raise InputError(
                f"document {doc_id!r} needs exactly one of `path` or `text`", path=path, record=where
            )
        if "path" in row:
            file = path.parent / _text_field(row, "path", path, line)
            if not file.is_file():
                raise InputError(f"document {doc_id!r}: file {file} not found", path=path, record=where)
            text, changed = reader.read_markdown(file)
        else:
            text, changed = normalise_newlines(reader.without_bom(_text_field(row, "text", path, line),
                                                                  f"{reader.display_path(path)}:{line}"))
        counts["documents_in_input"] += 1
        counts["documents_crlf_normalised"] += changed
        counts["documents_empty"] += not text.strip()
        provenance = row.get("provenance", {})
        if not isinstance(provenance, dict):
            raise InputError("field `provenance` must be an object", path=path, record=where)
        documents[doc_id] = Document(doc_id, domain, text, provenance)
    return documents


def _scope(row: dict, documents: dict[str, Document], by_domain: dict[str, list[str]], path, line: int):
    """(sorted doc_ids, the scope's single domain or None, the single doc or None)."""
    scope = row.get("scope")
    where = f"line {line}"
    if not isinstance(scope, dict) or len(scope) != 1 or next(iter(scope)) not in ("doc", "domain", "docs"):
        raise InputError(
            '`scope` must be {"doc": id}, {"domain": name} or {"docs": [ids]}', path=path, record=where
        )
    kind, value = next(iter(scope.items()))
    if kind == "domain":
        if value not in by_domain:
            raise InputError(f"scope domain {value!r} has no documents", path=path, record=where)
        return tuple(by_domain[value]), value, None
    ids = [value] if kind == "doc" else value
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise InputError(f"scope `{kind}` must name document ids", path=path, record=where)
    unknown = sorted(set(ids) - set(documents))
    if unknown:
        raise InputError(f"scope names unknown doc_id {unknown[0]!r}", path=path, record=where)
    domains = {documents[i].domain for i in ids}
    return (
        tuple(sorted(set(ids))),
        (domains.pop() if len(domains) == 1 else None),
        (value if kind == "doc" else None),
    )


def _evidence(item, documents: dict[str, Document], scope: tuple[str, ...], path, line: int, counts: Counter):
    where = f"line {line}"
    if not isinstance(item, dict) or not isinstance(item.get("doc_id"), str):
        raise InputError("each evidence item needs a string `doc_id`", path=path, record=where)
    doc_id = item["doc_id"]
    if doc_id not in documents:
        raise InputError(f"evidence names unknown doc_id {doc_id!r}", path=path, record=where)
    if doc_id not in scope:
        raise InputError(
            f"evidence doc_id {doc_id!r} is outside the question's scope", path=path, record=where
        )
    text = documents[doc_id].text
    has_span = "start" in item or "end" in item
    if has_span:
        start, end = item.get("start"), item.get("end")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)) or not (
            0 <= start < end <= len(text)
        ):
            raise InputError(f"evidence span [{start}, {end}) is not within {doc_id!r} (length {len(text)})",
                             path=path, record=where)
        sliced = text[start:end]
        if "text" in item and item["text"] != sliced:
            counts["evidence_span_text_mismatch"] += 1
            return Evidence(doc_id, str(item["text"]))
        counts["evidence_located_span"] += 1
        return Evidence(doc_id, sliced, start, end)
    needle = item.get("text")
    if not isinstance(needle, str) or not needle.strip():
        raise InputError(
            "each evidence item needs a non-empty `text` or `start` and `end`", path=path, record=where
        )
    start = text.find(needle)
    if start < 0:
        counts["evidence_unlocated"] += 1
        return Evidence(doc_id, needle)
    counts["evidence_located_verbatim"] += 1
    return Evidence(doc_id, needle, start, start + len(needle))


def read_questions(path: Path, dataset: str, documents: dict[str, Document], counts: Counter,
                   reader: InputReader) -> list[Question]:
    by_domain: dict[str, list[str]] = {}
    for doc_id in sorted(documents):
        by_domain.setdefault(documents[doc_id].domain, []).append(doc_id)
    questions, seen = [], set()
    rows = list(reader.iter_jsonl(path))
    if not rows:  # else freeze says "rerun select" and select fails on no eligible cluster: a loop
        raise InputError(
            "holds no questions (the file is empty or blank); a questions file needs one JSON object "
            "per line (docs/jsonl-format.md)",
            path=path,
        )
    for line, row in rows:
        where = f"line {line}"
        qid = _text_field(row, "qid", path, line)
        if not qid.strip() or qid in seen:
            raise InputError(f"qid {qid!r} is empty or appears twice", path=path, record=where)
        check_id(qid, "qid", path=path, record=where)
        seen.add(qid)
        query = _text_field(row, "query", path, line)
        if not query.strip():
            raise InputError("field `query` is empty", path=path, record=where)
        scope, scope_domain, scope_doc = _scope(row, documents, by_domain, path, line)
        cluster = _text_field(row, "cluster", path, line)
        if cluster == "doc":
            if scope_doc is None:
                raise InputError('cluster "doc" needs a {"doc": id} scope', path=path, record=where)
            cluster = scope_doc
        elif cluster == "question":
            cluster = qid
        elif not cluster.strip():
            raise InputError("`cluster` must be non-empty", path=path, record=where)
        stratum = _text_field(row, "stratum", path, line, required=False)
        if stratum == "domain":
            if scope_domain is None:
                raise InputError('stratum "domain" needs a scope within one domain', path=path, record=where)
            stratum = scope_domain
        items = row.get("evidence")
        if not isinstance(items, list) or not items:
            raise InputError("`evidence` must be a non-empty list", path=path, record=where)
        evidence = tuple(_evidence(item, documents, scope, path, line, counts) for item in items)
        counts["questions_in_input"] += 1
        if not any(e.located for e in evidence):
            counts["questions_dropped_no_located_evidence"] += 1
            continue
        answer_type = _text_field(row, "answer_type", path, line, required=False, default=NO_TYPE)
        if answer_type not in ANSWER_TYPES + (NO_TYPE,):
            raise InputError(
                f"field `answer_type` must be one of {', '.join(ANSWER_TYPES)}, got {answer_type!r}",
                path=path,
                record=where,
            )
        questions.append(
            Question(
                qid,
                dataset,
                query,
                cluster,
                stratum,
                scope,
                evidence,
                _string_list(row, "answers", path, line),
                _string_list(row, "nuggets", path, line),
                _text_field(row, "reference_answer", path, line, required=False),
                answer_type=answer_type,
            )
        )
    return questions


def _file_option(study: Study, name: str, key: str, value: str | None) -> Path:
    if value is None:
        raise HarnessError(f"dataset `{name}`: option `{key}` must name a JSONL file (relative to the study)")
    return study.resolve(value)


def load(
    study: Study, name: str, cfg: JsonlDataset, selection: dict | None, reader: InputReader
) -> LoadedDataset:
    counts: Counter = Counter(dict.fromkeys(COUNT_KEYS, 0))
    documents = read_documents(_file_option(study, name, "documents", cfg.documents), counts, reader)
    questions = read_questions(
        _file_option(study, name, "questions", cfg.questions), name, documents, counts, reader
    )
    if selection is not None:
        chosen = set(selection["selected"])
        missing = sorted(chosen - {q.cluster for q in questions})
        if missing:
            raise HarnessError(f"dataset `{name}`: selected clusters not in the questions: {missing[:5]}; "
                               "rerun `harness select`")
        counts["questions_dropped_not_selected"] += sum(q.cluster not in chosen for q in questions)
        questions = [q for q in questions if q.cluster in chosen]
    counts["questions"] = len(questions)
    return LoadedDataset(name, cfg.metric_set, tuple(documents.values()), tuple(questions), dict(counts),
                         reader.files)


def paths(cfg: JsonlDataset) -> tuple[str, ...]:
    return tuple(p for p in (cfg.documents, cfg.questions) if p is not None) + exclusion_paths(cfg.selection)


def write_simulated(root: Path, folder: str, corpus: SimulatedCorpus) -> dict[str, str]:
    """documents.jsonl and questions.jsonl under root/folder, each document's body a Markdown file beside
    them."""
    for path, text in corpus.texts.items():
        atomic_write_text(root / folder / path, text)
    atomic_write_jsonl(root / folder / "documents.jsonl", corpus.documents)
    atomic_write_jsonl(root / folder / "questions.jsonl", corpus.questions)
    return {"documents": f"{folder}/documents.jsonl", "questions": f"{folder}/questions.jsonl"}


ADAPTER = Adapter(load=load, select=select_clusters, paths=paths, write_simulated=write_simulated)
