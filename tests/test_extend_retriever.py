"""docs/extending.md, A retriever type, as a test: a new type that loads a model, added in its two registries
only (its spec and its builder), is configured, registered in the plan and rehearsed: the twin runs its
stand-in, the freeze records the stand-in's identity, the Ray path pre-encodes its vectors, and its cells are
scored, decided and reported (with its embedder's row among the instruments)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from harness.config import retrievers
from harness.config.fields import OneOf, Text, setting
from harness.config.retrievers import RetrieverSchema, RetrieverTypeSpec, StandIn
from harness.errors import HarnessError
from harness.files import read_json
from harness.grid.cells import configured_cells
from harness.pipeline.score import chunk_sets_to_encode
from harness.retrieval import registry
from harness.retrieval.dense import DenseRetriever, Embedder
from harness.retrieval.simulated import HashedEmbedder

from extend_support import DATASET, edit_config, register_test, rehearse, report, scored_cells, starter_study

TYPE, NAME, MODEL = "neural", "neural-1", "acme-encoder"
TEST = "X-neural"


@dataclass(frozen=True)
class Neural(RetrieverSchema):
    model: str = setting(check=Text(non_empty=True))
    backend: str = setting("local", OneOf(("local", "simulated")))


class LocalWeights(Embedder):
    """The real model: never loaded in a rehearsal."""

    def __init__(self, model: str):
        self.model = model

    @property
    def digest(self) -> str:
        raise HarnessError(f"{self.model}: the weights are not on this machine")

    def embed(self, texts):
        raise HarnessError(f"{self.model}: the weights are not on this machine")


class StandInEncoder(HashedEmbedder):
    @property
    def digest(self) -> str:
        return f"stand-in for {self.model}"


def build_neural(name: str, cfg: Neural, context: registry.RetrieverContext) -> DenseRetriever:
    simulated = cfg.backend == "simulated"
    embedder = StandInEncoder(cfg.model, batch_size=8) if simulated else LocalWeights(cfg.model)
    return DenseRetriever(name, embedder, cache_dir=context.cache_dir)


STAND_IN = StandIn(kept=("type", "datasets", "arms", "model"), model="encoder")
SPEC = RetrieverTypeSpec(Neural, loads_model=True, embeds=True, stand_in=STAND_IN)


def test_a_new_retriever_type_with_a_model_runs_on_its_stand_in_to_the_report(tmp_path, monkeypatch):
    monkeypatch.setitem(retrievers.RETRIEVER_TYPES, TYPE, SPEC)
    monkeypatch.setitem(registry.BUILDERS, TYPE, build_neural)
    study = starter_study(tmp_path)
    edit_config(study, lambda config: config["retrievers"].update({NAME: {"type": TYPE, "model": MODEL}}))
    register_test(study, {"id": TEST, "a": "S", "b": "F512c", "retriever": NAME, "dataset": DATASET,
                          "metric": "rec@512t"}, retriever=NAME)

    twin = rehearse(study, tmp_path / "twin")

    config = yaml.safe_load((twin.root / "configs" / "study.yaml").read_text(encoding="utf-8"))
    assert config["retrievers"][NAME] == {"type": TYPE, "model": MODEL, "backend": "simulated"}
    frozen = read_json(twin.root / "frozen_config.json")
    assert frozen["retrieval"]["model_identity"][NAME] == f"stand-in for {MODEL}"
    assert "dense" in frozen["retrieval"]  # the code constants that decide vector run files' bytes
    assert (("S", NAME) in chunk_sets_to_encode(twin, configured_cells(twin)))
    assert {(DATASET, arm, NAME) for arm in ("S", "F512c")} <= scored_cells(twin)
    text = report(twin)
    assert f"| {TEST} | S - F512c | {DATASET} |" in text
    assert f"embedder of {NAME}" in text
