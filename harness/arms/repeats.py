"""Repeat generations (robustness, docs/analyses.md): an LLM arm with `repeats: N` is generated N times.

Semantics, chosen so that declaring repeats never invalidates what is already cached:
- repeat 0 is the arm exactly as configured: the same seeds, the same cache keys as without `repeats`;
- repeat r > 0 shifts every seed (the first attempt's and the retries') by r * REPEAT_SEED_STRIDE and adds
  r to every cache key (harness.llm.cache.cache_key), so its calls are new draws, cached on their own;
- the arm must sample at a temperature above 0 on every dataset it covers (its model's `temperature`, or
  `model_options: {temperature: ...}` on the arm): greedy decoding ignores the seed and would repeat
  itself exactly. A repeat-only temperature is deliberately not offered: repeat 0 would then be greedy
  and the others sampled, two different generators whose spread is not a between-run spread.

Each repeat is one variant of the arm's chunk set (`generated["variant"] = "r<r>"`, chunk id `...@r<r>`),
stored together as RM's seeds are (harness.arms.addon_arms); score averages each question's metrics over
the variants and also keeps them per variant (harness.pipeline.addon_cells), which the report's
between-run spread reads (harness.report.sections_robustness).
"""

from __future__ import annotations

from typing import Any, Sequence

REPEAT_SEED_STRIDE = 1000  # far above the retry seeds (1, 2, 3), so no two repeats share a seed


def repeat_count(arm_cfg: Any) -> int:
    """1 for an arm without `repeats`."""
    return getattr(arm_cfg, "repeats", None) or 1


def repeat_seeds(seeds: Sequence[int], repeat: int) -> list[int]:
    """The seeds of generation run `repeat`: repeat 0 keeps them, repeat r shifts each by r * stride."""
    return [int(s) + repeat * REPEAT_SEED_STRIDE for s in seeds]


def repeat_variant(repeat: int) -> str:
    return f"r{repeat}"
