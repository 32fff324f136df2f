"""The audit's re-derivations: released records recomputed from what they were derived from, and compared.

A content hash shows that a file is the one recorded; it cannot show that the record was derived honestly,
because whoever edits a file can record it afresh. So `harness audit` recomputes, by the stages' own code
and without a model call (docs/integrity.md, "What the audit re-derives"):

- the selection, drawn again from each dataset's seed, data and exclusions (harness.data.selection), and
  compared with selection/selection.json; a question or cluster removed or added is named;
- each dataset's per-question table, assembled again from its parts (harness.pipeline.table), and compared
  row by row with results/per_question/<dataset>.parquet and .csv;
- the reader's and the judge's acceptance records, recomputed from their control answers replayed from the
  generation cache (harness.pipeline.answer's own controls), and compared with
  results/answers/reader_acceptance.json, results/judges/acceptance.json and results/judges/controls.jsonl;
- every chunk set built by a model call, rebuilt in a scratch folder by build-arms in replay mode from the
  released generation cache, and compared line by line with the released chunk file: a cache edited
  without rebuilding the arms fails here.

What is not re-derived here: the other chunk sets, run files and per-question parts (`audit --rescore`,
harness.pipeline.rescore), and a generation cache edited *and* every arm rebuilt from it, which agrees with
itself and is caught only by the release record's hash.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from contextlib import ExitStack
from itertools import zip_longest
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pandas as pd

from harness.arms.build import build_dataset_arms, sources_first
from harness.data.load import LoadedDataset, load_dataset, read_selection
from harness.data.selection import draw_selection
from harness.errors import HarnessError
from harness.files import jsonl_lines, read_json
from harness.grid.arms import arm_kind, source_arm
from harness.grid.cells import chunk_sets, configured_cells
from harness.grid.paths import (
    chunks_path, judge_acceptance_path, judges_dir, per_question_path, reader_acceptance_path, results_dir,
)
from harness.grid.results import TEXT, _csv_blocks, read_per_question
from harness.grid.states import unscored_cells
from harness.llm.base import ReplayMiss
from harness.pipeline.answer import (
    JUDGE_CONTROLS_FILE, judge_acceptance_entry, open_instruments, run_controls,
)
from harness.pipeline.reader_controls import reader_acceptance_record
from harness.pipeline.table import assembled_frame
from harness.provenance.checks import FAIL, PASS, Check
from harness.retrieval.chunk_vectors import chunk_embedder
from harness.study import Study

SUBJECT = "(re-derived)"
SHOWN = 5  # ids named in a message before "and N more"
SHOWN_CHARS = 160  # of a differing line


def rederive(study: Study, frozen: str) -> list[Check]:
    """Every re-derivation of this module, one PASS or FAIL per released record."""
    return [*selection_checks(study), *table_checks(study, frozen), *acceptance_checks(study, frozen),
            *model_chunk_set_checks(study, frozen)]


# --- comparing -------------------------------------------------------------------------------------------


def first_difference(released: Iterable[str], ours: Iterable[str], label: str) -> str | None:
    """None when the two sequences of lines agree, else where they first differ (lines counted from 1)."""
    n = 0
    for n, (theirs, mine) in enumerate(zip_longest(released, ours), start=1):
        if theirs is None:
            return f"{label}: ends after line {n - 1}, re-derived line {n} is {mine[:120]!r}"
        if mine is None:
            return (f"{label}: line {n} {theirs[:120]!r} is not re-derived "
                    f"(the re-derived file ends at line {n - 1})")
        if theirs != mine:
            # a long line (a chunk's JSON) is shown from a little before where it differs
            first = next(i for i, (a, b) in enumerate(zip_longest(theirs, mine)) if a != b)
            start = 0 if max(len(theirs), len(mine)) <= SHOWN_CHARS else max(0, first - 40)
            at = f" from character {start + 1}" if start else ""
            return f"{label} line {n} differs{at}: released {theirs[start:start + SHOWN_CHARS]!r}, " \
                   f"re-derived {mine[start:start + SHOWN_CHARS]!r}"
    return None


def text_lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8", newline="") as f:
        for line in f:
            yield line.rstrip("\n")


def blocks_lines(blocks: Iterable[str]) -> Iterator[str]:
    """The lines of a text written in blocks that each end with a newline (split at newlines only, as a
    file is read)."""
    for block in blocks:
        lines = block.split("\n")
        yield from lines[:-1] if lines[-1] == "" else lines


def table_difference(released: pd.DataFrame, ours: pd.DataFrame, label: str) -> str | None:
    """None when two per-question frames write the same CSV text, else where their CSV lines first differ.
    The same ids and the same value bits write the same text: that is checked at C speed, and only frames
    that differ are written out to name the line."""
    if len(released) == len(ours) and all(released[c].tolist() == ours[c].tolist() for c in TEXT) \
            and released["value"].to_numpy().tobytes() == ours["value"].to_numpy().tobytes():
        return None
    return first_difference(blocks_lines(_csv_blocks(released)), blocks_lines(_csv_blocks(ours)), label)


def json_difference(released: Any, ours: Any, where: str = "") -> str | None:
    """The first key path where two JSON values differ, with both values (None: equal)."""
    if isinstance(released, dict) and isinstance(ours, dict):
        for key in sorted(set(released) | set(ours), key=str):
            if key not in ours:
                return f"{where}{key}: released {_short(released[key])}, not re-derived"
            if key not in released:
                return f"{where}{key}: missing, re-derived {_short(ours[key])}"
            found = json_difference(released[key], ours[key], f"{where}{key}.")
            if found:
                return found
        return None
    if isinstance(released, list) and isinstance(ours, list) and len(released) == len(ours):
        for i, (a, b) in enumerate(zip(released, ours)):
            found = json_difference(a, b, f"{where}{i}.")
            if found:
                return found
        return None
    if type(released) is type(ours) and (released == ours or (isinstance(ours, float) and math.isnan(ours)
                                                              and math.isnan(released))):
        return None
    return f"{where.rstrip('.') or '(the record)'}: released {_short(released)}, re-derived {_short(ours)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _named(ids: Iterable[str]) -> str:
    ids = list(ids)
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


# --- the selection ---------------------------------------------------------------------------------------


def selection_checks(study: Study) -> list[Check]:
    path = study.selection_path
    item = str(path.relative_to(study.root)) if path.is_relative_to(study.root) else str(path)
    if not path.is_file():
        # `harness select` never ran: every eligible question is used, there is no sample to re-draw
        return []
    try:
        drawn = draw_selection(study)
    except HarnessError as e:
        return [Check(SUBJECT, item, FAIL, f"cannot be drawn again from the config: {e}")]
    released = read_json(path)
    if not isinstance(released, dict) or not isinstance(released.get("datasets"), dict):
        return [Check(SUBJECT, item, FAIL, "not a selection record (no `datasets` object)")]
    problems = []
    for name in sorted(set(released["datasets"]) | set(drawn["datasets"])):
        mine, theirs = drawn["datasets"].get(name), released["datasets"].get(name)
        if mine is None or theirs is None:
            problems.append(f"dataset {name}: {'not configured' if mine is None else 'absent from the file'}")
            continue
        problems += [f"{name}: {p}" for p in _selection_differences(theirs, mine)]
    rest = json_difference({k: v for k, v in released.items() if k != "datasets"},
                           {k: v for k, v in drawn.items() if k != "datasets"})
    problems += [rest] if rest else []
    if problems:
        return [
            Check(
                SUBJECT,
                item,
                FAIL,
                "differs from the draw by its seed, data and exclusions: "
                + "; ".join(problems[:SHOWN])
                + (f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""),
            )
        ]
    sizes = ", ".join(f"{n} {_selected_count(e)}" for n, e in sorted(drawn["datasets"].items()))
    return [
        Check(SUBJECT, item, PASS, f"equal to the draw by each dataset's seed, data and exclusions ({sizes})")
    ]


def _selected_count(entry: dict) -> int:
    parts = entry["domains"].values() if isinstance(entry.get("domains"), dict) else [entry]
    return sum(len(p.get("selected", ())) for p in parts)


def _selection_differences(released: Any, drawn: Any, where: str = "") -> list[str]:
    """Lists of ids compared as sets (naming what one side lacks) and in order; other values by value."""
    if isinstance(released, dict) and isinstance(drawn, dict):
        out = []
        for key in sorted(set(released) | set(drawn), key=str):
            if key not in released or key not in drawn:
                out.append(f"`{where}{key}` {'absent from the file' if key not in released else 'not drawn'}")
            else:
                out += _selection_differences(released[key], drawn[key], f"{where}{key}.")
        return out
    label = where.rstrip(".")
    if isinstance(released, list) and isinstance(drawn, list) and released != drawn:
        removed = [str(x) for x in drawn if x not in released]
        added = [str(x) for x in released if x not in drawn]
        parts = ([f"lacks {_named(removed)}"] if removed else []) + (
            [f"adds {_named(added)}"] if added else []
        )
        return [f"`{label}` " + (" and ".join(parts) if parts else "holds the drawn ids in another order")]
    if released != drawn:
        return [f"`{label}` is {_short(released)}, drawn {_short(drawn)}"]
    return []


# --- the per-question tables -----------------------------------------------------------------------------


def table_checks(study: Study, frozen: str) -> list[Check]:
    checks = []
    for name in study.config.datasets:
        parquet, csv = per_question_path(study, name, "parquet"), per_question_path(study, name, "csv")
        cells = [c for c in configured_cells(study) if c.dataset.name == name]
        if (not parquet.is_file() and not csv.is_file()) or unscored_cells(study, frozen, cells):
            # no table a full grid assembles: the grid check fails it, or it was released as a deviation
            continue
        try:
            expected = assembled_frame(study, name, frozen)
        except HarnessError as e:
            checks.append(Check(SUBJECT, f"results/per_question/{name}", FAIL,
                                f"cannot be assembled from its parts: {e}"))
            continue
        for path in (parquet, csv):
            label = str(path.relative_to(results_dir(study).parent))
            if not path.is_file():
                checks.append(Check(SUBJECT, label, FAIL, "missing"))
                continue
            differs = (
                first_difference(text_lines(path), blocks_lines(_csv_blocks(expected)), label)
                if path.suffix == ".csv"
                else table_difference(read_per_question(path), expected, label + " (as CSV)")
            )
            checks.append(
                Check(SUBJECT, label, FAIL, f"not the table its parts assemble to: {differs}")
                if differs
                else Check(SUBJECT, label, PASS, f"{len(expected)} rows, equal to what its parts assemble to")
            )
    return checks


# --- the instruments' acceptance -------------------------------------------------------------------------


def acceptance_checks(study: Study, frozen: str) -> list[Check]:
    """The reader's and the judge's control answers replayed from the cache, rescored, compared with the
    records."""
    reader_path = reader_acceptance_path(study)
    judge_path, controls_path = judge_acceptance_path(study), judges_dir(study) / JUDGE_CONTROLS_FILE
    if not study.config.reader.cells or not (reader_path.is_file() or judge_path.is_file()):
        # nothing answered: no instrument record to check (the grid and plan checks see what is missing)
        return []
    root = results_dir(study).parent
    try:
        with ExitStack() as stack:
            instruments = open_instruments(study, stack, replay=True)
            controls = run_controls(study, instruments, read_selection(study))
    except (ReplayMiss, HarnessError) as e:
        return [
            Check(
                SUBJECT, "(instrument controls)", FAIL, f"cannot be replayed from the generation cache: {e}"
            )
        ]
    checks = [
        _record_check(
            reader_path,
            root,
            reader_acceptance_record(instruments.reader_summary, controls.reader_rates, frozen_hash=frozen),
            "the reader's control answers",
        )
    ]
    if controls.judged_any:
        judge = study.config.judge.name
        entry = judge_acceptance_entry(study, controls.judge_scores)
        released = read_json(judge_path) if judge_path.is_file() else None
        checks.append(_record_check(judge_path, root, entry, "the judge's control verdicts",
                                    released=released.get(judge) if isinstance(released, dict) else None,
                                    key=f" (entry {judge!r})"))
        label = str(controls_path.relative_to(root))
        differs = (
            f"{label}: missing"
            if not controls_path.is_file()
            else first_difference(
                text_lines(controls_path), blocks_lines([jsonl_lines(controls.judge_rows)]), label
            )
        )
        checks.append(
            Check(SUBJECT, label, FAIL, f"not the replayed controls: {differs}")
            if differs
            else Check(
                SUBJECT, label, PASS, f"{len(controls.judge_rows)} verdicts, equal to the replayed controls"
            )
        )
    return checks


def _record_check(
    path: Path, root: Path, ours: Any, source: str, *, released: Any = ..., key: str = ""
) -> Check:
    label = str(path.relative_to(root))
    if released is ...:
        released = read_json(path) if path.is_file() else None
    if released is None:
        return Check(SUBJECT, label, FAIL, f"missing{key}: it cannot be compared with {source}")
    differs = json_difference(released, ours)
    if differs:
        return Check(
            SUBJECT, label, FAIL, f"edited{key}: not what {source} replayed from the cache give: {differs}"
        )
    return Check(SUBJECT, label, PASS, f"equal{key} to what {source} replayed from the cache give")


# --- chunk sets built by a model -------------------------------------------------------------------------


def model_chunk_set_checks(study: Study, frozen: str) -> list[Check]:
    """Every built chunk set of an arm that calls a model, rebuilt from the generation cache (replay) and
    compared with the released one; the sets it is built from are rebuilt first, in the scratch folder."""
    todo = [cs for cs in chunk_sets(study) if cs.arm.kind.needs_model
            and chunks_path(study, *cs.names).is_file()]
    if not todo:
        return []
    checks = []
    root = results_dir(study).parent
    # inside the study root (the stages name their outputs relative to it), removed afterwards
    with tempfile.TemporaryDirectory(prefix=".rederive-", dir=study.root) as tmp:
        scratch = scratch_study(study, Path(tmp))
        selection = read_selection(study)
        for dataset in dict.fromkeys(cs.dataset.name for cs in todo):
            arms = [cs.arm.name for cs in todo if cs.dataset.name == dataset]
            failed = build_in_scratch(
                scratch, load_dataset(scratch, dataset, selection=selection), arms, frozen
            )
            for arm in arms:
                path = chunks_path(study, dataset, arm)
                label = str(path.relative_to(root))
                if arm in failed:
                    checks.append(Check(SUBJECT, label, FAIL, failed[arm]))
                    continue
                differs = first_difference(
                    text_lines(path), text_lines(chunks_path(scratch, dataset, arm)), label
                )
                checks.append(Check(SUBJECT, label, FAIL, f"not what the generation cache replays: {differs}")
                              if differs else
                              Check(SUBJECT, label, PASS, "equal to its rebuild from the generation cache"))
    return checks


def scratch_study(study: Study, folder: Path) -> Study:
    """The study with its results in `folder`, holding a copy of the released generation caches (what a
    replay answers from; the released files are never written)."""
    released = results_dir(study) / "generations"
    if released.is_dir():
        shutil.copytree(released, folder / "generations")
    return Study(study.root, results_root=folder)


def build_in_scratch(
    scratch: Study, dataset: LoadedDataset, arms: Sequence[str], frozen: str
) -> dict[str, str]:
    """Build `arms` of the dataset, and the arms they are built from, in the scratch study in replay mode,
    each once (one build-arms pass, resumed past an arm the cache cannot rebuild); returns {arm: why it
    could not be built} for a cache miss and for the arms built from it."""
    needed: list[str] = []
    for arm in arms:
        chain = [arm]
        while arm_kind(scratch, chain[-1]).derived:
            chain.append(source_arm(scratch, chain[-1], dataset.name))
        needed += [a for a in reversed(chain) if a not in needed]
    failed: dict[str, str] = {}
    while True:
        todo = [a for a in sources_first(scratch, dataset.name, needed)
                if a not in failed and not chunks_path(scratch, dataset.name, a).is_file()]
        for arm in todo:  # built from an arm that failed: not built
            if (
                arm_kind(scratch, arm).derived
                and (source := source_arm(scratch, arm, dataset.name)) in failed
            ):
                failed[arm] = f"not rebuilt: the chunk set it is built from, {source}, could not be"
        todo = [a for a in todo if a not in failed]
        if not todo:
            return failed
        try:
            build_dataset_arms(scratch, dataset, todo, frozen_hash=frozen, progress=False, replay=True,
                               log=lambda _: None, embed_chunks=chunk_embedder(scratch))
        except ReplayMiss as e:
            # build_dataset_arms goes in sources_first order: the first arm not written is the one that missed
            missed = next(a for a in todo if not chunks_path(scratch, dataset.name, a).is_file())
            failed[missed] = f"cannot be rebuilt from the generation cache: {e}"
