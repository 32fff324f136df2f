"""`datasets:` one entry per dataset, its schema chosen by `adapter:` (docs/design.md, Data model).

This is the declared half of the dataset adapters: their names (DATASET_SCHEMAS) and the retrieval scopes a
dataset may name (its metric set is one of harness.config.metric_sets). Each adapter (harness.data.adapters)
reads its typed entry, defaults filled, and trusts what is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.fields import (
    Either, Int, ListOf, MapOf, Number, OneOf, Optional, Nested, Text, Variants, Where, setting,
)
from harness.config.metric_sets import EVIDENCE_STRINGS, MetricSetName
from harness.config.names import NAME
from harness.config.sources import FreshStackSources, JsonlSources, QasperSources, check_targets

# `retrieval_scope`: `document` keeps the scope each question records (Qasper: its own paper; JSONL: its
# `scope` field), `pooled` searches every selected document of the dataset in one index
# (harness.data.load.pooled). Unset means `document`, so a config without it is unchanged.
DOCUMENT_SCOPE, POOLED_SCOPE = "document", "pooled"
RETRIEVAL_SCOPES = (DOCUMENT_SCOPE, POOLED_SCOPE)
ALL = "all"
_COUNT = Either((OneOf((ALL,)), Int(1)))
_EXCLUDE = Either((Text(non_empty=True), ListOf(Either((Text(), Int())))))  # a file of ids, or the ids
_PATH = Text(non_empty=True)
_SCOPE = Optional(OneOf(RETRIEVAL_SCOPES))


@dataclass(frozen=True)
class ClusterSelection:
    """qasper / jsonl: a seeded sample of clusters (papers)."""

    seed: int = setting(check=Int())
    n_clusters: int | str = setting(ALL, _COUNT)
    exclude: str | tuple = setting((), _EXCLUDE)


@dataclass(frozen=True)
class QuestionSelection:
    """freshstack: a seeded sample of questions per domain (one count, or one per domain)."""

    seed: int = setting(check=Int())
    n_questions: int | str | dict = setting(ALL, Either((_COUNT, MapOf(_COUNT))))
    exclude: str | tuple = setting((), _EXCLUDE)


@dataclass(frozen=True)
class QasperHub:
    name: str = setting(check=Text(non_empty=True))
    splits: tuple[str, ...] = setting(("validation", "test"), ListOf(Text(non_empty=True), min_len=1))


@dataclass(frozen=True)
class QasperDataset:
    adapter: str = setting(check=OneOf(("qasper",)))
    metric_set: str = setting(check=MetricSetName())
    files: str | tuple[str, ...] | None = setting(None, Optional(Either((_PATH, ListOf(_PATH, min_len=1)))))
    hub: QasperHub | None = setting(None, Optional(Nested(QasperHub)))  # instead of `files`, when online
    selection: ClusterSelection | None = setting(None, Optional(Nested(ClusterSelection)))
    retrieval_scope: str | None = setting(None, _SCOPE)
    source: QasperSources | None = setting(None, Optional(Nested(QasperSources)))  # for `harness fetch`

    def completed(self, where: Where) -> "QasperDataset":
        if self.source is not None:
            check_targets(self, self.source, where)
        return self


@dataclass(frozen=True)
class FreshStackDomain:
    queries: str | None = setting(None, Optional(_PATH))
    corpus: str | None = setting(None, Optional(_PATH))
    qrels: str | None = setting(
        None, Optional(_PATH)
    )  # without it, the nuggets' relevant_corpus_ids are gold
    checkout: str | None = setting(None, Optional(_PATH))  # the docs repository at `commit`
    commit: str | int = setting("", Either((Text(), Int())))  # YAML reads an all-digit hash as an int
    corpus_path_prefix: str = setting("", Text())
    distractor_ratio: float | str = setting(
        1, Either((OneOf(("full",)), Number(0)))
    )  # distractors per gold file
    licence: str = setting("", Text())
    # for `harness fetch`
    source: FreshStackSources | None = setting(None, Optional(Nested(FreshStackSources)))

    def completed(self, where: Where) -> "FreshStackDomain":
        if self.source is None:
            return self
        check_targets(self, self.source, where)
        git = self.source.checkout.git if self.source.checkout is not None else None
        pinned, wanted = str(self.commit), str(git.commit) if git is not None else ""
        if git is not None and pinned and not (pinned.startswith(wanted) or wanted.startswith(pinned)):
            raise where.child("source").child("checkout").child("git").child("commit").fail(
                f"is {wanted}, but the domain's `commit` is {pinned}: they must name the same commit")
        return self


@dataclass(frozen=True)
class FreshStackDataset:
    adapter: str = setting(check=OneOf(("freshstack",)))
    metric_set: str = setting(check=MetricSetName())
    domains: dict[str, FreshStackDomain] = setting(
        check=MapOf(Nested(FreshStackDomain), non_empty=True, name=NAME))
    selection: QuestionSelection | None = setting(None, Optional(Nested(QuestionSelection)))


@dataclass(frozen=True)
class JsonlDataset:
    adapter: str = setting(check=OneOf(("jsonl",)))
    metric_set: str = setting(check=MetricSetName())
    documents: str | None = setting(None, Optional(_PATH))  # documents.jsonl
    questions: str | None = setting(None, Optional(_PATH))  # questions.jsonl
    selection: ClusterSelection | None = setting(None, Optional(Nested(ClusterSelection)))
    retrieval_scope: str | None = setting(None, _SCOPE)
    source: JsonlSources | None = setting(None, Optional(Nested(JsonlSources)))  # for `harness fetch`

    def completed(self, where: Where) -> "JsonlDataset":
        if self.source is not None:
            check_targets(self, self.source, where)
        return self


@dataclass(frozen=True)
class SeededSplit:
    """question_evidence: draw the held-out questions with a seed instead of reading each record's `split`."""

    seed: int = setting(check=Int())
    held_out: float = setting(check=Number(0, 1, above=True))  # share of the questions held out


@dataclass(frozen=True)
class QuestionEvidenceDataset:
    """One Markdown document plus a JSON list of {question, evidence: [exact strings], split} (the lab's
    format)."""

    adapter: str = setting(check=OneOf(("question_evidence",)))
    metric_set: str = setting(check=MetricSetName(EVIDENCE_STRINGS))  # the Qasper-like metrics
    document: str = setting(check=_PATH)  # the Markdown file
    questions: str = setting(check=_PATH)  # the JSON list
    split: SeededSplit | None = setting(None, Optional(Nested(SeededSplit)))  # None: each record's `split`
    # cluster = question
    selection: ClusterSelection | None = setting(None, Optional(Nested(ClusterSelection)))


DATASET_SCHEMAS: dict[str, type] = {
    "qasper": QasperDataset,
    "freshstack": FreshStackDataset,
    "jsonl": JsonlDataset,
    "question_evidence": QuestionEvidenceDataset,
}
DATASET = Variants(
    "adapter",
    lambda raw: DATASET_SCHEMAS.get(raw.get("adapter")) if isinstance(raw.get("adapter"), str) else None,
    tuple(DATASET_SCHEMAS),
)
DatasetConfig = QasperDataset | FreshStackDataset | JsonlDataset | QuestionEvidenceDataset
