"""The lab's question-evidence adapter (docs/chunking-lab.md): a Markdown text plus a JSON list of
{question, evidence: [exact strings], split}.

Each evidence string is located verbatim (its first occurrence) as a character span; a string that is
not in the text is an error naming it. Questions get ids q001, q002, ... in file order.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.config.datasets import QuestionEvidenceDataset
from harness.data.common import Adapter, InputReader, LoadedDataset, check_id, exclusion_paths
from harness.data.model import Document, Evidence, Question
from harness.data.sampling import select_clusters
from harness.errors import HarnessError, InputError
from harness.seeded_draw import seeded_sample
from harness.study import Study

SPLITS = ("train", "held-out")


@dataclass(frozen=True)
class LabQuestion:
    question: Question
    split: str  # "train" or "held-out"

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return tuple((e.start, e.end) for e in self.question.evidence)


def lab_questions(text: str, items: Any, *, doc_id: str, path: str | None = None) -> list[LabQuestion]:
    """Located questions from the parsed JSON list; errors name the file, the record and the bad value."""
    if not isinstance(items, list):
        raise InputError(f"expected a JSON list of question records, got {type(items).__name__}", path=path)
    out: list[LabQuestion] = []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(f"a record must be an object, got {item!r}", path=path, record=k)
        query, evidence, split = item.get("question"), item.get("evidence"), item.get("split")
        if not isinstance(query, str) or not query.strip():
            raise InputError(f"'question' must be a non-empty string, got {query!r}", path=path, record=k)
        if (
            not isinstance(evidence, list)
            or not evidence
            or not all(isinstance(e, str) and e for e in evidence)
        ):
            raise InputError(
                f"'evidence' must be a non-empty list of non-empty strings, got {evidence!r}",
                path=path,
                record=k,
            )
        if split not in SPLITS:
            raise InputError(
                f"'split' must be one of {', '.join(SPLITS)}, got {split!r}", path=path, record=k
            )
        located = []
        for e in evidence:
            start = text.find(e)
            if start < 0:
                raise InputError(f"evidence string not found in the document: {e!r}", path=path, record=k)
            located.append(Evidence(doc_id, e, start, start + len(e)))
        qid = f"q{k + 1:03d}"
        question = Question(qid, "lab", query, qid, split, (doc_id,), tuple(located))
        out.append(LabQuestion(question, split))
    return out


def read_lab_questions(text: str, qe_path: str, *, doc_id: str) -> list[LabQuestion]:
    try:
        with open(qe_path, encoding="utf-8") as f:
            items = json.load(f)
    except FileNotFoundError:
        raise InputError("file not found", path=qe_path) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON (line {e.lineno}): {e.msg}", path=qe_path) from None
    return lab_questions(text, items, doc_id=doc_id, path=qe_path)


# --- the study adapter (`adapter: question_evidence`, harness.data.load) ---


def seeded_split(qids: list[str], seed: int, held_out: float) -> dict[str, str]:
    """qid -> split: round(held_out x n) questions drawn with `seed` are held out (at least one is trained on
    unless held_out is 1)."""
    n_held = min(len(qids), round(held_out * len(qids)))
    chosen = set(seeded_sample(qids, n_held, seed))
    return {q: ("held-out" if q in chosen else "train") for q in qids}


def load(study: Study, name: str, cfg: QuestionEvidenceDataset, selection: dict | None,
         reader: InputReader) -> LoadedDataset:
    """The document and its questions; stratum = split ("train" / "held-out"), cluster = the question."""
    doc_path, qe_path = study.resolve(cfg.document), study.resolve(cfg.questions)
    text, crlf = reader.read_markdown(doc_path)
    doc_id = check_id(
        f"{name}/{Path(cfg.document).name}",
        "doc_id (the dataset and the document's file name)",
        path=doc_path,
    )
    try:
        items = json.loads(reader.read_text(qe_path, what="question-evidence JSON file"))
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON (line {e.lineno}): {e.msg}", path=qe_path) from None
    split = cfg.split
    if split is not None and isinstance(items, list):
        # the seeded split replaces each record's own: records may leave `split` out
        items = [dict(item, split="train") if isinstance(item, dict) else item for item in items]
    located = lab_questions(text, items, doc_id=doc_id, path=reader.display_path(qe_path))
    questions = [lq.question for lq in located]
    if split is not None:
        splits = seeded_split([q.qid for q in questions], split.seed, split.held_out)
        questions = [replace(q, stratum=splits[q.qid]) for q in questions]
    questions = [replace(q, dataset=name) for q in questions]
    counts: Counter = Counter(questions_in_input=len(questions), questions_dropped_not_selected=0,
                              documents_in_input=1, documents_crlf_normalised=int(crlf))
    if selection is not None:
        chosen = set(selection["selected"])
        missing = sorted(chosen - {q.cluster for q in questions})
        if missing:
            raise HarnessError(
                f"dataset `{name}`: selected questions not in {qe_path}: {missing[:5]}; rerun `harness "
                "select`"
            )
        counts["questions_dropped_not_selected"] = sum(q.cluster not in chosen for q in questions)
        questions = [q for q in questions if q.cluster in chosen]
    for s in SPLITS:
        counts[f"questions_{s.replace('-', '_')}"] = sum(q.stratum == s for q in questions)
    counts["questions"] = len(questions)
    document = Document(doc_id, name, text, {"source": reader.display_path(doc_path)})
    return LoadedDataset(name, cfg.metric_set, (document,), tuple(questions), dict(counts), reader.files)


def paths(cfg: QuestionEvidenceDataset) -> tuple[str, ...]:
    return (cfg.document, cfg.questions) + exclusion_paths(cfg.selection)


def strata(cfg: QuestionEvidenceDataset) -> tuple[str, ...]:
    return SPLITS  # the stratum of a question is its split


ADAPTER = Adapter(load=load, select=select_clusters, paths=paths, strata=strata)
