"""Statistics of a registered plan: paired contrasts from the per-question table, then Holm and verdicts by
the plan's rules (docs/design.md, Paired differences, and the sections after it).

The estimators themselves (bootstrap, sign-flip, TOST, Holm) are harness.inference, below the pipeline;
this package reads the results and the plan, so it sits above them. Statistical functions return results
only; Holm and verdicts are applied later, by `families`, from the plan (`plan.yaml` plus amendments).
"""

from harness.stats.contrast import ContrastResult, compare, paired_differences

__all__ = ["ContrastResult", "compare", "paired_differences"]
