"""Token-budgeted evidence metrics on source text (docs/design.md, Evidence metrics): pure functions of
chunk and evidence text. Orchestration (the grid, scoring, the per-question files) is harness.pipeline."""

from harness.metrics.budget import TokenCache, Unit, fill_budget
from harness.metrics.ngrams import GramCache, word_ngrams
from harness.metrics.registry import (
    METRIC_SETS,
    MetricSet,
    ScoringCache,
    budgets_from_config,
    get_metric_set,
    score_question,
)

__all__ = [
    "METRIC_SETS",
    "GramCache",
    "MetricSet",
    "ScoringCache",
    "TokenCache",
    "Unit",
    "budgets_from_config",
    "fill_budget",
    "get_metric_set",
    "score_question",
    "word_ngrams",
]
