"""The study's stages in pipeline order, each with one line saying what it does.

The one list: `harness` with no command prints it, and `harness rehearse` runs these stages on the twin.
"""

from __future__ import annotations

PIPELINE = (
    ("select", "draw the seeded selection (papers, questions, distractors) into selection/selection.json"),
    ("freeze", "hash every input that can move a result into frozen_config.json"),
    ("estimate", "before paying: calls, tokens and dollars of every paid arm, checked against the spend cap"),
    ("build-arms", "build every arm's chunk set into results/chunks/ (LLM calls cached)"),
    ("score", "rank every arm under every retriever; per-question results in results/per_question/"),
    ("answer", "the fixed reader answers the configured cells; the judge scores nuggets (when configured)"),
    ("stats", "run the registered families: verdict tables and forest plots in results/stats/"),
    ("audit", "recompute every family and check the registration and released files"),
    ("report", "the study report: results/report/index.html (self-contained), report.md, tables, figures"),
)
STAGES = tuple(name for name, _ in PIPELINE)
