"""Qasper adapter: paper records -> one Markdown Document per paper plus its Questions (docs/design.md,
Data model).

Inputs (dataset options in configs/study.yaml):

    qasper:
      adapter: qasper
      metric_set: qasper
      files: [data/qasper/qasper-dev-v0.3.json, data/qasper/qasper-test-v0.3.json]
      # or, when the network allows:  hub: {name: allenai/qasper, splits: [validation, test]}
      # (read at every load, unpinned; `source:` instead fetches the rows once, pinned, into `files`:
      # harness fetch, harness.sources; both convert with `original_schema`)

Each file may be in either layout, detected per record:
  - the original Qasper schema: one JSON object keyed by paper id, values {title, abstract, full_text:
  [{section_name,
    paragraphs}], qas: [{question, question_id, answers: [{answer: {...}, annotation_id, worker_id}]}]};
  - the Hugging Face export: JSON objects (concatenated, one per line, or a JSON list) with an `id` and
    "dict of lists" fields (full_text: {section_name: [...], paragraphs: [[...]]}, qas: {question: [...], ...,
    answers: [{answer: [...], annotation_id: [...], worker_id: [...]}]}).
Both are converted to the original schema first, then by one function, so they give identical output.

Markdown: "# title", "## Abstract", each section a header one level deeper per " ::: " in its name (top level
"##"; the header text is the last non-empty part of the name), paragraphs verbatim and separated by blank
lines.
Whitespace-only paragraphs are skipped and sections whose name has no text get no header (both counted).

Counts start from the input: every paper and question in the files is converted (so a malformed or empty
question anywhere refuses the load), and `questions_in_input` = kept + the `questions_dropped_<reason>`
counts (unanswerable: every annotation says so; no_evidence: no usable evidence string; not_selected:
eligible, but its paper is not in the selection); `documents_in_input` likewise for papers. Evidence,
paragraph and section counts describe the papers that reach the study.

Each kept question records its answer type, the majority over its annotators' answers with ties broken in
the order extractive, abstractive, yes-no, unanswerable (harness.data.answer_types).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.config.datasets import QasperDataset
from harness.data.answer_types import FROM_EVALUATOR, combined_answer_type
from harness.data.common import Adapter, InputReader, LoadedDataset, TextLocator, check_id, exclusion_paths
from harness.data.hub import HubUnavailable, load_rows
from harness.data.model import Document, Evidence, Question
from harness.data.qasper_gold import reference_from_annotation
from harness.data.sampling import select_clusters
from harness.errors import HarnessError, InputError
from harness.files import canonical_json, sha256_text
from harness.study import Study

SOURCE = "Qasper v0.3 (Dasigi et al., 2021)"
LICENCE = "CC BY 4.0"
SECTION_SEPARATOR = " ::: "
FLOAT_PREFIX = "FLOAT SELECTED"

# reported even when zero, so a reader sees that nothing was dropped rather than nothing was counted
COUNT_KEYS = (
    "questions_dropped_unanswerable",
    "questions_dropped_no_evidence",
    "questions_dropped_not_selected",
    "documents_dropped_not_selected",
    "evidence_float_selected",
    "evidence_section_names",
    "evidence_unlocated",
    "evidence_located_normalised",
    "evidence_in_unanswerable",
    "paragraphs_empty",
    "sections_untitled",
)


@dataclass(frozen=True)
class PaperConversion:
    document: Document
    paragraph_spans: tuple[tuple[int, int], ...]  # every paragraph written (abstract included), in order
    questions: tuple[Question, ...]
    counts: Counter


def doc_id_for(paper_id: str) -> str:
    return f"qasper/{paper_id}"


# --- reading both layouts -------------------------------------------------------------------------


def _field(obj: dict, key: str, kind, path, record):
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(f"missing field `{key}`", path=path, record=record)
    value = obj[key]
    if not isinstance(value, kind):
        want = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InputError(
            f"field `{key}` must be {want}, got {type(value).__name__}", path=path, record=record
        )
    return value


def _unzip(columns: dict, keys: tuple[str, ...], path, record, what: str) -> list[dict]:
    """A "dict of lists" (Hugging Face layout) -> list of dicts, checking the lists have equal lengths."""
    lists = [_field(columns, k, list, path, record) for k in keys]
    lengths = {len(v) for v in lists}
    if len(lengths) > 1:
        raise InputError(f"`{what}` lists have different lengths {sorted(lengths)}", path=path, record=record)
    return [dict(zip(keys, row)) for row in zip(*lists)]


def hf_record_to_original(record: dict, path) -> tuple[str, dict]:
    """One Hugging Face export record -> (paper id, record in the original schema)."""
    paper_id = _field(record, "id", str, path, "?")
    full_text = _unzip(_field(record, "full_text", dict, path, paper_id), ("section_name", "paragraphs"),
                       path, paper_id, "full_text")
    qas_columns = _field(record, "qas", dict, path, paper_id)
    question_keys = tuple(k for k in qas_columns if k != "answers") + ("answers",)
    qas = _unzip(qas_columns, question_keys, path, paper_id, "qas")
    for qa in qas:
        answers = qa["answers"]
        if not isinstance(answers, dict):
            raise InputError(f"qas.answers entries must be objects, got {type(answers).__name__}",
                             path=path, record=paper_id)
        keys = tuple(k for k in ("answer", "annotation_id", "worker_id") if k in answers)
        qa["answers"] = _unzip(answers, keys, path, paper_id, "qas.answers")
    original = {
        "title": _field(record, "title", str, path, paper_id),
        "abstract": _field(record, "abstract", str, path, paper_id),
        "full_text": full_text,
        "qas": qas,
    }
    return paper_id, original


def _json_values(path: Path, reader: InputReader) -> Iterator[Any]:
    """Every top-level JSON value in a file: one object, a list, JSON lines, or concatenated objects."""
    text = reader.read_text(path, what="Qasper file")
    decoder = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON: {e.msg}", path=path, record=f"line {e.lineno}") from None
        yield value


def read_qasper_file(path: str | Path, reader: InputReader | None = None) -> dict[str, dict]:
    """paper id -> record in the original schema, from a file in either layout (insertion order kept).
    Without a reader the read is not recorded (tools and tests; the adapter passes its own)."""
    path = Path(path)
    reader = reader or InputReader(path.parent)
    papers: dict[str, dict] = {}

    def add(paper_id: str, record: dict) -> None:
        if paper_id in papers:
            raise InputError("paper id appears twice", path=path, record=paper_id)
        check_id(doc_id_for(paper_id), "doc_id", path=path, record=f"paper {paper_id!r}")
        papers[paper_id] = record

    for value in _json_values(path, reader):
        records = value if isinstance(value, list) else [value]
        for rec in records:
            if not isinstance(rec, dict):
                raise InputError(f"expected JSON objects, got {type(rec).__name__}", path=path)
            if "id" in rec and "full_text" in rec:  # Hugging Face export
                add(*hf_record_to_original(rec, path))
            else:  # original schema: {paper_id: record}
                for paper_id, record in rec.items():
                    if not isinstance(record, dict):
                        raise InputError("paper record must be an object", path=path, record=paper_id)
                    add(paper_id, record)
    return papers


def read_hub(name: str, splits: list[str], reader: InputReader) -> dict[str, dict]:
    """Records from the hub at load time (network needed), converted like the export files. A pinned copy
    is `source: {files: [{huggingface: ...}]}` instead, written once by `harness fetch` (harness.sources)."""
    papers: dict[str, dict] = {}
    for split in splits:
        try:
            received = load_rows(name, split=split)
        except HubUnavailable as e:
            raise HarnessError(
                f"cannot load {name} split {split} from the hub ({e}); when offline, "
                "download the original Qasper JSON files and list them under `files:` instead"
            ) from None
        reader.record(f"hub:{name}/{split}", sha256_text(canonical_json(received)))
        papers.update(original_schema(received, f"hub:{name}/{split}"))
    return papers


def original_schema(rows: list[dict], origin) -> dict[str, dict]:
    """Hub rows -> {paper id: record in the original schema}, the one conversion `hub:` and `harness fetch`
    share (a paper id given twice is an error naming `origin`)."""
    papers: dict[str, dict] = {}
    for row in rows:
        paper_id, record = hf_record_to_original(row, origin)
        if paper_id in papers:
            raise InputError("paper id appears twice", path=origin, record=paper_id)
        check_id(doc_id_for(paper_id), "doc_id", path=origin, record=f"paper {paper_id!r}")
        papers[paper_id] = record
    return papers


# --- conversion ------------------------------------------------------------------------------------


def _section_header(section_name: str | None) -> str | None:
    """The Markdown header for a section name, or None when the name has no text."""
    if section_name is None:
        return None
    parts = section_name.split(SECTION_SEPARATOR)
    titles = [p.strip() for p in parts if p.strip()]
    if not titles:
        return None
    level = 2 + (len(parts) - 1)
    return "#" * level + " " + titles[-1]


def paper_to_markdown(
    paper_id: str, record: dict, path=None
) -> tuple[str, tuple[tuple[int, int], ...], Counter]:
    """The paper as Markdown, the span of every paragraph written, and counts of what was skipped."""
    counts: Counter = Counter()
    title = _field(record, "title", str, path, paper_id)
    abstract = _field(record, "abstract", str, path, paper_id)
    sections = _field(record, "full_text", list, path, paper_id)
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0

    def emit(block: str, is_paragraph: bool) -> None:
        nonlocal offset
        if pieces:
            pieces.append("\n\n")
            offset += 2
        if is_paragraph:
            spans.append((offset, offset + len(block)))
        pieces.append(block)
        offset += len(block)

    if title.strip():
        emit("# " + title.strip(), False)
    emit("## Abstract", False)
    if abstract.strip():
        emit(abstract, True)
    else:
        counts["paragraphs_empty"] += 1
    for s in sections:
        name = _field(s, "section_name", (str, type(None)), path, paper_id)
        paragraphs = _field(s, "paragraphs", list, path, paper_id)
        counts["sections"] += 1
        header = _section_header(name)
        if header is None:
            counts["sections_untitled"] += 1
        else:
            emit(header, False)
        for p in paragraphs:
            if not isinstance(p, str):
                raise InputError(
                    f"paragraph must be a string, got {type(p).__name__}", path=path, record=paper_id
                )
            counts["paragraphs"] += 1
            if p.strip():
                emit(p, True)
            else:
                counts["paragraphs_empty"] += 1
    return "".join(pieces) + "\n", tuple(spans), counts


def _answer_string(answer: dict) -> str | None:
    """One annotation's answer as a string: extractive spans, else free form, else yes/no."""
    spans = [s for s in answer.get("extractive_spans") or [] if isinstance(s, str) and s.strip()]
    if spans:
        return ", ".join(spans)
    free = answer.get("free_form_answer") or ""
    if free.strip():
        return free
    if answer.get("yes_no") is True:
        return "Yes"
    if answer.get("yes_no") is False:
        return "No"
    return None


def _question(qa: dict, doc_id: str, dataset: str, locator: TextLocator, preferred: dict, counts: Counter,
              path, paper_id: str) -> Question | None:
    qid = check_id(_field(qa, "question_id", str, path, paper_id), "qid", path=path, record=paper_id)
    where = f"{paper_id} question {qid}"
    query = _field(qa, "question", str, path, where)
    if not query.strip():
        raise InputError("field `question` is empty", path=path, record=where)
    annotations = _field(qa, "answers", list, path, where)
    counts["questions_in_input"] += 1
    evidence_order: list[str] = []
    annotators: dict[str, list[int]] = {}
    answers: list[str] = []
    gold: list[tuple[str, str]] = []  # per annotator, unanswerable included (the evaluator's references)
    for index, annotation in enumerate(annotations):
        answer = _field(annotation, "answer", dict, path, where)
        counts["annotations_total"] += 1
        reference = reference_from_annotation(answer)
        if reference is not None:
            gold.append((reference.answer, reference.answer_type))
        strings = _field(answer, "evidence", list, path, where)
        if answer.get("unanswerable"):
            counts["annotations_unanswerable"] += 1
            counts["evidence_in_unanswerable"] += len(strings)
            continue
        text = _answer_string(answer)
        if text is None:
            counts["annotations_without_answer"] += 1
        elif text not in answers:
            answers.append(text)
        for ev in strings:
            if not isinstance(ev, str):
                raise InputError(
                    f"evidence must be strings, got {type(ev).__name__}", path=path, record=where
                )
            counts["evidence_strings_total"] += 1
            if ev.startswith(FLOAT_PREFIX):
                counts["evidence_float_selected"] += 1
                continue
            if SECTION_SEPARATOR in ev:
                counts["evidence_section_names"] += 1
                continue
            if not ev.strip():
                counts["evidence_empty"] += 1
                continue
            if ev not in annotators:
                evidence_order.append(ev)
                annotators[ev] = []
            if index not in annotators[ev]:
                annotators[ev].append(index)
    if not evidence_order:
        unanswerable = bool(annotations) and all_unanswerable(annotations)
        counts["questions_dropped_unanswerable" if unanswerable else "questions_dropped_no_evidence"] += 1
        return None
    evidence = []
    for ev in evidence_order:
        start, end, how = locator.locate(ev, preferred)
        counts["evidence_unique"] += 1
        counts[{"verbatim": "evidence_located_verbatim", "normalised": "evidence_located_normalised",
                None: "evidence_unlocated"}[how]] += 1
        evidence.append(Evidence(doc_id, ev, start, end, tuple(annotators[ev])))
    counts["answers"] += len(answers)
    # every annotator with a usable answer votes, unanswerable ones included (harness.data.answer_types)
    answer_type = combined_answer_type(FROM_EVALUATOR[t] for _, t in gold)
    return Question(qid=qid, dataset=dataset, query=query, cluster=doc_id, stratum="", scope=(doc_id,),
                    evidence=tuple(evidence), answers=tuple(answers), gold_answers=tuple(gold),
                    answer_type=answer_type)


def all_unanswerable(annotations: list) -> bool:
    """Every annotation marks the question unanswerable."""
    return all(a["answer"].get("unanswerable") for a in annotations)


def convert_paper(paper_id: str, record: dict, *, dataset: str = "qasper", path=None) -> PaperConversion:
    text, spans, counts = paper_to_markdown(paper_id, record, path)
    doc_id = doc_id_for(paper_id)
    document = Document(doc_id, "qasper", text, {"source": SOURCE, "paper_id": paper_id, "licence": LICENCE})
    locator = TextLocator(text)
    preferred: dict[str, tuple[int, int]] = {}
    for start, end in spans:
        preferred.setdefault(text[start:end], (start, end))
    questions = []
    for qa in _field(record, "qas", list, path, paper_id):
        q = _question(qa, doc_id, dataset, locator, preferred, counts, path, paper_id)
        if q is not None:
            questions.append(q)
    counts["papers"] += 1
    return PaperConversion(document, spans, tuple(questions), counts)


# --- the adapter -----------------------------------------------------------------------------------


def configured_files(cfg: QasperDataset) -> tuple[str, ...]:
    return (cfg.files,) if isinstance(cfg.files, str) else cfg.files or ()


def read_papers(study: Study, name: str, cfg: QasperDataset,
                reader: InputReader) -> tuple[dict[str, dict], dict[str, str]]:
    """paper id -> record, and paper id -> the file it came from (for error messages)."""
    hub = cfg.hub
    if bool(cfg.files) == bool(hub):
        raise HarnessError(f"dataset `{name}`: give exactly one of `files` (local Qasper JSON) or `hub`")
    papers: dict[str, dict] = {}
    origin: dict[str, str] = {}
    if hub:
        papers = read_hub(hub.name, list(hub.splits), reader)
        return papers, {pid: f"hub:{hub.name}" for pid in papers}
    for f in configured_files(cfg):
        path = study.resolve(f)
        for paper_id, record in read_qasper_file(path, reader).items():
            if paper_id in papers:
                raise InputError(f"paper id also appears in {origin[paper_id]}", path=path, record=paper_id)
            papers[paper_id] = record
            origin[paper_id] = str(path)
    return papers, origin


def load(
    study: Study, name: str, cfg: QasperDataset, selection: dict | None, reader: InputReader
) -> LoadedDataset:
    papers, origin = read_papers(study, name, cfg, reader)
    chosen = set(papers) if selection is None else {s.removeprefix("qasper/") for s in selection["selected"]}
    missing = sorted(chosen - set(papers))
    if missing:
        raise HarnessError(f"dataset `{name}`: selected papers not in the input files: {missing[:5]}")
    counts: Counter = Counter(dict.fromkeys(COUNT_KEYS, 0))
    documents, questions = [], []
    # every paper is converted, so drops are counted from the files, not from the selection
    for paper_id in sorted(papers):
        conversion = convert_paper(paper_id, papers[paper_id], dataset=name, path=origin[paper_id])
        counts["documents_in_input"] += 1
        if paper_id in chosen:
            counts.update(conversion.counts)
            documents.append(conversion.document)
            questions.extend(conversion.questions)
        else:
            counts["documents_dropped_not_selected"] += 1
            for key in QUESTION_FATES:
                counts[key] += conversion.counts[key]
            counts["questions_dropped_not_selected"] += len(conversion.questions)
    return LoadedDataset(name, cfg.metric_set, tuple(documents), tuple(questions), dict(counts),
                         reader.files)


QUESTION_FATES = ("questions_in_input", "questions_dropped_unanswerable", "questions_dropped_no_evidence")


def select(study: Study, name: str, cfg: QasperDataset, everything: Callable[[], LoadedDataset]) -> dict:
    """A seeded sample of paper ids, as the published procedure draws them (not doc ids)."""
    return select_clusters(study, name, cfg, everything, unit="paper", prefix=doc_id_for(""))


def paths(cfg: QasperDataset) -> tuple[str, ...]:
    return configured_files(cfg) + exclusion_paths(cfg.selection)


ADAPTER = Adapter(load=load, select=select, paths=paths)
