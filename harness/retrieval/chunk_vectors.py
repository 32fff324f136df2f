"""What an arm build needs from ranking, handed to it by the stage that builds the arms: the arm builders
never import a retriever (docs/working-on-the-harness.md), so SM's chunk vectors come through here."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from harness.data.model import Chunk
from harness.retrieval.registry import RetrieverContext
from harness.study import Study

ChunkEmbedder = Callable[[str, Sequence[Chunk]], np.ndarray]


def chunk_embedder(study: Study) -> ChunkEmbedder:
    """(dense retriever name, chunks) -> one unit row per chunk: the chunk's indexed text embedded as the
    retriever embeds documents (cached in the study's vector cache)."""

    def embed(retriever_name: str, chunks: Sequence[Chunk]) -> np.ndarray:
        retriever = RetrieverContext.for_study(study).get(retriever_name)
        matrix = retriever.index(f"SM embeddings {len(chunks)}", list(chunks)).matrix
        retriever.flush()
        return matrix

    return embed
