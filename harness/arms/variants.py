"""A chunk set stored as several variants (RM's seeds, harness.arms.addon_arms; an LLM arm's repeat
generations, harness.arms.repeats): each chunk names its variant, which score averages over."""

from __future__ import annotations

from dataclasses import replace

from harness.data.model import Chunk

VARIANT = "variant"  # generated field naming the variant of a chunk


def tag_variant(chunk: Chunk, name: str) -> Chunk:
    """One variant's copy of a chunk (RM's seed, an LLM arm's repeat): the name in its id and `generated`."""
    return replace(
        chunk, chunk_id=f"{chunk.chunk_id}@{name}", generated={**(chunk.generated or {}), VARIANT: name}
    )
