"""`harness audit --rescore K`: re-run K seeded cells from the frozen inputs and compare their bytes.

The plain audit recomputes the statistics from the per-question table; this shows that the table came from
the frozen inputs. K cells (dataset x arm x retriever) are drawn with a recorded seed, `random.Random(seed)
.sample` over the configured cells in grid order. For each one, in a scratch directory and by the stages' own
code: its chunk set (and the sets it is built from) rebuilt by build-arms in replay mode (LLM arms answered
from the released generation cache only: a miss fails the cell naming the key, no model is called), ranked
and scored by the scoring stage (dense vectors encoded afresh), then compared byte for byte with the
released chunk file, run file and per-question rows (CSV and Parquet) of that cell. One PASS/FAIL line per
cell names the first differing file and line. The scratch folder is a hidden temporary folder in the
study root (the stages name their outputs relative to it), removed when the cell is done.

Cells re-ranked by an LLM (the llm-yes reranker) are not drawn: its pair-score cache has no replay mode, so
a miss would call the model; they are counted in the output.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from harness.errors import HarnessError
from harness.files import read_json
from harness.study import Study
from harness.grid.paths import chunks_path, per_question_path, results_dir, run_path
from harness.retrieval.registry import RetrieverContext
from harness.pipeline.score import scopes, score_cell
from harness.grid.results import _csv_text, check_and_sort, read_per_question, to_frame
from harness.arms.build import build_arms, read_chunk_set
from harness.metrics.registry import ScoringCache, budgets_from_config
from harness.llm.base import ReplayMiss
from harness.data.load import load_dataset, read_selection
from harness.grid.arms import arm_kind, source_arm
from harness.grid.cells import configured_cells

DEFAULT_SEED = 2024


@dataclass(frozen=True)
class CellCheck:
    cell: str
    passed: bool
    detail: str


def _llm_reranked(study: Study, retriever: str) -> bool:
    cfg = study.retrievers[retriever]
    return getattr(cfg, "backend", None) == "llm-yes"


def draw_cells(study: Study, k: int, seed: int) -> tuple[list, int]:
    """K cells by the seed (grid order, then Random(seed).sample), and how many were not eligible."""
    cells = configured_cells(study)
    eligible = [c for c in cells if not _llm_reranked(study, c.retriever.name)]
    if k < 1:
        raise HarnessError(f"--rescore {k}: give the number of cells to re-run (at least 1)")
    return random.Random(seed).sample(eligible, min(k, len(eligible))), len(cells) - len(eligible)


def _arms_to_build(study: Study, dataset: str, arm: str) -> list[str]:
    """The chunk set `arm` (the one a cell ranks) and every set it is built from (`of:` chains, a field
    ablation's E), sources first."""
    todo = []
    while True:
        todo.append(arm)
        if not arm_kind(study, arm).derived:
            return todo[::-1]
        arm = source_arm(study, arm, dataset)


def _scratch(study: Study, folder: Path) -> Study:
    """Released model outputs copied in (the generation cache, the reranker's pair scores); no vectors."""
    released = results_dir(study)
    if (released / "generations").is_dir():
        shutil.copytree(released / "generations", folder / "generations")
    for namespace in sorted((released / "embeddings").glob("*/namespace.json")):
        if read_json(namespace).get("kind") != "embedding":
            shutil.copytree(namespace.parent, folder / "embeddings" / namespace.parent.name)
    return Study(study.root, results_root=folder)


def first_difference(released: Path, ours: Sequence[str], label: str, theirs: Sequence[str] | None = None) -> str | None:
    """None when the lines agree, else the first differing line of the released file."""
    if theirs is None:
        if not released.is_file():
            return f"{label}: missing"
        theirs = released.read_text(encoding="utf-8").splitlines()
    for n, (a, b) in enumerate(zip(theirs, ours), start=1):
        if a != b:
            return f"{label} line {n} differs: released {a[:120]!r}, rescored {b[:120]!r}"
    if len(theirs) != len(ours):
        return f"{label}: released {len(theirs)} lines, rescored {len(ours)}"
    return None


def _cell_lines(csv_text: str, dataset: str, arm: str, retriever: str, metrics: set[str]) -> list[str]:
    import csv

    lines = csv_text.splitlines()
    keep = [lines[0]]
    for line, row in zip(lines[1:], csv.reader(lines[1:])):
        if tuple(row[:3]) == (dataset, arm, retriever) and row[6] in metrics:
            keep.append(line)
    return keep


def rescore_cell(study: Study, cell, frozen: str, folder: Path) -> CellCheck:
    scratch = _scratch(study, folder)
    dataset_name, source = cell.dataset.name, cell.arm.ranks
    try:
        build_arms(scratch, datasets=[dataset_name], arms=_arms_to_build(study, dataset_name, source), frozen_hash=frozen,
                   progress=False, replay=True, log=lambda _: None)
    except ReplayMiss as e:
        return CellCheck(str(cell), False, f"rebuilding {dataset_name}/{source}: {e}")
    chunk_file = chunks_path(study, dataset_name, source)
    ours = chunks_path(scratch, dataset_name, source).read_text(encoding="utf-8").splitlines()
    differs = first_difference(chunk_file, ours, str(chunk_file.relative_to(study.root)))
    if differs:
        return CellCheck(str(cell), False, differs)
    dataset = load_dataset(scratch, dataset_name, selection=read_selection(scratch))
    scoped = scopes(dataset, read_chunk_set(scratch, dataset, source, frozen_hash=frozen))
    rows, _variant_rows, _counts = score_cell(
        scratch, dataset, cell, scoped, RetrieverContext.for_study(scratch, progress=False),
        ScoringCache(), budgets_from_config(study.config.budgets, dataset.metric_set), run_depth=study.config.run_depth)
    run_file = run_path(study, *cell.names)
    ours = run_path(scratch, *cell.names).read_text(encoding="utf-8").splitlines()
    differs = first_difference(run_file, ours, str(run_file.relative_to(study.root)))
    if differs:
        return CellCheck(str(cell), False, differs)
    metrics = {r.metric for r in rows}
    ours = _csv_text(check_and_sort(to_frame(rows), "rescored rows")).splitlines()
    key = (*cell.names, metrics)
    for path in (per_question_path(study, dataset_name, "csv"), per_question_path(study, dataset_name, "parquet")):
        label = str(path.relative_to(study.root))
        if not path.is_file():
            return CellCheck(str(cell), False, f"{label}: missing")
        text = path.read_text(encoding="utf-8") if path.suffix == ".csv" else _csv_text(read_per_question(path))
        differs = first_difference(path, ours, label + (" (the cell's rows)" if path.suffix == ".csv"
                                                        else " (the cell's rows, as CSV)"), _cell_lines(text, *key))
        if differs:
            return CellCheck(str(cell), False, differs)
    return CellCheck(str(cell), True, f"chunk set {source}, run file and {len(rows)} per-question rows identical")


def rescore(study: Study, k: int, seed: int, frozen: str, *, log: Callable[[str], None] = print) -> list[CellCheck]:
    cells, ineligible = draw_cells(study, k, seed)
    log(f"rescore: {len(cells)} cell(s) drawn with seed {seed}; {ineligible} cell(s) re-ranked by an LLM not "
        "eligible (its pair scores have no replay mode)")
    checks = []
    for cell in cells:
        # inside the study root (the stages name their outputs relative to it), removed afterwards
        with tempfile.TemporaryDirectory(prefix=".rescore-", dir=study.root) as tmp:
            checks.append(rescore_cell(study, cell, frozen, Path(tmp)))
    return checks
