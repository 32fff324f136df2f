"""No interim looks (DESIGN section 9): outcome aggregates stay hidden until every cell is scored.

A cell is (dataset, arm, retriever) for every dataset, arm and retriever the config names; an arm or
retriever entry may restrict itself with `datasets: [...]`. A cell counts as scored when its run file
exists and `score` has written its completion marker,
results/per_question/<dataset>/<arm>__<retriever>.done.json, under the current frozen hash. Anything
that prints or writes means, differences or verdicts calls `require_outcomes_allowed` first; the only
way past a missing cell is an explicit deviation, appended with its reason to DEVIATIONS.md.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, NamedTuple

from harness.config.arms import ArmConfig
from harness.config.retrievers import RetrieverConfig
from harness.errors import HarnessError
from harness.provenance.files import atomic_write_json, atomic_write_text, read_json
from harness.provenance.freeze import frozen_hash
from harness.study import Study

DEVIATIONS_NAME = "DEVIATIONS.md"
DEVIATIONS_HEADER = (
    "# Deviations from the registered plan\n\n"
    "Appended by the harness whenever a command ran outside the registered protocol "
    "(for example, outcome aggregates shown before every cell was scored). Never edit past entries.\n"
)
MAX_LISTED = 20


class Cell(NamedTuple):
    dataset: str
    arm: str
    retriever: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.arm}/{self.retriever}"


def done_marker_path(study: Study, cell: Cell) -> Path:
    return study.results / "per_question" / cell.dataset / f"{cell.arm}__{cell.retriever}.done.json"


def mark_cell_done(study: Study, cell: Cell, *, frozen_hash: str, n_questions: int) -> Path:
    """Written by `score` after a cell's per-question rows are safely on disk."""
    path = done_marker_path(study, cell)
    atomic_write_json(
        path,
        {**cell._asdict(), "frozen_hash": frozen_hash, "n_questions": n_questions, "completed_at": _now_iso()},
    )
    return path


def applies_to(entry: ArmConfig | RetrieverConfig, dataset: str, arm: str | None = None) -> bool:
    """Arms and retrievers may name `datasets: [...]`, retrievers also `arms: [...]`; by default they
    apply everywhere."""
    only, arms = entry.datasets, getattr(entry, "arms", None)
    return (only is None or dataset in only) and (arm is None or arms is None or arm in arms)


def configured_cells(study: Study) -> list[Cell]:
    """Every cell the config names, in config order (datasets, then arms, then retrievers)."""
    return [
        Cell(dataset, arm, retriever)
        for dataset in study.datasets
        for arm, arm_cfg in study.arms.items()
        if applies_to(arm_cfg, dataset)
        for retriever, retriever_cfg in study.retrievers.items()
        if applies_to(retriever_cfg, dataset, arm)
    ]


def _current_frozen_hash(study: Study) -> str | None:
    return frozen_hash(study) if study.frozen_path.is_file() else None


def _scored(study: Study, cell: Cell, current_hash: str | None) -> bool:
    marker = done_marker_path(study, cell)
    if not (study.run_path(*cell).is_file() and marker.is_file()):
        return False
    record = read_json(marker)
    if not isinstance(record, dict):
        raise HarnessError(f"{marker}: expected a JSON object")
    return current_hash is None or record.get("frozen_hash") == current_hash


def outcomes_allowed(study: Study) -> tuple[bool, list[Cell]]:
    """(True, []) when every configured cell is scored under the current freeze, else (False, missing)."""
    current_hash = _current_frozen_hash(study)
    missing = [cell for cell in configured_cells(study) if not _scored(study, cell, current_hash)]
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


def record_deviation(study: Study, reason: str, command: str, *, missing: list[Cell] | None = None) -> Path:
    """Append a dated entry to DEVIATIONS.md in the study root (created with a header on first use)."""
    if not reason or not reason.strip():
        raise HarnessError("a deviation needs a non-empty reason")
    if not command or not command.strip():
        raise HarnessError("a deviation needs the command it applies to")
    path = study.root / DEVIATIONS_NAME
    text = path.read_text(encoding="utf-8") if path.exists() else DEVIATIONS_HEADER
    frozen = _current_frozen_hash(study)
    entry = [
        f"\n## {_now_iso()} — `{command.strip()}`\n",
        f"- reason: {' '.join(reason.split())}",
        f"- frozen hash: {frozen or '(not frozen)'}",
    ]
    if missing:
        entry.append(f"- {describe_missing(missing)}")
    atomic_write_text(path, text.rstrip("\n") + "\n" + "\n".join(entry) + "\n")
    return path
