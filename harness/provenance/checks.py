"""One audit finding: PASS, FAIL, or NOT VERIFIABLE (the check could not be made, which is never a pass).
Every check of `harness audit` is one of these: the anchors, the re-derivations, each family's rows and each
rescored cell.

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

    @classmethod
    def judged(cls, subject: str, item: str, passed: bool, detail: str) -> Check:
        """A check that was made: PASS or FAIL."""
        return cls(subject, item, PASS if passed else FAIL, detail)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def line(self) -> str:
        return f"{self.status}  {self.subject}/{self.item}: {self.detail}"


def exit_code(statuses: list[str]) -> int:
    if FAIL in statuses:
        return 1
    return EXIT_NOT_VERIFIABLE if NOT_VERIFIABLE in statuses else 0
