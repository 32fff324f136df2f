"""One audit finding: PASS, FAIL, or NOT VERIFIABLE (the check could not be made, which is never a pass).

Exit codes of `harness audit`: 1 when any check fails, else 3 when any check is not verifiable, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass

PASS = "PASS"
FAIL = "FAIL"
NOT_VERIFIABLE = "NOT VERIFIABLE"
EXIT_NOT_VERIFIABLE = 3  # distinct from 1 (a failed check) and 2 (drift): an auditor must not read it as 0


@dataclass(frozen=True)
class Check:
    subject: str  # what is checked, e.g. "(registration)" or "(results)"
    item: str  # the file or key, e.g. "plan/plan.yaml"
    status: str  # PASS, FAIL or NOT VERIFIABLE
    detail: str

    def line(self) -> str:
        return f"{self.status}  {self.subject}/{self.item}: {self.detail}"


def exit_code(statuses: list[str]) -> int:
    if FAIL in statuses:
        return 1
    return EXIT_NOT_VERIFIABLE if NOT_VERIFIABLE in statuses else 0
