"""The add-on builders through the registry: M, RM and SM make the same merges per document or record the
shortfall, RM is deterministic per seed, and M-TP counts its mapping outcomes through a scripted backend."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from arms_support import e_chunk, sized
from llm_study import make_study

from harness.arms import llm_session
from harness.arms.merge import merged_fragment_ids
from harness.arms.builder import BuildInputs
from harness.arms.registry import build_chunks
from harness.config.arm_kinds import get_kind
from harness.config.arms import DerivedArm
from harness.errors import HarnessError
from harness.llm.base import Backend, Completion


def _source():
    """Two documents: `a` merges freely; in `b` M joins two 1,400-character chunks across a 2,000-character
    one, which no adjacent pair can match under the cap (a shortfall of one for RM and SM)."""
    a = [sized(i, 100, k, doc_id="d/a.md") for i, k in enumerate(["x", "y", "x", "z", "y", "x", "", "z"])]
    b = [
        sized(0, 1400, "p", doc_id="d/b.md"),
        sized(1, 2000, "q", doc_id="d/b.md"),
        sized(2, 1400, "p", doc_id="d/b.md"),
    ]
    return a + b


def _build(kind: str, source, *, study=None, embed_chunks=None, **cfg):
    arm_cfg = DerivedArm(kind=kind, of="E", **cfg)
    return build_chunks(get_kind(kind), BuildInputs((), None, dict, study=study, arm=kind, arm_config=arm_cfg,
                                                    source="E", read_arm=lambda of: list(source),
                                                    embed_chunks=embed_chunks))


def _fake_embed(retriever, chunks):
    """SM's embeddings without a model: a hand-made vector per chunk text's first letter."""
    assert retriever == "dense"
    return np.array([[1.0, (ord(c.text[0]) % 3) / 2, 0.1] for c in chunks])


@pytest.fixture
def fake_embeddings():
    """A study with one dense retriever, `dense`, of the model `mini`."""
    dense = SimpleNamespace(type="dense", model="mini")
    return SimpleNamespace(retrievers={"dense": dense}, config_path="study.yaml")


def test_m_rm_and_sm_make_the_same_merges_per_document_or_record_the_shortfall(fake_embeddings):
    source = _source()
    m = _build("M", source).manifest["addon"]
    rm = _build("RM", source, seeds=3).manifest["addon"]
    sm = _build("SM", source, study=fake_embeddings, embedder="mini",
                embed_chunks=_fake_embed).manifest["addon"]
    assert m["merges_by_document"] == {"d/a.md": 4, "d/b.md": 1}
    assert sm["embedder"] == "dense"  # named by its model, resolved to the retriever
    for control in [sm, *rm["per_seed"].values()]:
        assert control["target_merges"] == 5
        assert control["merges_by_document"] == {"d/a.md": 4, "d/b.md": 0}
        assert control["shortfall"] == {"documents": 2, "documents_short": 1, "merges_short": 1,
                                        "by_document": {"d/b.md": 1}}
    assert m["source_key_reuse_rate"] == round(5 / 10, 6)  # 10 keyed chunks, 5 distinct keys per document


def test_sm_without_an_embedder_handed_in_is_a_clear_error(fake_embeddings):
    """Builders do not rank: SM's vectors come from the stage that builds the arms, and a build that gave none
    names what is missing."""
    with pytest.raises(HarnessError, match=r"arm `SM`: the build gave no way to embed chunks with `dense`"):
        _build("SM", _source(), study=fake_embeddings, embedder="mini")


def test_rm_is_deterministic_per_seed_and_seeds_differ():
    source = [sized(i, 100, "k" if i % 2 else f"u{i}", doc_id="d/a.md") for i in range(14)]
    first, again = _build("RM", source, seeds=3), _build("RM", source, seeds=3)
    assert [c.to_json() for c in first.chunks] == [c.to_json() for c in again.chunks]
    by_seed: dict[str, list] = {}
    for c in first.chunks:
        by_seed.setdefault(c.generated["variant"], []).append(c)
        assert c.chunk_id.endswith("@" + c.generated["variant"])
    assert list(by_seed) == ["s0", "s1", "s2"] and first.manifest["addon"]["seeds"] == [0, 1, 2]
    groups = {v: [tuple(merged_fragment_ids(c)) for c in chunks] for v, chunks in by_seed.items()}
    assert len({tuple(g) for g in groups.values()}) > 1  # the seeds merge different pairs
    assert all(len(chunks) == 14 - 6 for chunks in by_seed.values())  # M merged the seven k chunks: 6 merges


def test_a_missing_source_chunk_set_is_a_clear_error():
    def missing(of):
        raise HarnessError(f"papers/{of}: chunk set not built; run `make build-arms`")

    arm_cfg = DerivedArm(kind="M", of="E")
    with pytest.raises(HarnessError, match=r"papers/E: chunk set not built; run `make build-arms`"):
        build_chunks(get_kind("M"), BuildInputs((), None, dict, arm="M", arm_config=arm_cfg, source="E",
                                                         read_arm=missing))


KEY_LINE = re.compile(r"^- (.+) \(\d+ chunks?\)$", re.M)


class ScriptedBackend(Backend):
    """Answers the consolidation prompt per document, picked by the document's first key."""

    name = "scripted"

    def __init__(self):
        super().__init__("scripted", {})
        self.calls = 0

    @property
    def digest(self) -> str:
        return "scripted-1"

    def complete(self, prompt, *, schema, seed, options=None) -> Completion:
        self.calls += 1
        text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
        keys = KEY_LINE.findall(text)
        if keys[0] == "alpha":  # valid: beta is a synonym of alpha
            answer = {
                "mapping": [{"key": "alpha", "canonical": "alpha"}, {"key": "beta", "canonical": "alpha"}]
            }
        elif keys[0] == "gamma":  # partial: delta left out
            answer = {"mapping": [{"key": "gamma", "canonical": "gamma"}]}
        elif keys[0] == "eps":  # invalid: a key not on the list
            answer = {
                "mapping": [{"key": "eps", "canonical": "made up"}, {"key": "zeta", "canonical": "zeta"}]
            }
        else:  # unparseable on every seed
            return Completion("no json here", 10, 3, 0.0, 0.0, self.digest)
        return Completion(json.dumps(answer), 10, 5, 0.0, 0.0, self.digest)


def test_m_tp_counts_valid_partial_invalid_and_unparseable_mappings(tmp_path, monkeypatch):
    study = make_study(
        tmp_path,
        {"m": {"backend": "ollama", "name": "fake", "seed": 0}},
        {"E-K": {"kind": "E-K", "model": "m"}, "M-TP": {"kind": "M-TP", "of": "E-K", "model": "m"}},
        llm={"workers": 1, "retry_seeds": [1, 2], "spend_cap_usd": None},
    )
    docs = {"valid": ["alpha", "beta", "alpha"], "partial": ["gamma", "delta"], "invalid": ["eps", "zeta"],
            "unparseable": ["theta", "iota", "theta"]}
    source = [e_chunk(i, f"{doc} text {i}", key, doc_id=f"d/{doc}.md") for doc, keys in docs.items()
              for i, key in enumerate(keys)]
    backend = ScriptedBackend()
    monkeypatch.setattr(llm_session, "make_backend", lambda cfg, replay_from=None: backend)

    def build():
        return build_chunks(get_kind("M-TP"), BuildInputs((), None, dict, study=study, arm="M-TP",
                                                          arm_config=study.arms["M-TP"], dataset="papers",
                                                          source=study.arms["M-TP"].of,
                                                          read_arm=lambda of: list(source)))

    built = build()
    addon = built.manifest["addon"]
    assert addon["mapping_outcomes"] == {
        "kept": 3,
        "remapped": 1,
        "invalid": 1,
        "missing": 1,
        "unparseable": 2,
    }
    assert addon["mapping_outcomes_by_document"]["d/valid.md"] == {
        "kept": 1, "remapped": 1, "invalid": 0, "missing": 0, "unparseable": 0}
    # the remap lets M join all three chunks of `valid`; the unparseable document still merges its own keys
    assert addon["merges_by_document"] == {
        "d/valid.md": 2,
        "d/partial.md": 0,
        "d/invalid.md": 0,
        "d/unparseable.md": 1,
    }
    assert built.manifest["llm"]["documents_called"] == 4
    assert backend.calls == 3 + 3  # one call each for three documents, three seeds for the unparseable one
    assert built.manifest["llm"]["prompts"] == {
        "consolidate_keys.txt": built.manifest["llm"]["prompts"]["consolidate_keys.txt"]
    }
    rebuilt = build()  # everything answered from the generation cache
    assert backend.calls == 6 and rebuilt.manifest["llm"]["run"]["fresh_calls"] == 0
    assert [c.to_json() for c in rebuilt.chunks] == [c.to_json() for c in built.chunks]


def test_build_arms_names_the_make_target_when_the_source_is_not_built(tmp_path):
    from harness.arms.build import build_arms, sources_first
    from harness.cli.main import main
    from harness.provenance.freeze import frozen_hash
    from harness.study import Study
    from pipeline_support import edit_config, make_llm_free_study

    study = make_llm_free_study(tmp_path / "s", freeze=False)
    edit_config(study.root, lambda c: c["arms"].update({"Mx": {"kind": "M", "of": "P"}}))
    assert (
        main(["select", "--study", str(study.root)]) == 0
        and main(["freeze", "--study", str(study.root)]) == 0
    )
    study = Study.at(study.root)
    assert sources_first(study, "papers", ["Mx", "S", "P"]) == ["P", "Mx", "S"]  # the source is built first
    with pytest.raises(HarnessError, match=r"papers/P: chunk set not built .*run `make build-arms STUDY=.*"
                                           r"`harness build-arms --arm P`"):
        build_arms(study, arms=["Mx"], frozen_hash=frozen_hash(study), progress=False, log=lambda _: None)
