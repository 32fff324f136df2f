"""The standard IR measures a study may list in `ir_measures:` (docs/design.md, Evidence metrics).

Scored on chunk-level relevance by harness.metrics.ir_measures_scores, beside each metric set's own metrics,
and named in the per-question table and a plan's tests exactly as written here (e.g. `nDCG@10`). Unset (the
default) adds nothing, so a config without the key keeps its frozen hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.config.fields import ValueCheck, Where

# nDCG, RR and AP read the whole run (to the run depth) or a cut-off; R and P are set measures at a depth
IR_MEASURE_RE = re.compile(r"(?:nDCG|RR|AP)(?:@[1-9][0-9]*)?|(?:R|P)@[1-9][0-9]*")
EXAMPLES = "nDCG@10, RR@10, AP, R@100, P@5"


def ir_measure_problem(name: object) -> str | None:
    """Why `name` is not a listable IR measure, or None when it is."""
    if not isinstance(name, str) or not IR_MEASURE_RE.fullmatch(name):
        return (f"{name!r} is not an IR measure this harness computes: nDCG, RR or AP with an optional "
                f"@cut-off, or R or P with one (e.g. {EXAMPLES})")
    return None


@dataclass(frozen=True)
class IrMeasureName(ValueCheck):
    expected = f"an IR measure ({EXAMPLES})"

    def __call__(self, value: Any, where: Where) -> Any:
        if ir_measure_problem(value) is not None:
            raise where.expected(self.expected, value)
        return value
