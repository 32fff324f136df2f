"""Builders of the chunking lab's arms (docs/chunking-lab.md): fixed and sentence windows, provisions, QES
DP and greedy.

Each reads its typed arm settings (harness.config.lab). The QES arms are supervised: they see the evidence
spans of the dataset's TRAINING questions only (stratum "train", set by the question_evidence adapter from
the data or a seeded split), per document; `training_record` is what the chunk set's inputs hash covers, so
held-out questions can change neither the chunks nor the hash.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs
from harness.chunking.provisions import provision_chunks
from harness.chunking.qes import qes_dp_chunks, qes_greedy_chunks
from harness.chunking.sentences import fixed_window_chunks, sentence_window_chunks
from harness.config.arm_kinds import ArmKindSpec
from harness.config.fields import Where, build
from harness.data.model import Chunk, Document, Question
from harness.data.question_evidence import SPLITS
from harness.errors import HarnessError

TRAIN = SPLITS[0]


def training_record(arm: str, questions: Sequence[Question]) -> dict[str, list]:
    """doc_id -> the training questions' located evidence spans in it, one list of [start, end] per question.

    Refuses questions without a train / held-out split and a set with no training question, naming the arm."""
    if not questions:
        raise HarnessError(f"arm `{arm}`: a QES arm needs the dataset's questions (training split)")
    unsplit = [q.qid for q in questions if q.stratum not in SPLITS]
    if unsplit:
        raise HarnessError(
            f"arm `{arm}`: QES arms train on a train / held-out split, but question {unsplit[0]} has stratum "
            f"{questions[0].stratum!r}; load the data with `adapter: question_evidence` (split given or "
            "seeded)"
        )
    by_doc: dict[str, list] = {}
    for q in questions:
        if q.stratum != TRAIN:
            continue
        for doc_id in q.scope:
            spans = sorted([e.start, e.end] for e in q.evidence if e.located and e.doc_id == doc_id)
            if spans:
                by_doc.setdefault(doc_id, []).append(spans)
    if not by_doc:
        raise HarnessError(
            f"arm `{arm}`: no training question has located evidence; QES has nothing to learn from"
        )
    return {d: sorted(v) for d, v in sorted(by_doc.items())}


# one document's chunks from the typed settings (`L` a single value) and that document's training spans
# (one tuple of (start, end) per training question; only the QES chunkers read them)


def fixed_chunks(cfg: Any, doc: Document, training: Sequence) -> list[Chunk]:
    return fixed_window_chunks(doc, L=cfg.L, overlap=cfg.overlap)


def sentence_chunks(cfg: Any, doc: Document, training: Sequence) -> list[Chunk]:
    return sentence_window_chunks(doc, L=cfg.L, overlap=cfg.overlap)


def provisions(cfg: Any, doc: Document, training: Sequence) -> list[Chunk]:
    return provision_chunks(doc, L=cfg.L, resolve_refs=cfg.resolve_refs, ref_pattern=cfg.ref_pattern,
                            ref_chars=cfg.ref_chars)


def qes_dp(cfg: Any, doc: Document, training: Sequence) -> list[Chunk]:
    return qes_dp_chunks(doc, training, L=cfg.L, mu=cfg.mu)


def qes_greedy(cfg: Any, doc: Document, training: Sequence) -> list[Chunk]:
    return qes_greedy_chunks(
        doc, training, L=cfg.L, alpha=cfg.alpha, floor=cfg.floor, budget_factor=cfg.budget_factor
    )


def doc_training(training: dict[str, list], doc_id: str) -> list[tuple[tuple[int, int], ...]]:
    return [tuple(tuple(s) for s in q) for q in training.get(doc_id, [])]


def build_lab_arm(kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs) -> ArmChunks:
    training = training_record(inputs.arm or kind.name, inputs.questions) if kind.trains_on_questions else {}
    cfg = inputs.arm_config
    if not isinstance(cfg, kind.settings):  # `harness chunk` passes a plain mapping: fill the defaults in
        cfg = build(kind.settings, {"kind": kind.name, **cfg}, Where(None, ("arms", inputs.arm or kind.name)))
    if isinstance(cfg.L, tuple):
        raise HarnessError(
            f"arm `{inputs.arm}`: `L` is a sweep {list(cfg.L)}; build the expanded arms (<arm>@L<value>)"
        )
    raw = [c for d in inputs.documents for c in builder.lab_chunker(cfg, d, doc_training(training, d.doc_id))]
    extra: dict[str, Any] = {"chunker": kind.name, "L": cfg.L}
    if kind.trains_on_questions:
        extra["training_questions_per_document"] = {d: len(v) for d, v in training.items()}
    return ArmChunks([builder.render(c) for c in raw], extra)
