"""Load a study's dataset by name through its adapter, optionally restricted to the recorded selection.

    load_dataset(study, "qasper", selection=read_selection(study)) -> LoadedDataset

Adapters (harness.data.adapters) read their typed `datasets:` entry and every file through the InputReader
they are given; each returns documents, questions, counts and the files it read, and this module applies the
rules shared by all: a dataset must name its input files, documents no kept question searches are dropped and
counted
("documents_dropped_unscoped"), ids are checked unique, scopes and located evidence must name loaded documents
(unlocated evidence may name a file that could not be read), the counts must add up (`<x>_in_input` = kept +
every `<x>_dropped_<reason>`, for questions always and for documents when the adapter counts them), and the
output is sorted (documents by doc_id, questions by qid).

A dataset with `retrieval_scope: pooled` (Qasper and JSONL adapters) has every question search one index
over all its selected documents (the union of the kept questions' recorded scopes) instead of its own
scope; gold, clusters and strata are unchanged, and `documents_pooled` counts the pool.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from dataclasses import replace

from harness.config.datasets import POOLED_SCOPE, DatasetConfig
from harness.config.fields import to_plain
from harness.data.adapters import ADAPTERS
from harness.data.common import InputReader, LoadedDataset, id_problem
from harness.errors import HarnessError, InputError
from harness.files import canonical_json, read_json
from harness.study import Study

__all__ = ["LoadedDataset", "load_dataset", "loss_summary", "read_selection"]

# counts of records dropped, not found, emptied or changed on the way in (besides every `*_dropped_*`)
LOSS_COUNTS = (
    "evidence_unlocated",
    "evidence_span_text_mismatch",
    "evidence_float_selected",
    "evidence_section_names",
    "documents_empty",
    "paragraphs_empty",
    "documents_crlf_normalised",
    "texts_bom_stripped",
)


def lost_counts(counts: dict[str, int]) -> dict[str, int]:
    """The nonzero drop, loss or change counts of a dataset, by key."""
    return {k: v for k, v in sorted(counts.items())
            if v and ("_dropped_" in k or k.startswith("gold_") or k in LOSS_COUNTS)}


def loss_summary(name: str, counts: dict[str, int]) -> str:
    """One line naming every nonzero drop, loss or change count of a dataset (select, freeze and
    build-arms print it), by its key in the dataset's counts."""
    lost = lost_counts(counts)
    if not lost:
        return f"{name}: nothing dropped or changed on loading ({counts.get('questions', 0)} questions kept)"
    return (f"{name}: dropped or changed on loading ({counts.get('questions', 0)} questions kept): "
            + ", ".join(f"{k} {v}" for k, v in lost.items()))


def _dataset_config(study: Study, name: str) -> DatasetConfig:
    """The dataset's typed `datasets:` entry."""
    datasets = study.config.datasets
    if name not in datasets:
        raise HarnessError(f"{study.config_path}: no dataset `{name}` (have: {', '.join(sorted(datasets))})")
    return datasets[name]


def read_selection(study: Study) -> dict | None:
    """selection/selection.json, or None when `harness select` has not run."""
    if not study.selection_path.is_file():
        return None
    return read_json(study.selection_path)


def load_dataset(study: Study, name: str, *, selection: dict | None) -> LoadedDataset:
    """`selection` is the whole selection.json object (or None for every eligible record).

    Loaded once per command: the freeze check and the stage share the load (Study.loaded_datasets), so a
    stage works on exactly the data the check hashed."""
    key = (name, canonical_json(selection))
    if key not in study.loaded_datasets:
        study.loaded_datasets[key] = _load_dataset(study, name, selection)
    return study.loaded_datasets[key]


def _load_dataset(study: Study, name: str, selection: dict | None) -> LoadedDataset:
    cfg = _dataset_config(study, name)
    entry = None
    if selection is not None:
        entry = selection.get("datasets", {}).get(name)
        if entry is None:
            raise HarnessError(
                f"{study.selection_path}: no selection for dataset `{name}`; rerun `harness select`"
            )
        if entry.get("adapter") != cfg.adapter:
            raise HarnessError(f"{study.selection_path}: dataset `{name}` was selected with adapter "
                               f"{entry.get('adapter')!r} but is configured with {cfg.adapter!r}; "
                               "rerun `harness select`")
    reader = InputReader(study.root)
    with fetch_hint(study, name, cfg):
        raw = ADAPTERS[cfg.adapter].load(study, name, cfg, entry, reader)
    if reader.bom_stripped:  # only when nonzero: a study without one keeps its frozen counts
        raw = replace(raw, counts={**raw.counts, "texts_bom_stripped": len(reader.bom_stripped)})
    if getattr(cfg, "retrieval_scope", None) == POOLED_SCOPE:  # the adapters whose entry has the setting
        raw = pooled(raw)
    return finish(raw)


@contextlib.contextmanager
def fetch_hint(study: Study, name: str, cfg: DatasetConfig) -> Iterator[None]:
    """A missing input of a dataset that declares its `source:` is one `harness fetch` writes: say so."""
    try:
        yield
    except InputError as e:
        if e.path is None or Path(e.path).exists() or not _declares_source(to_plain(cfg)):
            raise
        raise InputError(f"file not found; dataset `{name}` declares where it comes from (`source:`): "
                         f"run `make data` (`harness fetch --study {study.root}`)", path=e.path) from None


def _declares_source(entry: object) -> bool:
    """Whether a dataset entry (or one of its domains) has a `source:` block."""
    if isinstance(entry, dict):
        return entry.get("source") is not None or any(_declares_source(v) for v in entry.values())
    if isinstance(entry, list):
        return any(_declares_source(v) for v in entry)
    return False


def pooled(raw: LoadedDataset) -> LoadedDataset:
    """Every question searches the union of the kept questions' scopes (sorted doc_ids): the selected
    documents in one index. Documents no kept question searched stay out, as without pooling."""
    pool = tuple(sorted({d for q in raw.questions for d in q.scope}))
    questions = tuple(replace(q, scope=pool) for q in raw.questions)
    return replace(raw, questions=questions, counts={**raw.counts, "documents_pooled": len(pool)})


def finish(raw: LoadedDataset) -> LoadedDataset:
    if not raw.input_files:
        raise HarnessError(
            f"dataset `{raw.name}`: the adapter recorded no input files; it must read every file "
            "through its InputReader and return `reader.files` (the freeze hashes them)"
        )
    counts = Counter(raw.counts)
    for what, ids in (("doc_id", (d.doc_id for d in raw.documents)), ("qid", (q.qid for q in raw.questions))):
        for value in ids:
            if id_problem(value) is not None:  # each adapter checks its ids where it reads them (check_id)
                raise HarnessError(
                    f"dataset `{raw.name}`: {what} {value!r} {id_problem(value)}; the adapter must "
                    "refuse it where it reads it, naming the file and line (check_id)"
                )
    doc_ids = [d.doc_id for d in raw.documents]
    if len(set(doc_ids)) != len(doc_ids):
        raise HarnessError(f"dataset `{raw.name}`: duplicate doc_id {_first_duplicate(doc_ids)!r}")
    qids = [q.qid for q in raw.questions]
    if len(set(qids)) != len(qids):
        raise HarnessError(f"dataset `{raw.name}`: duplicate qid {_first_duplicate(qids)!r}")
    known = set(doc_ids)
    scoped: set[str] = set()
    for q in raw.questions:
        missing = [d for d in list(q.scope) + [e.doc_id for e in q.evidence if e.located] if d not in known]
        if missing:
            raise HarnessError(f"dataset `{raw.name}`: question {q.qid} names doc_id {missing[0]!r}, "
                               "which was not loaded")
        scoped.update(q.scope)
    documents = sorted((d for d in raw.documents if d.doc_id in scoped), key=lambda d: d.doc_id)
    counts["documents_dropped_unscoped"] += len(raw.documents) - len(documents)
    counts["documents"] = len(documents)
    # over every loaded document: an empty body drops its questions (no evidence) and then the document
    # (unscoped); counting only the kept ones would hide it
    counts["documents_empty"] = sum(1 for d in raw.documents if not d.text.strip())
    counts["questions"] = len(raw.questions)
    check_accounting(raw.name, counts, "questions", required=True)
    check_accounting(raw.name, counts, "documents", required=False)
    questions = tuple(sorted(raw.questions, key=lambda q: q.qid))
    return LoadedDataset(raw.name, raw.metric_set, tuple(documents), questions, dict(sorted(counts.items())),
                         raw.input_files)


def check_accounting(name: str, counts: Counter, noun: str, *, required: bool) -> None:
    """`<noun>_in_input` must equal the kept `<noun>` plus every `<noun>_dropped_<reason>`: a record that
    does not reach the study is counted with its reason, never lost."""
    total = counts.get(f"{noun}_in_input")
    if total is None:
        if required:
            raise HarnessError(f"dataset `{name}`: the adapter does not count `{noun}_in_input`")
        return
    dropped = {k: v for k, v in counts.items() if k.startswith(f"{noun}_dropped_") and v}
    if total != counts[noun] + sum(dropped.values()):
        raise HarnessError(
            f"dataset `{name}`: {noun} do not add up: {total} in the input, {counts[noun]} kept, "
            f"dropped {dict(sorted(dropped.items()))}; the adapter lost a record uncounted"
        )


def _first_duplicate(values: list[str]) -> str:
    seen = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return ""
