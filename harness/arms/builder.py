"""What a kind's builder reads (BuildInputs) and returns (ArmChunks), and what is attached to each declared
kind to build it (ArmBuilder; the table is harness.arms.registry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from harness.config.arm_kinds import ArmKindSpec
from harness.data.model import Chunk, Document, Question
from harness.study import Study


@dataclass(frozen=True)
class BuildInputs:
    """What a builder may read. `header_chunks` gives the header-led chunks per doc_id, computed once per
    dataset and shared (S, S+T, FL's window length, and every LLM arm chunk from them)."""

    documents: Sequence[Document]
    chunking: Any  # the typed `chunking:` section (harness.config.chunking.Chunking)
    header_chunks: Callable[[], Mapping[str, list[Chunk]]]
    study: Study | None = None  # for kinds that need a model, prompts and the llm settings
    arm: str = ""
    arm_config: Mapping[str, Any] = field(default_factory=dict)
    progress: bool = True
    fl_tokens: int | None = None  # FL window length; default: the median S chunk length
    dataset: str | None = None  # per-dataset model limits (harness.arms.model_limits)
    fresh: bool = False  # LLM kinds: regenerate instead of reading the cache
    replay: bool = False  # LLM kinds: answer only from the cache, never call a model
    questions: Sequence[Question] = ()  # supervised kinds (QES) read the training split only
    # derived kinds: the arm they start from (harness.grid.arms.source_arm), and the built chunk set and the
    # inputs hash of an arm of this dataset (harness.arms.build)
    source: str | None = None
    read_arm: Callable[[str], list[Chunk]] | None = None
    arm_inputs_hash: Callable[[str], str] | None = None
    # what a derived kind needs from ranking (SM: (dense retriever, chunks) -> a vector per chunk), handed
    # in by the stage that builds the arms: builders do not rank (harness.retrieval.chunk_vectors)
    embed_chunks: Callable[[str, Sequence[Chunk]], Any] | None = None


@dataclass(frozen=True)
class ArmChunks:
    chunks: list[Chunk]  # corpus order, indexed_text rendered
    manifest: dict[str, Any]  # extra fields for the chunk set's manifest


Render = Callable[[Chunk], Chunk]


@dataclass(frozen=True)
class ArmBuilder:
    """How a declared kind is built: `build` makes its chunk set (None: a planned kind, or one expanded at
    retrieval time), `render` sets a chunk's indexed text, `lab_chunker` cuts one document (lab kinds)."""

    render: Render
    build: Callable[[ArmKindSpec, "ArmBuilder", BuildInputs], ArmChunks] | None = None
    lab_chunker: Callable[..., list[Chunk]] | None = None  # fn(settings, doc, training spans)
