"""The grid's state as one record, and what the next `make` target would do. Read-only: status
reads manifests and markers and hashes the frozen input files (to say when they drifted), never loads a
dataset, a model or a results table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.config.arm_kinds import HEADER_LED, ArmKindSpec
from harness.config.arms import ALL_DOCUMENTS, documents_of
from harness.grid.cells import Cell, ChunkSet, answer_cells, chunk_sets, configured_cells
from harness.grid.states import (
    ANSWERED, BUILT, MISSING, SCORED, STALE, answer_state, cell_state, chunk_set_manifest, chunk_set_state,
)
from harness.provenance.drift import changed_input_files
from harness.provenance.freeze import current_frozen_hash
from harness.files import read_json
from harness.study import Study
from harness.grid.paths import generations_dir, report_dir, stats_dir

NOT_IMPLEMENTED = "not implemented"


@dataclass(frozen=True)
class ChunkSetStatus:
    chunk_set: ChunkSet
    kind: str
    state: str  # BUILT, STALE, MISSING or NOT_IMPLEMENTED
    chunks: int | None  # from the manifest of a built or stale set
    uses_llm: bool
    llm_calls_needed: int | None  # None: no LLM calls, or not known before the S chunks exist
    llm_calls_cached: int | None  # None: not known until the arm is built
    llm_failures: int | None


@dataclass(frozen=True)
class CellStatus:
    cell: Cell
    state: str  # SCORED, STALE or MISSING; answer cells: ANSWERED, STALE or MISSING


@dataclass(frozen=True)
class GridStatus:
    study: str
    selected: bool
    frozen_hash: str | None
    chunk_sets: list[ChunkSetStatus]
    cells: list[CellStatus]
    answer_cells: list[CellStatus]  # the `reader.cells` of the answer stage (harness.pipeline.answer)
    stats_state: str  # "none", STALE (another freeze) or "released"
    report_written: bool
    generation_cache: dict[str, int]  # model -> cached answers in results/generations/<model>.jsonl
    drifted_files: list[
        str
    ]  # input files whose bytes differ from frozen_config.json (build-arms would refuse)

    def chunk_set_counts(self) -> Counter:
        return Counter(s.state for s in self.chunk_sets)

    def cell_counts(self) -> Counter:
        return Counter(s.state for s in self.cells)

    def answer_counts(self) -> Counter:
        return Counter(s.state for s in self.answer_cells)

    def next_step(self) -> str:
        sets, cells = self.chunk_set_counts(), self.cell_counts()
        if not self.selected:
            return "make select (no selection/selection.json yet)"
        if self.frozen_hash is None:
            return "make freeze (no frozen_config.json yet)"
        if self.drifted_files:
            listed = ", ".join(self.drifted_files[:5]) + (" ..." if len(self.drifted_files) > 5 else "")
            return (
                f"the inputs drifted from the freeze ({len(self.drifted_files)} file(s) changed: {listed}); "
                "every stage refuses to run: revert them, or run `harness freeze` "
                "(`--force REASON` once outcomes exist)"
            )
        if sets[MISSING] or sets[STALE]:
            return f"make build-arms ({_counted(sets, 'chunk set')}){self.planned_note()}"
        if cells[MISSING] or cells[STALE]:
            return f"make score ({_counted(cells, 'cell')})"
        answers = self.answer_counts()
        if answers[MISSING] or answers[STALE]:
            return f"make answer ({_counted(answers, 'answer cell')})"
        if self.stats_state != "released":
            return "make stats (" + ("statistics from another freeze" if self.stats_state == STALE
                                     else "no statistics yet") + ")"
        if not self.report_written:
            return "make report (no report yet)"
        return (
            "nothing to build: every cell is scored and the statistics are released (make audit re-checks "
            "them)"
            + self.planned_note()
        )

    def planned_note(self) -> str:
        """Planned arms are skipped by build-arms and waited for by nothing; say so wherever the next step
        is."""
        arms = sorted({s.chunk_set.arm.name for s in self.chunk_sets if s.state == NOT_IMPLEMENTED})
        return f"; not buildable yet, skipped: {', '.join(arms)}" if arms else ""


def _counted(counts: Counter, noun: str) -> str:
    parts = [
        f"{counts[s]} {noun}s {s}" if counts[s] != 1 else f"1 {noun} {s}"
        for s in (MISSING, STALE)
        if counts[s]
    ]
    return ", ".join(parts)


def _llm_figures(
    kind: ArmKindSpec, manifest: dict[str, Any] | None, s_chunks: int | None, arm_cfg: dict
) -> tuple:
    """(calls needed, calls cached, failures). Before a build the cached share is unknown: cache keys hash
    whole prompts, and an E prompt holds the previous chunk's generated summary."""
    if kind.llm_free:
        return None, None, None
    if manifest is not None and "llm" in manifest:
        cost = manifest["llm"]["cost"]
        return cost.get("calls"), cost.get("calls"), cost.get("failures")  # every answered call is cached
    subset = documents_of(arm_cfg) != ALL_DOCUMENTS  # PF on a sample: its chunk count is unknown here
    per_document = (
        kind.calls_per_document > 0
    )  # M-TP: status reads no dataset, so the document count is unknown
    runs = getattr(arm_cfg, "repeats", None) or 1  # repeat generations: every call once per run
    needed = None if s_chunks is None or subset or per_document else runs * kind.calls_per_chunk * s_chunks
    return needed, None, None


def _header_led_chunk_count(study: Study, dataset: str, built: dict[ChunkSet, dict]) -> int | None:
    """Chunks of any built LLM-free header-led set of the dataset (S, S+T): what an LLM arm annotates."""
    for cs, manifest in built.items():
        kind = cs.arm.kind
        if cs.dataset.name == dataset and kind.llm_free and kind.boundaries == HEADER_LED:
            return int(manifest["chunk_set"]["chunks"])
    return None


def _stats_state(study: Study, current: str | None) -> str:
    released = sorted(stats_dir(study).glob("*.json")) if stats_dir(study).is_dir() else []
    if not released:
        return "none"
    hashes = {(read_json(p) or {}).get("frozen_config_hash") for p in released}
    return "released" if hashes == {current} else STALE


def _cache_sizes(study: Study) -> dict[str, int]:
    folder = generations_dir(study)
    if not folder.is_dir():
        return {}
    sizes = {}
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, "rb") as f:
            sizes[path.stem] = sum(1 for line in f if line.strip())
    return sizes


def grid_status(study: Study) -> GridStatus:
    current = current_frozen_hash(study)
    manifests = {cs: chunk_set_manifest(study, cs) for cs in chunk_sets(study)}
    built = {cs: m for cs, m in manifests.items() if m is not None}
    sets = []
    for cs, manifest in manifests.items():
        kind = cs.arm.kind
        state = chunk_set_state(study, cs, current) if kind.implemented else NOT_IMPLEMENTED
        needed, cached, failures = _llm_figures(
            kind, manifest, _header_led_chunk_count(study, cs.dataset.name, built), cs.arm.config or {}
        )
        chunks = int(manifest["chunk_set"]["chunks"]) if manifest is not None else None
        sets.append(ChunkSetStatus(cs, kind.name, state, chunks, not kind.llm_free, needed, cached, failures))
    cells = [CellStatus(c, cell_state(study, c, current)) for c in configured_cells(study)]
    answers = [CellStatus(c, answer_state(study, c, current)) for c in answer_cells(study)]
    return GridStatus(
        study=study.name,
        selected=study.selection_path.is_file(),
        frozen_hash=current,
        chunk_sets=sets,
        cells=cells,
        answer_cells=answers,
        stats_state=_stats_state(study, current),
        report_written=(report_dir(study) / "report.md").is_file(),
        generation_cache=_cache_sizes(study),
        drifted_files=_drifted_files(study) if current is not None else [],
    )


def _drifted_files(study: Study) -> list[str]:
    """The byte-level drift check (no dataset or model is loaded): paths of changed input files."""

    return [d.keys[-1] for d in changed_input_files(study)]


# --- text ---


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [header] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]


def format_status(status: GridStatus) -> str:
    frozen = status.frozen_hash[:12] if status.frozen_hash else "(not frozen)"
    lines = [f"study {status.study}, frozen config {frozen}", "", "chunk sets"]
    rows = []
    for s in status.chunk_sets:
        llm = f"{_known(s.llm_calls_cached)}/{_known(s.llm_calls_needed)}" if s.uses_llm else None
        rows.append([s.chunk_set.dataset, s.chunk_set.arm, s.kind, s.state, s.chunks, llm, s.llm_failures])
    lines += _table(
        ["dataset", "arm", "kind", "state", "chunks", "LLM calls cached/needed", "failures"], rows
    )
    if status.generation_cache:
        cached = ", ".join(f"{m} {n}" for m, n in status.generation_cache.items())
        lines.append(f"generation cache (answers per model, shared by its arms): {cached}")
    lines += ["", "cells (scored / missing / stale = scored under another freeze; '' = not in the grid)"]
    retrievers = list(dict.fromkeys(c.cell.retriever.name for c in status.cells))
    by_set: dict[ChunkSet, dict[str, str]] = {}
    for c in status.cells:
        by_set.setdefault(ChunkSet(c.cell.dataset, c.cell.arm), {})[c.cell.retriever.name] = c.state
    lines += _table(
        ["dataset", "arm", *retrievers],
        [[cs.dataset, cs.arm, *(states.get(r, "") for r in retrievers)] for cs, states in by_set.items()],
    )
    if status.answer_cells:
        lines += ["", "answer cells (answered / missing / stale = answered under another freeze)"]
        lines += _table(["dataset", "arm", "retriever", "state"],
                        [[*a.cell.names, a.state] for a in status.answer_cells])
    sets, cells, answers = status.chunk_set_counts(), status.cell_counts(), status.answer_counts()
    answered = (f"answer cells: {len(status.answer_cells)} ({_summary(answers, (ANSWERED, STALE, MISSING))})"
                if status.answer_cells else "answer cells: none (no `reader.cells`)")
    lines += [
        "",
        f"chunk sets: {len(status.chunk_sets)} ({_summary(sets, (BUILT, STALE, MISSING, NOT_IMPLEMENTED))}); "
        f"cells: {len(status.cells)} ({_summary(cells, (SCORED, STALE, MISSING))}); {answered}",
        f"next: {status.next_step()}",
    ]
    return "\n".join(lines)


def _known(n: int | None) -> str:
    return "?" if n is None else str(n)


def _summary(counts: Counter, order: tuple[str, ...]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in order if counts[s]) or "none"
