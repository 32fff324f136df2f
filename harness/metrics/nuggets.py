"""Strict nugget recall and the judge's acceptance controls (docs/answers.md; paper section 4.7, Amendment 1).

Model-free arithmetic only; the judge calls live elsewhere. The judge answers each (nugget, answer) pair
with one JSON object {"verdict": "support" | "partial_support" | "not_support"} (labels of Pradeep et al.,
2024). Strict recall counts only "support"; a partial verdict and an unparseable one count as not
supported, and both are counted so a report can show them.

A judge's nugget-recall results count as confirmatory only when both controls pass and a human spot check
gives kappa >= 0.6 (harness.metrics.judge_agreement): the positive control (each question's own reference
answer) must reach a mean strict recall >= 0.85, the negative control (another question's reference answer,
by a seeded derangement) must stay <= 0.05. Otherwise every nugget-recall row is exploratory, with reasons.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from harness.metrics.judge_agreement import KappaResult

SUPPORT, PARTIAL, NOT_SUPPORT, UNPARSEABLE = "support", "partial_support", "not_support", "unparseable"
VERDICTS = (SUPPORT, PARTIAL, NOT_SUPPORT)
POSITIVE_CONTROL_MIN = 0.85  # the plan's acceptance thresholds (paper section 4.7)
NEGATIVE_CONTROL_MAX = 0.05
METRIC_PREFIX = "nugget_recall"


def parse_verdict(raw: str | bytes | None) -> str:
    """One of VERDICTS, or UNPARSEABLE for anything but a JSON object whose `verdict` is one of them
    (case and surrounding whitespace aside)."""
    try:
        obj = json.loads(raw) if raw is not None else None
    except (TypeError, ValueError):
        return UNPARSEABLE
    label = obj.get("verdict") if isinstance(obj, dict) else None
    if isinstance(label, str) and label.strip().lower() in VERDICTS:
        return label.strip().lower()
    return UNPARSEABLE


@dataclass(frozen=True)
class NuggetScore:
    """One answer judged against one question's nuggets."""

    nuggets: int
    supported: int
    partial: int
    unparseable: int

    @property
    def strict_recall(self) -> float:
        return self.supported / self.nuggets


def score_verdicts(verdicts: Sequence[str]) -> NuggetScore:
    """Counts over one question's parsed verdicts (one per nugget)."""
    if not verdicts:
        raise ValueError("verdicts is empty; a question without nuggets has no nugget recall")
    unknown = sorted({v for v in verdicts if v not in VERDICTS and v != UNPARSEABLE})
    if unknown:
        raise ValueError(f"verdicts must be parse_verdict labels, got {unknown}")
    return NuggetScore(
        len(verdicts), verdicts.count(SUPPORT), verdicts.count(PARTIAL), verdicts.count(UNPARSEABLE)
    )


def strict_recall(raw_verdicts: Sequence[str | None]) -> NuggetScore:
    """Parse the judge's raw outputs for one question's nuggets and count them."""
    return score_verdicts([parse_verdict(r) for r in raw_verdicts])


# --- acceptance controls ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControlResult:
    name: str  # "positive" or "negative"
    mean_recall: float | None  # None when not computable
    threshold: float
    passed: bool
    questions: int
    unparseable: int  # verdicts the judge gave that could not be read
    reason: str  # empty when passed


def seeded_derangement(qids: Iterable[str], *, seed: int) -> dict[str, str]:
    """qid -> the qid whose reference answer it is judged against in the negative control; no qid maps to
    itself. Uniform over derangements (rejection sampling), from the seed alone: the input order is
    ignored."""
    ordered = sorted(set(qids))
    if len(ordered) < 2:
        raise ValueError(f"a derangement needs at least 2 questions, got {len(ordered)}")
    rng = np.random.default_rng(seed)
    while True:  # about e draws on average
        perm = rng.permutation(len(ordered))
        if not np.any(perm == np.arange(len(ordered))):
            return {q: ordered[int(j)] for q, j in zip(ordered, perm)}


def _control(name: str, scores: Mapping[str, NuggetScore], threshold: float, passes) -> ControlResult:
    if not scores:
        return ControlResult(name, None, threshold, False, 0, 0,
                             f"{name} control not computable: no reference answers")
    mean = sum(s.strict_recall for s in scores.values()) / len(scores)
    unparseable = sum(s.unparseable for s in scores.values())
    passed = passes(mean)
    bound = ">=" if name == "positive" else "<="
    reason = "" if passed else (f"{name} control failed: mean strict recall {mean:.3f}, required {bound} "
                                f"{threshold:g} ({len(scores)} questions)")
    return ControlResult(name, mean, threshold, passed, len(scores), unparseable, reason)


def positive_control(
    scores: Mapping[str, NuggetScore], *, threshold: float = POSITIVE_CONTROL_MIN
) -> ControlResult:
    """scores: qid -> the judge's score of that question's own reference answer."""
    return _control("positive", scores, threshold, lambda mean: mean >= threshold)


def negative_control(
    scores: Mapping[str, NuggetScore], *, threshold: float = NEGATIVE_CONTROL_MAX
) -> ControlResult:
    """scores: qid -> the judge's score of the reference answer seeded_derangement assigned to it."""
    return _control("negative", scores, threshold, lambda mean: mean <= threshold)


@dataclass(frozen=True)
class JudgeAcceptance:
    positive: ControlResult
    negative: ControlResult
    kappa: KappaResult | None  # the human spot check, None when none is on file

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the judge's results are exploratory; empty when they may be confirmatory."""
        out = [c.reason for c in (self.positive, self.negative) if not c.passed]
        if self.kappa is None:
            out.append("no human spot check on file (kappa >= 0.6 required)")
        elif not self.kappa.passed:
            out.append(self.kappa.reason)
        return tuple(out)

    @property
    def accepted(self) -> bool:
        return not self.reasons


def label_nugget_rows(rows: Iterable[Mapping], acceptance: JudgeAcceptance, *,
                      metric_prefix: str = METRIC_PREFIX) -> list[dict]:
    """Copies of stats rows; a row whose `metric` starts with metric_prefix gets tier "exploratory" and an
    `exploratory_reason` unless the judge is accepted. Other rows are copied unchanged."""
    reasons = "; ".join(acceptance.reasons)
    out = []
    for row in rows:
        row = dict(row)
        if str(row.get("metric", "")).startswith(metric_prefix) and reasons:
            row["tier"] = "exploratory"
            row["exploratory_reason"] = reasons
        out.append(row)
    return out
