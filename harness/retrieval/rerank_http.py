"""A reranker served over HTTP (`backend: http-rerank`): the `/rerank` endpoint of vLLM, Text Embeddings
Inference (TEI) and Infinity, one server or a pool of them.

    api: cohere   POST {base_url}/rerank {"model", "query", "documents"} -> {"results": [{"index",
    "relevance_score"}]}
                  (vLLM with base_url .../v1, Infinity); the served ids from GET {base_url}/models ("data":
                  [{"id"}])
    api: tei      POST {base_url}/rerank {"query", "texts", "raw_scores": false} -> [{"index", "score"}];
                  the served id from GET {base_url}/info ("model_id")

When the retriever is built every server must report the configured `model` id (a server reporting another
id stops the run, naming both); the check runs even when every pair score is cached, because the
pair-score cache is keyed by what the servers report. Requests go through the LLM layer's server pool
(harness.llm.pool.ServerPool):
a server that refuses, drops, times out or answers 5xx is rested with backoff and the request moves to
another; when every server is down the run stops, and the scores already computed are in the pair-score
cache, so a rerun resumes. With `qwen3_prompt: true` the query and documents are sent wrapped in the
Qwen3-Reranker prompt (the model card's system and user turns, harness.retrieval.rerank_qwen3), the way
vLLM's example serves that model; the server's score is then P("yes") as in process.
"""

from __future__ import annotations

import json
import math
import socket
import urllib.error
import urllib.request
from typing import Any, Sequence

from harness.config.retrievers import HttpRerank
from harness.files import canonical_json, sha256_text
from harness.llm.base import BackendUnavailable, LlmError, ModelMismatch, ServerFailed
from harness.llm.pool import ServerPool
from harness.config.models import Failover
from harness.retrieval.rerank_qwen3 import PROMPT_HEAD, PROMPT_TAIL, document_part, query_part


class RerankServer:
    """One `/rerank` server; errors are the LLM layer's, so the pool knows which ones are the server's
    fault."""

    def __init__(self, url: str, model: str, *, api: str, timeout_s: float):
        self.url, self.model, self.api, self.timeout_s = url.rstrip("/"), model, api, timeout_s

    def _request(self, path: str, body: Any | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            if e.code >= 500:
                raise ServerFailed(f"{self.url}{path} failed (HTTP {e.code}): {detail}") from None
            raise LlmError(f"{self.url}{path} refused the request (HTTP {e.code}): {detail}") from None
        except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as e:
            raise BackendUnavailable(
                f"{self.url} is unreachable ({e}); rerun to resume from the pair-score cache"
            ) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise ServerFailed(
                f"{self.url}{path} answered with something that is not JSON: {raw[:200]!r}"
            ) from None

    def served_ids(self) -> list[str]:
        if self.api == "tei":
            info = self._request("/info")
            return [str(info.get("model_id"))] if isinstance(info, dict) else []
        listed = self._request("/models")
        return (
            sorted(str(m.get("id")) for m in listed.get("data", []) if isinstance(m, dict))
            if isinstance(listed, dict)
            else []
        )

    def host_report(self) -> str:
        """The configured id, once the server has listed it among the models it serves."""
        served = self.served_ids()
        if self.model not in served:
            raise ModelMismatch(
                f"reranker server {self.url} serves {', '.join(served) or 'no model'}, not the "
                f"configured model {self.model!r} (`model:` of the rerank retriever)"
            )
        return canonical_json({"id": self.model})

    def pooled_digest(self, report: str) -> str:
        return "pool-sha256:" + sha256_text(
            canonical_json({"model": self.model, "api": self.api, "served": report})
        )

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if self.api == "tei":
            answer = self._request("/rerank", {"query": query, "texts": list(documents), "raw_scores": False})
            rows, key = answer, "score"
        else:
            answer = self._request(
                "/rerank", {"model": self.model, "query": query, "documents": list(documents)}
            )
            rows, key = (answer.get("results") if isinstance(answer, dict) else None), "relevance_score"
        return self._scores(rows, key, len(documents))

    def _scores(self, rows: Any, key: str, n: int) -> list[float]:
        """One finite score per document, by the index the server gives back (servers sort by score)."""
        scores: dict[int, float] = {}
        for row in rows if isinstance(rows, list) else []:
            if (
                isinstance(row, dict)
                and isinstance(row.get("index"), int)
                and isinstance(row.get(key), (int, float))
            ):
                scores[row["index"]] = float(row[key])
        if sorted(scores) != list(range(n)) or not all(math.isfinite(v) for v in scores.values()):
            raise ServerFailed(
                f"{self.url}/rerank returned no finite `{key}` for every one of the {n} documents"
            )
        return [scores[i] for i in range(n)]


class HttpRerankScorer:
    """A PairScorer over a pool of `/rerank` servers; `digest` contacts them (the model-id check)."""

    def __init__(self, cfg: HttpRerank):
        hosts = cfg.hosts or ()
        members = [
            (h.url, RerankServer(h.url, cfg.model, api=cfg.api, timeout_s=cfg.timeout_s), h.concurrency)
            for h in hosts
        ] or [(cfg.base_url, RerankServer(cfg.base_url, cfg.model, api=cfg.api, timeout_s=cfg.timeout_s), 1)]
        self.pool = ServerPool(members, failover=cfg.failover or Failover())
        self.cfg = cfg
        self.name = f"http-rerank:{cfg.model}"
        self._digest: str | None = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            pinned = {"served": self.pool.digest, "qwen3_prompt": self.cfg.qwen3_prompt,
                      "instruction": self.cfg.instruction if self.cfg.qwen3_prompt else None}
            self._digest = "sha256:" + sha256_text(canonical_json(pinned))
        return self._digest

    def _texts(self, query: str, passages: Sequence[str]) -> tuple[str, list[str]]:
        if not self.cfg.qwen3_prompt:
            return query, list(passages)
        return PROMPT_HEAD + query_part(self.cfg.instruction, query), [
            document_part(p) + PROMPT_TAIL for p in passages
        ]

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        query_text, documents = self._texts(query, passages)
        scores: list[float] = []
        for start in range(0, len(documents), self.cfg.batch_size):
            batch = documents[start : start + self.cfg.batch_size]
            scores += self.pool.dispatch(lambda server: server.rerank(query_text, batch))
        return scores

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "http-rerank",
            "model": self.cfg.model,
            "api": self.cfg.api,
            "servers": self.pool.urls,
            "qwen3_prompt": self.cfg.qwen3_prompt,
            "instruction": self.cfg.instruction,
        }

