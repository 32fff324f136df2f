"""Cohen's kappa between the judge and a human on a spot-check file, with the plan's kappa >= 0.6 rule.

The file is CSV with a header; two of its columns hold the judge's and the human's labels for the same
rows. Labels are compared after trimming and lower-casing; any label set works (e.g. the verdicts of
harness.metrics.nuggets). A row without both labels is an error naming the file and line: an unlabelled row
must be labelled or removed, never silently skipped.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from harness.errors import InputError

KAPPA_MIN = 0.6
JUDGE_COLUMN, HUMAN_COLUMN = "judge_verdict", "human_verdict"


@dataclass(frozen=True)
class KappaResult:
    kappa: float | None  # None when undefined (both raters used one and the same label throughout)
    rows: int
    observed_agreement: float
    expected_agreement: float
    threshold: float
    passed: bool
    reason: str  # empty when passed


def cohens_kappa(first: Sequence[str], second: Sequence[str], *, threshold: float = KAPPA_MIN) -> KappaResult:
    """kappa = (p_o - p_e) / (1 - p_e), p_e from each rater's own label shares."""
    if len(first) != len(second):
        raise ValueError(f"the two label lists differ in length ({len(first)} and {len(second)})")
    n = len(first)
    if n == 0:
        raise ValueError("no labelled rows; kappa needs at least one")
    observed = sum(a == b for a, b in zip(first, second)) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    if expected == 1.0:
        return KappaResult(None, n, observed, expected, threshold, False,
                           "kappa undefined: judge and human used a single, identical label on every row")
    kappa = (observed - expected) / (1.0 - expected)
    passed = kappa >= threshold
    reason = "" if passed else f"human spot check: kappa {kappa:.3f} < {threshold:g} ({n} rows)"
    return KappaResult(kappa, n, observed, expected, threshold, passed, reason)


def read_spot_check(path: str | Path, *, judge_column: str = JUDGE_COLUMN, human_column: str = HUMAN_COLUMN,
                    threshold: float = KAPPA_MIN) -> KappaResult:
    """Kappa between two label columns of a spot-check CSV."""
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("spot-check file not found", path=path) from None
    judge, human = [], []
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in (judge_column, human_column) if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(
                f"missing column(s) {', '.join(missing)}; columns are {reader.fieldnames}", path=path
            )
        for row in reader:
            a, b = (
                (row.get(judge_column) or "").strip().lower(),
                (row.get(human_column) or "").strip().lower(),
            )
            if not a or not b:
                empty = judge_column if not a else human_column
                raise InputError(f"empty `{empty}`; label the row or remove it", path=path,
                                 record=f"line {reader.line_num}")
            judge.append(a)
            human.append(b)
    if not judge:
        raise InputError("no labelled rows", path=path)
    return cohens_kappa(judge, human, threshold=threshold)
