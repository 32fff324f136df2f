"""Between-run spread of a registered contrast whose arm was generated several times (`repeats`).

The registered test reads the arm's per-question values averaged over its repeats (the pooled contrast,
with its CI from the family's statistics). Here the same contrast is taken once per repeat, on the rows
score keeps per variant (`<arm>@r0`, `<arm>@r1`, ...; harness.pipeline.parts.variants_part_path), over
exactly the questions the registered test uses. Each repeat's estimate is the registered estimator (the
question-weighted mean paired difference in points, harness.inference.bootstrap); no interval is computed
per repeat: the spread across runs is the point. Because the pooling is a per-question mean, the mean of
the repeat estimates equals the pooled estimate.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from harness.errors import HarnessError
from harness.stats.contrast import ResultTable, as_results, paired_differences
from harness.plan.model import TestPlan
from harness.stats.subsets import select_questions


@dataclass(frozen=True)
class RepeatSpread:
    test: str
    repeats: tuple[str, ...]  # variant names, r0 first
    estimates: tuple[float, ...]  # points, one per repeat
    n_questions: int

    @property
    def sd(self) -> float:
        """Sample standard deviation (n - 1) of the repeat estimates."""
        return statistics.stdev(self.estimates)

    @property
    def low(self) -> float:
        return min(self.estimates)

    @property
    def high(self) -> float:
        return max(self.estimates)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.estimates)


def repeat_spread(rows: pd.DataFrame | ResultTable, test: TestPlan,
                  repeated: Mapping[str, Sequence[str]]) -> RepeatSpread:
    """The test's estimate per repeat. `rows` holds both the pooled rows the registered test reads and the
    per-variant rows (arm `<arm>@<variant>`; a variant's clusters are its arm's, so the registered subset
    draws the same clusters from them); `repeated` maps each repeated arm to its variant names. When both
    sides are repeated they must have the same repeats, paired by index."""
    sides = [arm for arm in (test.a, test.b) if arm in repeated]
    if not sides:
        raise HarnessError(f"test {test.id}: neither {test.a} nor {test.b} has repeated generations")
    names = [tuple(repeated[arm]) for arm in sides]
    if len(set(names)) != 1 or len(names[0]) < 2:
        raise HarnessError(
            f"test {test.id}: repeated arms {', '.join(sides)} need the same two or more repeats, "
            f"got {', '.join(map(str, names))}"
        )
    combined = as_results(rows)
    selection = select_questions(combined, test)  # the registered test's questions, as registered
    estimates = []
    n = None
    for variant in names[0]:
        a = f"{test.a}@{variant}" if test.a in repeated else test.a
        b = f"{test.b}@{variant}" if test.b in repeated else test.b
        pairs = paired_differences(
            combined,
            dataset=test.dataset,
            a=a,
            b=b,
            retriever=test.retriever,
            metric=test.metric,
            subset_clusters=selection.clusters,
            strata=selection.strata,
            retriever_b=test.retriever_b,
        )
        if n is not None and len(pairs.diffs) != n:
            raise HarnessError(f"test {test.id}: repeat {variant} has {len(pairs.diffs)} paired questions, "
                               f"the first repeat {n}")
        n = len(pairs.diffs)
        estimates.append(float(pairs.diffs.sum() / n))  # the bootstrap's estimate: sum over questions / n
    assert n is not None  # names[0] holds two or more repeats (refused above otherwise)
    return RepeatSpread(test.id, names[0], tuple(estimates), n)
