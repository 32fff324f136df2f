"""Freezing (docs/design.md, Integrity rules): `freeze` writes the frozen record
(harness.provenance.frozen_record) to frozen_config.json (key-sorted, no timestamps of its own), and every
stage reads the frozen hash from it. harness.provenance.drift refuses to run on drift; every output
records `frozen_hash` and results under two hashes are never combined (harness.provenance.frozen_hashes).
"""

from __future__ import annotations

import re

from typing import Any, Callable

from harness.errors import HarnessError
from harness.files import atomic_write_json, read_json
from harness.grid.arms import arm_kind, arm_prompt_files
from harness.provenance.frozen_record import current_record, hashed_content, record_hash
from harness.provenance.plan_check import check_plan_against_config
from harness.provenance.record_diff import compare_records, format_differences
from harness.provenance.timeline import first_outcome_time
from harness.study import Study


def freeze(study: Study, *, force: bool = False) -> str:
    """Write frozen_config.json from the current inputs and return the frozen hash (`record_hash`).

    The plan and amendments are validated against the config first (plan_check), so a test that names
    an undefined arm, retriever, metric or stratum, or an unknown rule, stops the freeze.

    Inputs that give the frozen hash already recorded write nothing. A record with another hash once
    outcomes exist would orphan them, so it needs `force` (the CLI logs the deviation first, then writes:
    prepare_freeze and write_freeze)."""
    record, digest, before = prepare_freeze(study, force=force)
    if digest != before:
        write_freeze(study, record)
    return digest


def write_freeze(study: Study, record: dict[str, Any]) -> None:
    atomic_write_json(study.frozen_path, record)


TODO_MARKER = re.compile(r"\bTODO\b")
PLAN_PROSE = "PLAN.md"  # beside plan.yaml: the prose a reader checks the registered plan against


def refuse_unfinished_plan(study: Study) -> None:
    """The freeze registers the plan: refused while plan.yaml or PLAN.md still holds a TODO marker (a
    draft is not a registration), naming each file and line."""
    found = []
    for path in (study.plan_path, study.plan_path.parent / PLAN_PROSE):
        if path.is_file():
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            found += [f"  {path}:{n}: {line.strip()[:100]}" for n, line in enumerate(lines, 1)
                      if TODO_MARKER.search(line)]
    if found:
        raise HarnessError("the plan still holds TODO markers; finish it before freezing (the freeze "
                           "registers it):\n" + "\n".join(found))


def prepare_freeze(study: Study, *, force: bool = False, logged: Callable[[str], bool] = lambda digest: False,
                   ) -> tuple[dict[str, Any], str, str | None]:
    """(record, its frozen hash, the hash frozen now or None), written by nobody yet. A changed record once
    outcomes exist is refused unless `force`, or `logged(new hash)`: its deviation is already on record (a
    forced re-freeze that failed after logging it)."""
    study.config  # a config the schema refuses is the first thing to fix
    if not study.plan_path.is_file():
        raise HarnessError(f"{study.plan_path}: missing: register the plan before freezing")
    if not study.selection_path.is_file():
        raise HarnessError(f"{study.selection_path}: missing: run `harness select` before freezing")
    for arm in study.arms:
        arm_kind(study, arm)  # a kind the registry does not know is refused before it is registered
        arm_prompt_files(study, arm)  # a per-arm prompt override must name a file the freeze then hashes
    check_plan_against_config(study)  # a test naming an undefined arm, metric, ... fails now, not at stats
    refuse_unfinished_plan(study)
    record = current_record(study)
    digest = record_hash(record)
    before = None
    if study.frozen_path.is_file():
        old = read_frozen(study)
        before = record_hash(old)
        if before == digest:
            return record, digest, before  # same inputs: the file (and its recorded facts) stays as it is
        if not force and first_outcome_time(study) is not None and not logged(digest):
            changed = compare_records(hashed_content(old), hashed_content(record))
            raise HarnessError(
                f"per-question results already exist under frozen hash {frozen_hash(study)[:12]}; "
                f"re-freezing with {len(changed)} changed input(s) would orphan them:\n"
                f"{format_differences(changed)}\n"
                "pass --force REASON to re-freeze anyway (REASON is logged in DEVIATIONS.md)"
            )
    return record, digest, before


def frozen_hash(study: Study) -> str:
    if not study.frozen_path.is_file():
        raise HarnessError(f"{study.frozen_path}: missing: run `harness freeze` first")
    return record_hash(read_frozen(study))


def current_frozen_hash(study: Study) -> str | None:
    """The frozen hash, or None for a study not frozen yet (whose grid nothing can be stale against)."""
    return frozen_hash(study) if study.frozen_path.is_file() else None


def read_frozen(study: Study) -> dict[str, Any]:
    record = read_json(study.frozen_path)
    if not isinstance(record, dict):
        raise HarnessError(f"{study.frozen_path}: expected a JSON object")
    return record
