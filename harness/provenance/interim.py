"""No interim looks (docs/design.md, Integrity rules): outcome aggregates stay hidden until every cell is
scored.

Which cells the config names and when one counts as scored under the current freeze is the grid's
(harness.grid.states). Anything that prints or writes means, differences or verdicts calls
`require_outcomes_allowed` first; the only way past a missing cell is an explicit deviation, appended
with its reason to DEVIATIONS.md.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from harness.errors import HarnessError
from harness.grid.cells import Cell
from harness.grid.states import unscored_cells
from harness.provenance.freeze import current_frozen_hash
from harness.provenance.release import DEVIATIONS_NAME, record_study_file, require_deviations_kept
from harness.files import atomic_write_text
from harness.study import Study

DEVIATIONS_HEADER = (
    "# Deviations from the registered plan\n\n"
    "Appended by the harness whenever a command ran outside the registered protocol "
    "(for example, outcome aggregates shown before every cell was scored). Never edit past entries.\n"
)
MAX_LISTED = 20


def outcomes_allowed(study: Study) -> tuple[bool, list[Cell]]:
    """(True, []) when every configured cell is scored under the current freeze, else (False, missing)."""
    missing = unscored_cells(study, current_frozen_hash(study))
    return not missing, missing


def describe_missing(missing: list[Cell]) -> str:
    listed = ", ".join(str(c) for c in missing[:MAX_LISTED])
    more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
    return f"{len(missing)} cell(s) not scored under the current freeze: {listed}{more}"


def require_outcomes_allowed(study: Study, *, command: str, deviation_reason: str | None = None) -> bool:
    """Raise HarnessError while cells are missing, unless `deviation_reason` is given, in which case the
    deviation is logged and the caller may proceed. Returns True when the look is a logged deviation."""
    allowed, missing = outcomes_allowed(study)
    if allowed:
        return False
    if not deviation_reason:
        raise HarnessError(
            f"outcome aggregates are withheld until every configured cell is scored (no interim looks); "
            f"{describe_missing(missing)}. To look anyway, mark the run as a deviation with a reason "
            f"(it is appended to {DEVIATIONS_NAME})"
        )
    record_deviation(study, deviation_reason, command, missing=missing)
    return True


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_deviation(study: Study, reason: str, command: str, *, missing: list[Cell] | None = None,
                     frozen_hash: str | None = None) -> Path:
    """Append a dated entry to DEVIATIONS.md in the study root (created with a header on first use) and
    record it in the release record, after checking that no entry was edited since it was recorded. It names
    `frozen_hash`, by default the current one (a forced re-freeze names the hash it is about to write)."""
    if not reason or not reason.strip():
        raise HarnessError("a deviation needs a non-empty reason")
    if not command or not command.strip():
        raise HarnessError("a deviation needs the command it applies to")
    path = study.root / DEVIATIONS_NAME
    require_deviations_kept(study)
    text = path.read_text(encoding="utf-8") if path.exists() else DEVIATIONS_HEADER
    frozen = frozen_hash or current_frozen_hash(study)
    entry = [
        f"\n## {_now_iso()} — `{command.strip()}`\n",
        f"- reason: {' '.join(reason.split())}",
        f"- frozen hash: {frozen or '(not frozen)'}",
    ]
    if missing:
        entry.append(f"- {describe_missing(missing)}")
    atomic_write_text(path, text.rstrip("\n") + "\n" + "\n".join(entry) + "\n")
    record_study_file(study, DEVIATIONS_NAME)
    return path


def deviation_logged(study: Study, command: str, frozen_hash: str) -> bool:
    """Whether DEVIATIONS.md holds an entry of `command` naming `frozen_hash` (record_deviation's format)."""
    path = study.root / DEVIATIONS_NAME
    if not path.is_file():
        return False
    for entry in path.read_text(encoding="utf-8").split("\n## ")[1:]:
        heading, _, body = entry.partition("\n")
        if heading.endswith(f"`{command.strip()}`") and f"\n- frozen hash: {frozen_hash}\n" in f"\n{body}\n":
            return True
    return False
