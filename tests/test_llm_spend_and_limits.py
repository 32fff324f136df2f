"""The study-wide spend cap across arms, and per-arm, per-dataset model limits (model_options)."""

from __future__ import annotations

import json

import pytest
from llm_fake_ollama import FakeOllama
from llm_study import CountingBackend, make_study, small_corpus

from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.arms.model_limits import effective_model_config
from harness.config.arms import ARM
from harness.config.fields import Where, to_plain
from harness.config.models import MODEL as MODEL_SCHEMA
from harness.errors import HarnessError
from harness.llm.base import SpendCapReached
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger, study_spend_usd
from harness.llm.session import LlmSession
from harness.grid.paths import generations_path


def test_the_cap_is_a_total_over_arms(tmp_path):
    folder = tmp_path / "generations"
    backend = CountingBackend(cost=0.4)
    with GenerationCache(folder / "strong.jsonl") as cache:  # arm Es spends 0.8 of a 1.0 cap
        es = LlmSession(backend, cache, SpendLedger("Es", 1.0, spent_before_usd=study_spend_usd(folder)))
        es.call("a", schema=None, seed=0)
        es.call("b", schema=None, seed=0)
    assert study_spend_usd(folder) == pytest.approx(0.8)
    with GenerationCache(folder / "other.jsonl") as cache:  # arm CRs starts with 0.8 already spent
        crs = LlmSession(backend, cache, SpendLedger("CRs", 1.0, spent_before_usd=study_spend_usd(folder)))
        with pytest.raises(SpendCapReached, match=r"arm CRs: spend cap \$1\.0000 reached \(spent \$0\.8000 "
                                                  r"study-wide, \$0\.8000 of it before this arm"):
            crs.call("c", schema=None, seed=0)
    assert backend.calls == 2  # a per-arm cap would have let CRs spend another 0.8
    with GenerationCache(folder / "strong.jsonl") as cache:  # cache hits cost nothing new, so they pass
        again = LlmSession(backend, cache, SpendLedger("Es", 1.0, spent_before_usd=study_spend_usd(folder)))
        again.call("a", schema=None, seed=0)
    assert backend.calls == 2


def test_study_spend_skips_torn_lines(tmp_path):
    (tmp_path / "g.jsonl").write_text(json.dumps({"cost_usd": 0.25}) + "\n" + json.dumps({"cost_usd": 0.5})
                                      + "\n" + '{"cost_usd": 0.', encoding="utf-8")
    assert study_spend_usd(tmp_path) == pytest.approx(0.75)
    assert study_spend_usd(tmp_path / "absent") == 0.0


def test_study_spend_reads_a_cache_again_once_it_grew_or_was_replaced(tmp_path, monkeypatch):
    """Each cache is read once per process while it is unchanged (a build of many arms asks per arm)."""
    import harness.llm.ledger as ledger

    cache = tmp_path / "g.jsonl"
    cache.write_text(json.dumps({"cost_usd": 0.5}) + "\n", encoding="utf-8")
    opened = []
    real_open = open
    monkeypatch.setattr(ledger, "open", lambda path, mode: opened.append(path) or real_open(path, mode),
                        raising=False)
    assert study_spend_usd(tmp_path) == study_spend_usd(tmp_path) == pytest.approx(0.5)
    assert opened == [cache]
    with cache.open("a", encoding="utf-8") as f:  # a call appended
        f.write(json.dumps({"cost_usd": 0.25}) + "\n")
    assert study_spend_usd(tmp_path) == pytest.approx(0.75)
    replaced = tmp_path / "new.tmp"  # the same size, another inode, as an atomic rewrite gives
    replaced.write_text(json.dumps({"cost_usd": 0.9}) + "\n" + json.dumps({"cost_usd": 0.05}) + "\n",
                        encoding="utf-8")
    assert replaced.stat().st_size == cache.stat().st_size
    replaced.replace(cache)
    assert study_spend_usd(tmp_path) == pytest.approx(0.95)
    assert len(opened) == 3


def test_build_counts_earlier_spend_against_the_cap(tmp_path, monkeypatch):
    seen = []

    class Recording(SpendLedger):
        def __init__(self, arm, cap, *, spent_before_usd=0.0):
            seen.append((arm, cap, spent_before_usd))
            super().__init__(arm, cap, spent_before_usd=spent_before_usd)

    monkeypatch.setattr("harness.arms.llm_arms.SpendLedger", Recording)
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        model = {
            "backend": "ollama",
            "name": "fake",
            "host": fake.host,
            "seed": 0,
            "num_ctx": 4096,
            "num_predict": 256,
        }
        study = make_study(tmp_path, {"m": model}, {"E": {"kind": "E", "model": "m"}},
                           llm={"workers": 1, "retry_seeds": [1], "spend_cap_usd": 5.5})
        other = generations_path(study, "strong")
        other.parent.mkdir(parents=True, exist_ok=True)
        other.write_text(json.dumps({"cost_usd": 1.25}) + "\n", encoding="utf-8")  # paid by an earlier arm
        build_llm_arm(study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False)
    assert seen == [("E", 5.5, pytest.approx(1.25))]


RAW_MODEL = {"backend": "ollama", "name": "qwen2.5:7b", "num_ctx": 16384, "num_predict": 1000}
MODEL = MODEL_SCHEMA(RAW_MODEL, Where(None, ("models", "m")))
DATASETS = {"qasper": {}, "freshstack": {}}


def typed_arm(raw):
    return ARM(raw, Where(None, ("arms", raw["kind"])))


def options(model) -> dict:
    return {k: v for k, v in to_plain(model).items() if k in ("num_ctx", "num_predict")}


def test_model_options_apply_per_arm_and_dataset():
    cr = typed_arm(
        {"kind": "CR", "model": "m", "model_options": {"num_predict": 120, "num_ctx": {"freshstack": 32768}}}
    )
    assert options(effective_model_config("CR", cr, MODEL, "qasper", DATASETS)) == {
        "num_ctx": 16384,
        "num_predict": 120,
    }
    assert options(effective_model_config("CR", cr, MODEL, "freshstack", DATASETS)) == {"num_ctx": 32768,
                                                                                          "num_predict": 120}
    assert (
        effective_model_config("E", typed_arm({"kind": "E", "model": "m"}), MODEL, "freshstack", DATASETS)
        == MODEL
    )


@pytest.mark.parametrize("options, message", [
    ({"num_ctx": {"fresh": 1}}, r"arm CR: `model_options\.num_ctx` names dataset 'fresh'"),
    ({"name": "other"}, r"`arms\.CR\.model_options\.name` would change the model itself"),
    ([1], r"`arms\.CR\.model_options` must be a mapping"),
    ({"num_ctxx": 1}, r"arm CR: `model_options\.num_ctxx` is not an option of ollama models"),
])
def test_model_options_errors(options, message):
    with pytest.raises(HarnessError, match=message):
        arm = typed_arm({"kind": "CR", "model": "m", "model_options": options})
        effective_model_config("CR", arm, MODEL, "qasper", DATASETS)


def test_built_arm_uses_its_dataset_limits(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        model = {
            "backend": "ollama",
            "name": "fake",
            "host": fake.host,
            "seed": 0,
            "num_ctx": 4096,
            "num_predict": 256,
        }
        arm = {"kind": "CR", "model": "m", "model_options": {"num_predict": 120, "num_ctx": {"papers": 8192}}}
        study = make_study(tmp_path, {"m": model}, {"CR": arm})
        on_papers = build_llm_arm(study, "CR", study.arms["CR"], docs, chunks, render=BUILDERS["CR"].render,
                                  progress=False, dataset="papers")
    options = on_papers.manifest["backend"]["options"]
    assert (options["num_ctx"], options["num_predict"]) == (8192, 120)


class Billed:
    """Wrap a backend so every call costs `cost` (the fake Ollama server itself is free)."""

    def __init__(self, inner, cost: float):
        self._inner, self.cost = inner, cost
        self.billed = True

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def estimate_cost_usd(self, messages, options) -> float:
        return self.cost

    def complete(self, *args, **kw):
        from dataclasses import replace

        return replace(self._inner.complete(*args, **kw), cost_usd=self.cost)


@pytest.mark.parametrize("allow", [True, False])
def test_arm_allowed_to_fall_short_keeps_completed_documents(tmp_path, monkeypatch, allow):
    import harness.arms.llm_arms as llm_arms

    real = llm_arms.make_backend
    monkeypatch.setattr(llm_arms, "make_backend", lambda cfg, replay_from=None: Billed(real(cfg), 0.25))
    docs, chunks = small_corpus(n_docs=3, n_chunks=2)  # two calls per document; the cap pays for four
    with FakeOllama() as fake:
        model = {
            "backend": "ollama",
            "name": "fake",
            "host": fake.host,
            "seed": 0,
            "num_ctx": 4096,
            "num_predict": 256,
        }
        arm = {"kind": "E", "model": "m", "allow_shortfall": allow}
        study = make_study(
            tmp_path, {"m": model}, {"E": arm}, llm={"workers": 1, "retry_seeds": [1], "spend_cap_usd": 1.0}
        )
        if not allow:
            with pytest.raises(SpendCapReached):
                build_llm_arm(
                    study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False
                )
            return
        result = build_llm_arm(
            study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False
        )
    short = result.manifest["shortfall"]
    assert (short["planned_documents"], short["completed_documents"]) == (3, 2)
    assert short["missing_document_ids"] == [docs[2].doc_id] and "spend cap" in short["stopped_by"]
    assert {c.doc_id for c in result.chunks} == {docs[0].doc_id, docs[1].doc_id}
