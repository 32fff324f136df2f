"""docs/extending.md, A dataset adapter, as a test: a new format (one JSON bundle of documents and questions)
added in its two registries only (its schema, and its adapter in the list) is configured, registered and
rehearsed: the twin writes its simulated data in the bundle format, which the adapter loads, and the
dataset's cells are scored, decided and reported."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.config import datasets
from harness.config.datasets import ClusterSelection
from harness.config.fields import OneOf, Optional, Nested, Text, setting
from harness.config.metric_sets import MetricSetName
from harness.data import adapters
from harness.data.common import Adapter, LoadedDataset, SimulatedCorpus, exclusion_paths
from harness.data.model import Document, Evidence, Question
from harness.data.sampling import select_clusters
from harness.files import atomic_write_json, atomic_write_text

from extend_support import edit_config, edit_yaml, rehearse, report, scored_cells, starter_study

ADAPTER, NAME = "bundle", "bundled"


@dataclass(frozen=True)
class BundleDataset:
    adapter: str = setting(check=OneOf((ADAPTER,)))
    metric_set: str = setting(check=MetricSetName())
    bundle: str = setting(check=Text(non_empty=True))  # {"documents": [...], "questions": [...]}
    selection: ClusterSelection | None = setting(None, Optional(Nested(ClusterSelection)))


def load(study, name, cfg, selection, reader) -> LoadedDataset:
    raw = json.loads(reader.read_text(study.resolve(cfg.bundle)))
    documents = {d["id"]: Document(d["id"], d["domain"], d["text"]) for d in raw["documents"]}
    questions = [Question(q["id"], name, q["query"], q["doc"], "", (q["doc"],),
                          tuple(Evidence(q["doc"], documents[q["doc"]].text[a:b], a, b)
                                for a, b in q["spans"]))
                 for q in raw["questions"]]
    counts = {"questions_in_input": len(questions), "questions_dropped_not_selected": 0}
    if selection is not None:
        kept = [q for q in questions if q.cluster in set(selection["selected"])]
        counts["questions_dropped_not_selected"] = len(questions) - len(kept)
        questions = kept
    counts["questions"] = len(questions)
    return LoadedDataset(name, cfg.metric_set, tuple(sorted(documents.values(), key=lambda d: d.doc_id)),
                         tuple(sorted(questions, key=lambda q: q.qid)), counts, reader.files)


def write_simulated(root: Path, folder: str, corpus: SimulatedCorpus) -> dict[str, str]:
    bundle = {"documents": [{"id": d["doc_id"], "domain": d["domain"], "text": corpus.texts[d["path"]]}
                            for d in corpus.documents],
              "questions": [{"id": q["qid"], "query": q["query"], "doc": q["scope"]["doc"],
                             "spans": [[e["start"], e["end"]] for e in q["evidence"]]}
                            for q in corpus.questions]}
    atomic_write_json(root / folder / "bundle.json", bundle)
    return {"bundle": f"{folder}/bundle.json"}


def paths(cfg: BundleDataset) -> tuple[str, ...]:
    return (cfg.bundle,) + exclusion_paths(cfg.selection)


BUNDLE = Adapter(load=load, select=select_clusters, paths=paths, write_simulated=write_simulated)


def test_a_new_dataset_adapter_runs_from_config_and_plan_to_the_report(tmp_path, monkeypatch):
    monkeypatch.setitem(datasets.DATASET_SCHEMAS, ADAPTER, BundleDataset)
    monkeypatch.setitem(adapters.ADAPTERS, ADAPTER, BUNDLE)
    study = starter_study(tmp_path)
    text = "# A note\n\nThe harbour keeps its amber records in room 101.\n"
    atomic_write_text(study / "data" / "bundle.json", json.dumps({
        "documents": [{"id": "note", "domain": "notes", "text": text}],
        "questions": [{"id": "b1", "query": "Where are the amber records?", "doc": "note",
                       "spans": [[12, 59]]}]}))
    edit_config(study, lambda config: config["datasets"].update({NAME: {
        "adapter": ADAPTER, "metric_set": "qasper", "bundle": "data/bundle.json",
        "selection": {"seed": 1, "n_clusters": "all", "exclude": []}}}))

    def register(plan: dict) -> None:
        plan["datasets"][NAME] = plan["datasets"]["corpus"] | {"cluster": "paper"}
        plan["families"][0]["tests"].append({"id": "X-bundled", "a": "S", "b": "F512c", "retriever": "hybrid",
                                             "dataset": NAME, "metric": "rec@512t"})

    edit_yaml(study / "plan" / "plan.yaml", register)

    twin = rehearse(study, tmp_path / "twin")

    assert (twin.root / "data" / NAME / "bundle.json").is_file()
    assert {(NAME, arm, "hybrid") for arm in ("S", "F512c")} <= scored_cells(twin)
    assert "| X-bundled | S - F512c | bundled |" in report(twin)
