"""The ollama backend and the LLM arms against a fake Ollama server on loopback."""

from __future__ import annotations

import json

import pytest
from llm_fake_ollama import DIGEST, FakeOllama
from llm_study import make_study, small_corpus

from harness.arms.llm_arms import build_llm_arm
from harness.arms.registry import BUILDERS
from harness.errors import HarnessError
from harness.llm.base import BackendUnavailable, ModelNotFound
from harness.llm.registry import make_backend, resolve_digest
from harness.grid.paths import generations_path


def ollama_model(fake: FakeOllama, name: str = "fake") -> dict:
    return {
        "backend": "ollama",
        "name": name,
        "host": fake.host,
        "seed": 0,
        "num_ctx": 4096,
        "num_predict": 256,
    }


def build(study, arm: str, docs, chunks, **kw):
    return build_llm_arm(
        study,
        arm,
        study.arms[arm],
        docs,
        chunks,
        render=BUILDERS[study.arms[arm].kind].render,
        progress=False,
        **kw,
    )


def test_valid_json_fills_every_field_and_counts_tokens(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=3)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        result = build(study, "E", docs, chunks)
    assert [c.chunk_id for c in result.chunks] == [c.chunk_id for d in docs for c in chunks[d.doc_id]]
    first = result.chunks[0].generated
    assert first["title"] == "About intro" and first["key"] == "topic intro"
    assert first["related_keys"] == []  # nothing was in the dictionary before the first call
    assert result.chunks[1].generated["related_keys"] == ["topic intro"]  # the unknown key is dropped
    assert result.chunks[0].indexed_text.startswith("About intro\nSummary of intro.\nintro, alpha")
    assert result.chunks[0].indexed_text.endswith("\n\n" + result.chunks[0].text)
    cost = result.manifest["cost"]
    assert cost["calls"] == 6 and cost["failures"] == 0 and cost["retries"] == 0
    assert cost["prompt_tokens"] > 0 and cost["completion_tokens"] > 0
    assert result.manifest["backend"]["digest"] == DIGEST
    keys = result.manifest["keys"]
    # doc keys: intro, method, method -> 2 distinct of 3 keyed per document
    assert keys["keyed_chunks"] == 6 and keys["distinct_keys"] == 4
    assert keys["reuse_rate"] == pytest.approx(1 / 3, abs=1e-6)
    assert keys["chunks_sharing_key"] == 4 and keys["adjacent_same_key_share"] == pytest.approx(0.5)
    # every request used JSON output, temperature 0 and the first seed 0
    chat = [r for r in fake.requests if r["path"] == "/api/chat"]
    assert all(r["options"]["temperature"] == 0 and r["options"]["seed"] == 0 for r in chat)
    assert all(r["format"]["required"][0] == "title" for r in chat)


def test_invalid_then_valid_on_seed_2_is_retried_and_counted(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama(mode="invalid-until-seed-2") as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        result = build(study, "E", docs, chunks)
    assert all(not c.generated["llm_failed"] and c.generated["title"] for c in result.chunks)
    assert sorted({seed for _, seed in fake.chat_calls}) == [0, 1, 2]  # seed 3 never needed
    assert result.manifest["cost"]["retries"] == 4 and result.manifest["cost"]["calls"] == 6


def test_always_invalid_leaves_empty_fields_and_counts_failures(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama(mode="invalid") as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        result = build(study, "E", docs, chunks)
    for c in result.chunks:
        g = c.generated
        assert g["llm_failed"] is True
        assert (g["title"], g["summary"], g["key"], g["keywords"], g["questions"], g["entities"]) == (
            "",
            "",
            "",
            [],
            [],
            [],
        )
        assert c.indexed_text == c.text  # empty fields render nothing
    assert result.manifest["cost"]["failures"] == 2 and result.manifest["cost"]["calls"] == 8
    assert {seed for _, seed in fake.chat_calls} == {0, 1, 2, 3}


def test_model_not_found_stops_at_once_and_says_ollama_pull(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=2)
    with FakeOllama(models=("other",)) as fake:
        study = make_study(
            tmp_path, {"m": ollama_model(fake, "qwen9:1b")}, {"E": {"kind": "E", "model": "m"}}
        )
        with pytest.raises(ModelNotFound, match=r"ollama pull qwen9:1b"):
            build(study, "E", docs, chunks)
    assert fake.total_chat_calls == 0


def test_chat_404_mid_build_is_model_not_found(tmp_path):
    with FakeOllama() as fake:
        backend = make_backend(ollama_model(fake))
        assert backend.digest == DIGEST
        fake.models.clear()  # the model disappears after the digest was read
        with pytest.raises(ModelNotFound, match="ollama pull fake"):
            backend.complete("hello", schema=None, seed=0)


def test_server_gone_mid_build_stops_cleanly_and_rerun_resumes(tmp_path):
    docs, chunks = small_corpus(n_docs=3, n_chunks=3)
    with FakeOllama(go_down_after=4) as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        with pytest.raises(BackendUnavailable, match="rerun"):
            build(study, "E", docs, chunks)
        answered_first = set(fake.chat_calls)
    cache_lines = generations_path(study, "m").read_text().splitlines()
    # the call that tripped the shutdown plus at most one other in flight (two workers)
    assert 4 <= len(answered_first) <= 5 and len(cache_lines) == len(answered_first)
    assert all(json.loads(line)["text"] for line in cache_lines)

    with FakeOllama() as fake2:  # the server comes back on another port; same model, same digest
        study = make_study(tmp_path, {"m": ollama_model(fake2)}, {"E": {"kind": "E", "model": "m"}})
        result = build(study, "E", docs, chunks)
    assert not set(fake2.chat_calls) & answered_first  # nothing answered before is asked again
    assert fake2.total_chat_calls == 9 - len(answered_first)
    assert result.manifest["run"]["cache_hits"] == len(answered_first)
    assert result.manifest["run"]["fresh_calls"] == 9 - len(answered_first)
    assert all(not c.generated["llm_failed"] for c in result.chunks)


def test_server_down_from_the_start_names_the_host(tmp_path):
    fake = FakeOllama()
    host = fake.host
    fake.go_down()
    with pytest.raises(BackendUnavailable, match=host.replace(".", r"\.")):
        resolve_digest({"backend": "ollama", "name": "fake", "host": host})


def test_resolve_digest_reads_the_servers_digest(tmp_path):
    with FakeOllama(models=("fake:7b",)) as fake:
        assert resolve_digest(ollama_model(fake, "fake:7b")) == DIGEST
        with pytest.raises(ModelNotFound, match="ollama pull fake:13b"):
            resolve_digest(ollama_model(fake, "fake:13b"))


def test_warm_rebuild_makes_no_call_and_same_chunks(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=3)
    with FakeOllama() as fake:
        study = make_study(
            tmp_path,
            {"m": ollama_model(fake)},
            {
                "E": {"kind": "E", "model": "m"},
                "E-K": {"kind": "E-K", "model": "m"},
                "CR": {"kind": "CR", "model": "m"},
            },
        )
        first = {arm: build(study, arm, docs, chunks) for arm in ("E", "E-K", "CR")}
        calls = fake.total_chat_calls
        second = {arm: build(study, arm, docs, chunks) for arm in ("E", "E-K", "CR")}
        assert fake.total_chat_calls == calls == 18
    for arm in first:
        assert [c.to_json() for c in first[arm].chunks] == [c.to_json() for c in second[arm].chunks]
        assert first[arm].manifest["cost"] == second[arm].manifest["cost"]
        assert second[arm].manifest["run"]["fresh_calls"] == 0
    cr = second["CR"].chunks[0]
    assert cr.generated["context"] == "Context for intro." and cr.indexed_text.startswith(
        "Context for intro.\n\n"
    )
    assert all(c.generated["related_keys"] == [] for c in second["E-K"].chunks)


def test_fresh_regenerates_and_replay_needs_no_server(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}})
        build(study, "E", docs, chunks)
        build(study, "E", docs, chunks, fresh=True)
        assert fake.total_chat_calls == 4
    # server gone: replay answers from the cache under the recorded digest
    replayed = build(study, "E", docs, chunks, replay=True)
    assert replayed.manifest["backend"]["digest"] == DIGEST
    assert (
        replayed.manifest["run"]["fresh_calls"] == 0
        and replayed.chunks[0].generated["title"] == "About intro"
    )


def test_pf_makes_four_calls_per_chunk_on_a_seeded_subset(tmp_path):
    docs, chunks = small_corpus(n_docs=4, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(
            tmp_path,
            {"m": ollama_model(fake)},
            {"PF": {"kind": "PF", "model": "m", "documents": 2, "seed": 7}},
        )
        result = build(study, "PF", docs, chunks)
        again = build(study, "PF", docs, chunks)
        assert fake.total_chat_calls == 2 * 2 * 4
    assert (
        result.manifest["documents"] == 2
        and result.manifest["document_ids"] == again.manifest["document_ids"]
    )
    assert [d.doc_id for d in docs if d.doc_id in result.manifest["document_ids"]] == result.manifest[
        "document_ids"
    ]
    g = result.chunks[0].generated
    assert g["title"].startswith("About") and len(g["keywords"]) == 5 and len(g["questions"]) == 2
    assert g["key"] == "" and g["entities"] == []


def test_unknown_model_and_bad_subset_are_user_errors(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=1)
    # the config schema refuses both when the study loads, before any model call
    models = {"m": {"backend": "ollama", "name": "x"}}
    study = make_study(tmp_path / "a", models, {"E": {"kind": "E", "model": "nope"}})
    with pytest.raises(HarnessError, match=r"`arms\.E\.model` is 'nope', which is not an entry of `models:`"):
        build(study, "E", docs, chunks)
    study = make_study(tmp_path / "b", models, {"PF": {"kind": "PF", "model": "m", "documents": 1}})
    with pytest.raises(HarnessError, match=r"`arms\.PF\.seed` is required with `documents: 1`"):
        build(study, "PF", docs, chunks)
    with pytest.raises(HarnessError, match=r"`model\.backend` is 'vllm', not a known value"):
        make_backend({"backend": "vllm", "name": "x"})


def test_a_serial_backend_runs_documents_one_after_another(tmp_path, monkeypatch):
    # an in-process backend (llama.cpp) is serial: workers > 1 would only interleave prompts behind its lock
    from harness.llm.ollama_backend import OllamaBackend

    monkeypatch.setattr(OllamaBackend, "serial", True)
    docs, chunks = small_corpus(n_docs=3, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(
            tmp_path, {"m": ollama_model(fake)}, {"E": {"kind": "E", "model": "m"}}, llm={"workers": 2}
        )
        result = build(study, "E", docs, chunks)
    prompts = [r["messages"][-1]["content"] for r in fake.requests if r["path"] == "/api/chat"]
    order = [next(d for d in range(3) if f"in document {d}," in p) for p in prompts]
    assert order == [0, 0, 1, 1, 2, 2]
    assert result.manifest["run"]["workers"] == 1  # the override is reported, not silent


def test_llama_cpp_is_a_serial_backend_and_servers_are_not():
    from harness.llm.llamacpp_backend import LlamaCppBackend
    from harness.llm.ollama_backend import OllamaBackend
    from harness.llm.openai_backend import OpenAICompatibleBackend

    assert LlamaCppBackend.serial and not OllamaBackend.serial and not OpenAICompatibleBackend.serial
