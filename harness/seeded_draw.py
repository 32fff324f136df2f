"""The one seeded draw: `random.Random(seed).sample(sorted(population), n)`, in draw order.

Every recorded subset (the question selection, distractor files, held-out questions, LLM-arm documents, the
answered questions, rescored cells and vectors, the plan's cluster subsets) is drawn here, so a record made
by one stage can be re-drawn by another from its seed alone. The draw order is kept: it is part of what is
recorded.
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Sequence, TypeVar

T = TypeVar("T")


def seeded_sample(population: Iterable[T], n: int, seed: int, *, presorted: bool = False) -> list[T]:
    """N items of the sorted population drawn with `seed`, in draw order. `presorted`: the population is
    already in its own fixed order (grid order, say) and is drawn from as given."""
    return seeded_samples([(population, n)], seed, presorted=presorted)[0]


def seeded_samples(draws: Sequence[tuple[Iterable[T], int]], seed: int, *,
                   presorted: bool = False) -> list[list[T]]:
    """Several (population, n) draws in turn from one generator seeded once (the later draws continue the
    stream the earlier ones left)."""
    rng = random.Random(seed)
    out = []
    for population, n in draws:
        items: list[Any] = list(population) if presorted else sorted(population)
        out.append(rng.sample(items, n))
    return out
