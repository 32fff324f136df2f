"""Token-budgeted evidence metrics on source text (DESIGN section 7) and the per-question results table."""

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
from harness.metrics.results import (
    COLUMNS,
    KEY,
    ResultRow,
    check_per_question,
    combine_parts,
    completed_cells,
    part_path,
    question_rows,
    read_per_question,
    write_part,
    write_per_question,
)

__all__ = [
    "COLUMNS",
    "KEY",
    "METRIC_SETS",
    "GramCache",
    "MetricSet",
    "ResultRow",
    "ScoringCache",
    "TokenCache",
    "Unit",
    "budgets_from_config",
    "check_per_question",
    "combine_parts",
    "completed_cells",
    "fill_budget",
    "get_metric_set",
    "part_path",
    "question_rows",
    "read_per_question",
    "score_question",
    "word_ngrams",
    "write_part",
    "write_per_question",
]
