"""Outcome rows (contrasts, decided tests) as an HTML table for Jupyter's `_repr_html_`, through the report's
own table renderer and number formats."""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.report.model import interval, p_value, points, table
from harness.report.tables import to_html
from harness.stats.tables import contrast_label, retriever_label

_HEADER = ["A - B", "dataset", "retriever", "metric", "n (clusters)", "estimate", "CI", "level",
           "p TOST (Holm)", "p sign-flip (Holm)", "margin", "verdict"]
_LEAD = ("family", "test")  # shown first where the frame has them
_TAIL = ("tier",)


def _value(row: Any, key: str) -> Any:
    """A column of the row, None where the frame lacks it or holds a missing value."""
    value = getattr(row, key, None)
    return None if value is None or (not isinstance(value, (str, tuple, list)) and pd.isna(value)) else value


def _with_holm(p: Any, holm: Any) -> str:
    return p_value(p) if holm is None else f"{p_value(p)} ({p_value(holm)})"


def _cells(row: Any) -> list[Any]:
    level = _value(row, "ci_shown") or "95"
    lo, hi = _value(row, f"ci{level}_bca_lo"), _value(row, f"ci{level}_bca_hi")
    n, clusters = _value(row, "n_questions"), _value(row, "n_clusters")
    margin = _value(row, "margin")
    verdict = _value(row, "verdict")
    reason = _value(row, "verdict_reason")
    return [contrast_label(row), _value(row, "dataset"), retriever_label(row), row.metric,
            None if n is None else f"{int(n)} ({int(clusters)})", points(_value(row, "estimate"), 2),
            interval(None if lo is None else (lo, hi), 2), f"{level}%",
            _with_holm(_value(row, "p_tost"), _value(row, "p_tost_holm")),
            _with_holm(_value(row, "p_signflip"), _value(row, "p_signflip_holm")),
            None if margin is None else f"±{margin:g}",
            None if verdict is None else verdict + (f" ({reason})" if reason else "")]


def outcome_html(frame: pd.DataFrame, *, name: str, caption: str) -> str:
    """One row per row of `frame` (columns as harness.stats.tables.flat_record names them)."""
    lead = [c for c in _LEAD if c in frame.columns]
    tail = [c for c in _TAIL if c in frame.columns]
    if "retriever_b" not in frame.columns:
        frame = frame.assign(retriever_b=None)
    rows = [[_value(r, c) for c in lead] + _cells(r) + [_value(r, c) for c in tail]
            for r in frame.itertuples(index=False)]
    return to_html(table(name, caption, lead + _HEADER + tail, rows, collapsed=False), files=False)
