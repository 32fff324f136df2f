"""`score`: every dataset x arm x retriever cell of the grid -> run file + per-question rows.

A rerun skips the cells the grid (harness.grid.states) counts as scored under the current frozen
hash, so an interrupted scoring run resumes. At the end the parts of exactly the configured cells (and the
answer stage's rows, harness.pipeline.table) are assembled into results/per_question/<dataset>.parquet and
.csv, with a sidecar <dataset>.manifest.json recording the frozen hash, the cells, every cell's counts (from
its done marker), question counts and retriever provenance.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import groupby
from typing import Any, Callable, ClassVar, Mapping, Protocol, Sequence

from harness.arms.addon_descriptives import summarise_counts
from harness.arms.build import read_chunk_set
from harness.config.executor import Executor
from harness.data.load import LoadedDataset, load_dataset, read_selection
from harness.data.model import Chunk, Question
from harness.errors import HarnessError
from harness.memory import release_freed_memory
from harness.metrics.ir_measures_scores import chunks_by_doc, ir_scores, qrels_lines, question_qrels
from harness.metrics.registry import ScoringCache, budgets_from_config, score_question
from harness.grid.cells import Cell, arm_spec, cell_of, configured_cells
from harness.grid.paths import (
    chunk_manifest_path, per_question_dir, qrels_path, results_dir, run_path, runs_dir,
)
from harness.grid.states import SCORED, cell_counts, cell_state, mark_cell_done
from harness.pipeline.executors import is_local, local_workers
from harness.pipeline.addon_cells import (
    ExpandedRanking, chunk_variants, expanded_run_block, inserted_in_head, mean_over_variants,
)
from harness.pipeline.parts import write_part, write_variants_part
from harness.pipeline.table import assemble_per_question, update_manifest
from harness.grid.results import ResultRow
from harness.files import atomic_write_text, read_json, remove_stale_temporaries, sha256_text
from harness.provenance.inputs import plugin_record, unwritten_files
from harness.provenance.timeline import record_first_outcome
from harness.retrieval.base import Ranking, search_batch
from harness.retrieval.expansion import ChunkPositions
from harness.retrieval.registry import RetrieverContext, embedding_retrievers
from harness.retrieval.runfile import ranking_block, write_run_blocks
from harness.study import Study
from harness.task_runners import ray_session, run_in_processes, run_on_ray


# Questions of a scope ranked together: a scope of many questions (a pooled corpus) would otherwise hold every
# question's full ranking at once, and a fusion's members' too, for each variant (ScopeIndex.search_many: the
# rankings are the same however the questions are batched).
QUESTIONS_PER_SEARCH = 64


class _Ranked(Sequence):
    """A ranking's chunks, best first, materialised (and ordered, Ranking.position) only where the metrics
    look."""

    def __init__(self, chunks: Sequence[Chunk], ranking: Ranking):
        self._chunks, self._ranking = chunks, ranking

    def __len__(self) -> int:
        return len(self._ranking)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._chunks[self._ranking.position(r)] for r in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._chunks[self._ranking.position(i)]


@dataclass(frozen=True)
class Scope:
    key: str
    chunks: list[Chunk]  # corpus order
    questions: list[Question]


def scopes(dataset: LoadedDataset, chunks: Sequence[Chunk]) -> list[Scope]:
    """Group questions by their scope; each scope's chunks keep corpus order (doc_id, then position)."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    groups: dict[tuple[str, ...], list[Question]] = defaultdict(list)
    for q in dataset.questions:
        groups[q.scope].append(q)
    out = []
    for scope in sorted(groups):
        key = scope[0] if len(scope) == 1 else f"{len(scope)} docs {sha256_text(chr(10).join(scope))[:12]}"
        out.append(Scope(key, [c for d in sorted(scope) for c in by_doc.get(d, [])], groups[scope]))
    return out


def score_cell(
    study: Study, dataset: LoadedDataset, cell: Cell, scoped: list[Scope],
    context: RetrieverContext, cache: ScoringCache, budgets: tuple[int, ...], *, run_depth: int,
) -> tuple[list[ResultRow], list[ResultRow], dict[str, Any]]:
    """Rank one cell's questions in their scopes (the chunk set `scoped` is the one the cell ranks:
    `cell.arm.ranks`) and score them; writes the cell's run file."""
    return score_cells(study, dataset, [cell], scoped, context, cache, budgets, run_depth=run_depth)[0]


def score_cells(
    study: Study, dataset: LoadedDataset, cells: Sequence[Cell], scoped: list[Scope],
    context: RetrieverContext, cache: ScoringCache, budgets: tuple[int, ...], *, run_depth: int,
) -> list[tuple[list[ResultRow], list[ResultRow], dict[str, Any]]]:
    """score_cell for several cells of one arm at once, question batch by question batch: a fusion or a
    reranker then reads its members' rankings of the batch from their own cells (search_batch) instead of
    ranking again. Each cell's rows, counts and run file are those it gets alone."""
    if len({c.arm.name for c in cells}) > 1:
        raise ValueError(f"score_cells takes the cells of one arm, got {sorted({c.arm.name for c in cells})}")
    context.add_documents(dataset.documents)  # late chunking pools document tokens (harness.retrieval.late)
    if cells:  # a run file is per arm and keyed by question (harness.retrieval.outside)
        context.rank_arm(
            dataset.name, cells[0].arm.name, dataset.questions, [c for s in scoped for c in s.chunks]
        )
    scoring = [_CellScoring(study, dataset, cell, context, cache, budgets, run_depth) for cell in cells]
    expands = bool(cells) and bool(cells[0].arm.expansion)
    for scope in scoped:
        variants = chunk_variants(scope.chunks)  # RM: one chunk set per seed, averaged per question below
        # an expansion arm's cells expand over the same positions (each document's key links found once)
        positions = {v: ChunkPositions(chunks) for v, chunks in variants} if expands else {}
        for one in scoring:
            one.open_scope(scope, variants, positions)
        for first in range(0, len(scope.questions), QUESTIONS_PER_SEARCH):
            batch = scope.questions[first : first + QUESTIONS_PER_SEARCH]
            for one in scoring:
                one.score_batch(scope, variants, batch)
        # every cell is past this scope: its indexes (every retriever's, per variant) are not needed again
        for one in scoring:
            one.indexes = {}
        if context.memo is not None:
            context.memo.clear()
    return [one.finish() for one in scoring]


class _CellScoring:
    """One cell's share of score_cells: its indexes per scope, and the rows, run blocks and counts so far."""

    def __init__(self, study: Study, dataset: LoadedDataset, cell: Cell, context: RetrieverContext,
                 cache: ScoringCache, budgets: tuple[int, ...], run_depth: int):
        _, self.arm_name, self.retriever_name = cell.names
        self.study, self.dataset, self.cell, self.cache, self.budgets = study, dataset, cell, cache, budgets
        self.run_depth = run_depth
        self.retriever = context.get(self.retriever_name)
        self.tag = f"{self.arm_name}__{self.retriever_name}"
        self.mode = (
            cell.arm.expansion
        )  # E+KX, E+AX, E+SX: expand the ranked list (harness.pipeline.addon_cells)
        self.run_blocks, self.rows, self.variant_rows = [], [], []
        self.counts: dict[str, Any] = {"questions": 0, "questions_empty_scope": 0, "questions_outside_arm": 0}
        self.inserted: list[int] = []
        self.averaged: list[str] = []  # variants averaged per question (RM's seeds)
        self.qrels: dict[str, dict[str, int]] = {}  # run-file qid -> relevant chunk ids (`ir_measures:` only)
        self.by_doc_of: dict[str, dict[str, list[Chunk]]] = {}  # per variant, with `ir_measures:` only
        # the open scope's, per variant (open_scope)
        self.indexes: dict[str, Any] = {}
        self.ids_of: dict[str, list[str]] = {}
        self.chunk_sets: dict[str, ChunkPositions] = {}
        self.by_id: dict[str, Chunk] = {}
        # per embedding retriever, the (variant, chunk id)s it indexed and those cut to its window
        self.window: dict[str, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {}

    def open_scope(self, scope: Scope, variants: list[tuple[str, list[Chunk]]],
                   positions: dict[str, ChunkPositions]) -> None:
        if not scope.chunks:
            # an arm built on a sample of documents (`documents: N`) has no results, not zeros, for questions
            # on
            # the other documents; the plan's subset pairs it on its sample (and names any shortfall)
            if self.cell.arm.sampled:
                self.counts["questions_outside_arm"] += len(scope.questions)
            return
        self.indexes = {v: self.retriever.index(scope.key + v, chunks) for v, chunks in variants}
        for v, chunks in variants:
            for embedder, flags in self.indexes[v].over_window().items():
                indexed, over = self.window.setdefault(embedder, (set(), set()))
                indexed.update((v, c.chunk_id) for c in chunks)
                over.update((v, c.chunk_id) for c, cut in zip(chunks, flags.tolist()) if cut)
        self.ids_of = {v: [c.chunk_id for c in chunks] for v, chunks in variants}
        if self.study.config.ir_measures:  # relevance reads the scope's chunks by document, once per scope
            self.by_doc_of = {v: chunks_by_doc(chunks) for v, chunks in variants}
        self.chunk_sets = positions
        self.by_id = {c.chunk_id: c for c in scope.chunks} if self.mode else {}
        self.averaged += [v[1:] for v, _ in variants if v and v[1:] not in self.averaged]

    def score_batch(
        self, scope: Scope, variants: list[tuple[str, list[Chunk]]], batch: Sequence[Question]
    ) -> None:
        if not scope.chunks and self.cell.arm.sampled:
            return
        dataset, mode, run_depth = self.dataset, self.mode, self.run_depth
        if scope.chunks:
            queries = [asked.query for asked in batch]
            rankings = {v: search_batch(index, queries) for v, index in self.indexes.items()}
        for i, q in enumerate(batch):
            self.counts["questions"] += 1
            if not scope.chunks:
                self.counts["questions_empty_scope"] += 1
                per_variant = [score_question(dataset.metric_set, q, [], self.budgets, cache=self.cache)
                               + self._ir_values(q, q.qid, {}, [])]
            else:
                per_variant = []
                for v, chunks in variants:
                    ids = self.ids_of[v]
                    ranked: Sequence[Chunk] = _Ranked(chunks, rankings[v][i])
                    if mode:
                        ranked = ExpandedRanking(mode, rankings[v][i], ids, self.chunk_sets[v], self.by_id)
                        self.run_blocks.append(
                            expanded_run_block(q.qid + v, ranked, self.tag, depth=run_depth)
                        )
                        self.inserted += inserted_in_head(ranked.head(run_depth), run_depth)
                    else:
                        self.run_blocks.append(
                            ranking_block(q.qid + v, rankings[v][i], ids, self.tag, depth=run_depth)
                        )
                    per_variant.append(
                        score_question(
                            dataset.metric_set,
                            q,
                            ranked,
                            self.budgets,
                            cache=self.cache,
                            assembly=self.study.config.assembly,
                        )
                        + self._ir_values(q, q.qid + v, self.by_doc_of.get(v, {}),
                                          self.run_blocks[-1].chunk_ids)
                    )
            arm, retriever_name = self.arm_name, self.retriever_name
            for metric, value in mean_over_variants(per_variant):
                self.rows.append(
                    ResultRow(dataset.name, arm, retriever_name, q.qid, q.cluster, q.stratum, metric, value)
                )
            if len(per_variant) > 1:  # kept per variant too: the between-run spread of repeats reads them
                self.variant_rows += [
                    ResultRow(dataset.name, arm + v, retriever_name, q.qid, q.cluster, q.stratum, m, x)
                    for (v, _), values in zip(variants, per_variant) for m, x in values]

    def _ir_values(self, q: Question, run_qid: str, by_doc: Mapping[str, Sequence[Chunk]],
                   ranked_ids: Sequence[str]) -> list[tuple[str, float]]:
        """The study's `ir_measures:` for one question, from exactly the chunk ids its run file lists (so the
        run file and results/qrels/ reproduce them with any evaluator); none when the study lists none."""
        names = self.study.config.ir_measures
        if not names:
            return []
        qrels = question_qrels(q, by_doc)
        self.qrels[run_qid] = qrels
        scores = ir_scores(names, {run_qid: qrels}, {run_qid: ranked_ids})
        self.counts["questions_without_relevant_chunk"] = (
            self.counts.get("questions_without_relevant_chunk", 0) + len(scores.without_relevant))
        return [(name, scores.values[run_qid][name]) for name in names]

    def finish(self) -> tuple[list[ResultRow], list[ResultRow], dict[str, Any]]:
        if self.study.config.ir_measures:  # the same for every retriever of the arm: identical bytes
            atomic_write_text(qrels_path(self.study, self.dataset.name, self.arm_name),
                              "".join(qrels_lines(self.qrels)))
        if self.mode:
            self.counts["inserted_per_expansion"] = asdict(summarise_counts(self.inserted))
        if self.averaged:
            self.counts["variants_averaged"] = self.averaged
        if self.window:  # the report's chunk-set table reads these (docs/pipeline.md, "The study report")
            self.counts["embedder_window"] = {
                name: {"chunks": len(indexed), "over_window": len(over)}
                for name, (indexed, over) in sorted(self.window.items())
            }
        write_run_blocks(
            run_path(self.study, self.dataset.name, self.arm_name, self.retriever_name), self.run_blocks
        )
        return self.rows, self.variant_rows, self.counts


def write_cell_parts(per_q, cell: Cell, rows: list[ResultRow], variant_rows: list[ResultRow]) -> None:
    """The cell's part (one row per question and metric) and, for an arm stored as variants, the rows per
    variant first, so a cell whose part exists always has them."""
    if variant_rows:
        write_variants_part(per_q, *cell.names, variant_rows)
    write_part(per_q, *cell.names, rows)


def refuse_unwritten_run_files(study: Study) -> None:
    """No cell is scored while a run file is not written yet: a cell scored first would be an outcome, and the
    freeze that then records the run file would need a deviation (docs/plugins.md, Run files)."""
    unwritten = unwritten_files(plugin_record(study))
    if unwritten:
        raise HarnessError(
            f"{len(unwritten)} run file(s) not written yet, so no cell is scored: {', '.join(unwritten)}; "
            "write them from the chunk sets build-arms built (results/chunks/), then `harness freeze` again "
            "(no outcome exists yet, so no deviation is logged) and score"
        )


def score_study(
    study: Study, *, frozen_hash: str | None, datasets: Sequence[str] | None = None, progress: bool = True,
    log: Callable[[str], None] = print, executor: "Executor | None" = None,
) -> dict[str, int]:
    """Score every configured cell not yet complete; returns {dataset: rows in its combined table}.
    `executor` (harness.pipeline.executors) chooses, once, where the cells are scored (score_executor)."""
    refuse_unwritten_run_files(study)
    scorer = score_executor(executor)
    selection = read_selection(study)
    context = RetrieverContext.for_study(study, progress=progress, share_indexes=True)
    leftovers = [
        p for folder in (per_question_dir(study), runs_dir(study)) for p in remove_stale_temporaries(folder)
    ]
    if leftovers:
        log(f"removed {len(leftovers)} temporary file(s) a killed run left: "
            + ", ".join(str(p.relative_to(results_dir(study))) for p in leftovers))
    combined = {}
    for name in datasets or list(study.config.datasets):
        dataset = load_dataset(study, name, selection=selection)
        if not dataset.questions:
            raise HarnessError(f"dataset {name}: no questions left to score (counts: {dataset.counts})")
        budgets = budgets_from_config(study.config.budgets, dataset.metric_set)
        cells = [c for c in configured_cells(study) if c.dataset.name == name]
        retrievers = list(
            dict.fromkeys(r for r in study.retrievers if any(c.retriever.name == r for c in cells))
        )
        todo = [c for c in cells if cell_state(study, c, frozen_hash) != SCORED]
        log(f"{name}: {len(cells)} cells, {len(cells) - len(todo)} already scored, {len(todo)} to score")
        # retrievers are shared across datasets; built here only when they rank here (a model is loaded once)
        counters_before = {r: context.get(r).stats() for r in retrievers} if scorer.in_this_process else {}
        # every strategy writes the same parts and markers, so the table is assembled alike after any of them
        scorer.score(study, dataset, todo, context=context, budgets=budgets, frozen_hash=frozen_hash,
                     progress=progress, log=log)
        n = assemble_per_question(study, name, frozen_hash, log=log)
        release_freed_memory()  # the assembled table's: the next dataset's workers start beside this process
        update_manifest(study, name, {
            "dataset": name,
            "frozen_config_hash": frozen_hash,
            "metric_set": dataset.metric_set,
            "budgets": list(budgets),
            "questions": len(dataset.questions),
            "clusters": len({q.cluster for q in dataset.questions}),
            "dataset_counts": dict(sorted(dataset.counts.items())),
            "cells": [f"{c.arm}__{c.retriever}" for c in cells],
            # from the cells' done markers: a cell scored by an earlier, interrupted run keeps its entry (a
            # marker written before markers held counts has none: rescoring that cell records them)
            "cell_counts": {str(c): counts for c in cells if (counts := cell_counts(study, c)) is not None},
            "retrievers": {r: context.get(r).describe() for r in retrievers},
        })
        combined[name] = n
        stats = {r: _counter_delta(context.get(r).stats(), counters_before[r]) for r in counters_before}
        stats = {r: s for r, s in stats.items() if any(s.values())}
        if stats:
            log(f"{name}: retriever counters {stats}")
    return combined


# --- where the cells are scored: one strategy per executor, chosen once by score_executor ---


class ScoreExecutor(Protocol):
    """Scores a dataset's unscored cells (arm-major) and writes each one's run file, part and done marker."""

    in_this_process: bool  # ranks with score_study's retrievers (their counters are this process's)

    def score(self, study: Study, dataset: LoadedDataset, cells: Sequence[Cell], *, context: RetrieverContext,
              budgets: tuple[int, ...], frozen_hash: str | None, progress: bool,
              log: Callable[[str], None]) -> None: ...


@dataclass(frozen=True)
class ScoreHere:
    """`local` without workers: arm by arm in this process, with one set of retrievers for every dataset."""

    in_this_process: ClassVar[bool] = True

    def score(self, study: Study, dataset: LoadedDataset, cells: Sequence[Cell], *, context: RetrieverContext,
              budgets: tuple[int, ...], frozen_hash: str | None, progress: bool,
              log: Callable[[str], None]) -> None:
        from tqdm import tqdm

        cache = ScoringCache()  # the dataset's text analyses, dropped on return before its table is built
        bar = tqdm(total=len(cells), desc=f"score {dataset.name}", unit="cell", disable=not progress)
        for arm_cells in _by_arm(cells):
            bar.set_postfix_str(f"{arm_cells[0].arm} / {len(arm_cells)} retrievers")
            score_arm(study, dataset, arm_cells, context, cache, budgets, frozen_hash=frozen_hash)
            bar.update(len(arm_cells))
        bar.close()


@dataclass(frozen=True)
class ScoreInProcesses:
    """`local` with `workers` > 1: every arm a task in a pool of processes of this machine."""

    workers: int
    in_this_process: ClassVar[bool] = False

    def score(self, study: Study, dataset: LoadedDataset, cells: Sequence[Cell], *, context: RetrieverContext,
              budgets: tuple[int, ...], frozen_hash: str | None, progress: bool,
              log: Callable[[str], None]) -> None:
        from tqdm import tqdm

        bar = tqdm(total=len(cells), desc=f"score {dataset.name}", unit="cell", disable=not progress)
        score_arms_in_processes(study, dataset.name, cells, workers=self.workers, frozen_hash=frozen_hash,
                                bar=bar, log=log)
        bar.close()


@dataclass(frozen=True)
class ScoreOnRay:
    """`ray`: dense encoding tasks first, then every arm a Ray task (score_cells_on_ray)."""

    executor: Executor
    in_this_process: ClassVar[bool] = False

    def score(self, study: Study, dataset: LoadedDataset, cells: Sequence[Cell], *, context: RetrieverContext,
              budgets: tuple[int, ...], frozen_hash: str | None, progress: bool,
              log: Callable[[str], None]) -> None:
        score_cells_on_ray(study, self.executor, dataset.name, cells, frozen_hash=frozen_hash, log=log)


def score_executor(executor: Executor | None) -> ScoreExecutor:
    """Where score runs its cells: None or `local` here (or in `workers` processes), `ray` as Ray tasks."""
    if executor is not None and not is_local(executor):
        return ScoreOnRay(executor)
    workers = local_workers(executor)
    return ScoreInProcesses(workers) if workers > 1 else ScoreHere()


def score_arm(
    study: Study, dataset: LoadedDataset, arm_cells: Sequence[Cell], context: RetrieverContext,
    cache: ScoringCache, budgets: tuple[int, ...], *, frozen_hash: str | None,
) -> dict[Cell, dict[str, Any]]:
    """An arm's cells scored together (score_cells) and written: run files, parts, done markers; returns
    each cell's counts."""
    # an expansion arm ranks its `of:` arm's chunks; one arm's chunks in memory at a time
    scoped = scopes(dataset, read_chunk_set(study, dataset, arm_cells[0].arm.ranks, frozen_hash=frozen_hash))
    scored = score_cells(
        study, dataset, arm_cells, scoped, context, cache, budgets, run_depth=study.config.run_depth
    )
    del scoped
    context.flush()  # the arm's new vectors and pair scores as one shard per cache
    record_first_outcome(study, frozen_hash=frozen_hash)
    counts = {}
    per_q = per_question_dir(study)
    for cell, (rows, variant_rows, cell_counts_) in zip(arm_cells, scored):
        write_cell_parts(per_q, cell, rows, variant_rows)
        mark_cell_done(study, cell, frozen_hash=frozen_hash, counts=cell_counts_)
        counts[cell] = cell_counts_
    scored = rows = variant_rows = None
    # the arm's indexes and rankings: a worker scoring beside another holds only its caches
    release_freed_memory()
    return counts


def _by_arm(cells: Sequence[Cell]) -> list[list[Cell]]:
    """Consecutive cells of the same arm, grouped (score_cells scores each group batch by batch)."""
    return [list(group) for _, group in groupby(cells, key=lambda cell: cell.arm.name)]


def _counter_delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items()}


# --- in worker processes: local `workers`, or Ray ---
# An arm (its cells scored together, score_arm) is one task. A worker process keeps its study, dataset,
# retrievers and scoring cache from one task to the next of the same dataset, as the loop in score_study
# keeps them from arm to arm; each task writes its outputs under its cells' own names, so per-question
# results and run files are byte-identical to scoring here, whatever the number of workers or the order the
# arms finish in (tests/test_pipeline_executors.py).
#
# On Ray, dense encoding runs first: one task per chunk set and dense retriever (however many cells rank with
# it: the retriever itself, a fusion or a reranker over it) embeds the set's chunks and its questions' queries
# into the study's shared vector cache (harness.retrieval.cache), scope by scope in the batches the local loop
# uses; the scoring tasks then find every vector there. That vectors are the same either way holds because a
# sentence-transformers vector depends on its text alone (harness.retrieval.dense: one text per forward
# pass, one torch thread, whatever Ray sets OMP_NUM_THREADS to); two chunk sets sharing a text both embed
# it, to the same bytes.


@dataclass
class _WorkerState:
    key: tuple[str, str, str | None]  # study root, dataset, frozen hash
    study: Study
    dataset: LoadedDataset
    budgets: tuple[int, ...]
    context: RetrieverContext
    cache: ScoringCache


_worker: list[_WorkerState] = []  # this process's state for the dataset of its last task (at most one)


def score_one_arm(root: str, dataset_name: str, arm: str, retrievers: Sequence[str],
                  frozen_hash: str | None) -> dict[str, dict[str, Any]]:
    """One arm's cells (those of `retrievers`) from the study on disk, exactly as score_study scores them
    here; returns {cell: counts}."""
    key = (root, dataset_name, frozen_hash)
    if not _worker or _worker[0].key != key:
        _worker.clear()  # another dataset's analyses are not needed again by this process
        study = Study.at(root)
        dataset = load_dataset(study, dataset_name, selection=read_selection(study))
        _worker.append(
            _WorkerState(
                key,
                study,
                dataset,
                budgets_from_config(study.config.budgets, dataset.metric_set),
                RetrieverContext.for_study(study, progress=False, share_indexes=True),
                ScoringCache(),
            )
        )
    state = _worker[0]
    cells = [cell_of(state.study, dataset_name, arm, r) for r in retrievers]
    counts = score_arm(state.study, state.dataset, cells, state.context, state.cache, state.budgets,
                       frozen_hash=frozen_hash)
    return {str(cell): c for cell, c in counts.items()}


def _arm_tasks(
    study: Study, dataset_name: str, cells: Sequence[Cell], frozen_hash: str | None
) -> dict[str, tuple]:
    """One task per arm, the heaviest first (chunks ranked times cells), so that the last arm to finish is a
    light one (an arm of five seeds' chunk sets can take several times another's time)."""
    root = str(study.root)
    def weight(group: list[Cell]) -> int:
        return -_chunks_ranked(study, dataset_name, group[0].arm.ranks.name) * len(group)

    groups = sorted(_by_arm(cells), key=weight)
    return {
        group[0].arm.name: (
            root,
            dataset_name,
            group[0].arm.name,
            [c.retriever.name for c in group],
            frozen_hash,
        )
        for group in groups
    }


def _in_grid_order(
    cells: Sequence[Cell], by_arm: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """{cell: counts} in grid order, whatever order the arms ran or finished in."""
    return {str(c): by_arm[c.arm.name][str(c)] for c in cells}


def _chunks_ranked(study: Study, dataset_name: str, arm: str) -> int:
    """The chunk count its manifest records (0 when unbuilt: the task then fails with read_chunk_set's
    error)."""
    path = chunk_manifest_path(study, dataset_name, arm)
    return int(read_json(path)["chunk_set"]["chunks"]) if path.is_file() else 0


def score_arms_in_processes(study: Study, dataset_name: str, cells: Sequence[Cell], *, workers: int,
                            frozen_hash: str | None, bar: Any, log: Callable[[str], None] = print,
                            ) -> dict[str, dict[str, Any]]:
    """The local executor with `workers` > 1: every arm a task in a pool of processes of this machine."""
    tasks = _arm_tasks(study, dataset_name, cells, frozen_hash)
    if not tasks:
        return {}
    log(f"{dataset_name}: {len(tasks)} arm(s) scored in {min(workers, len(tasks))} worker processes")

    def done(arm: str, counts: dict[str, dict[str, Any]], _n_done: int) -> None:
        bar.set_postfix_str(f"{arm} done")
        bar.update(len(counts))

    counts = run_in_processes(score_one_arm, tasks, done, workers=workers)
    return _in_grid_order(cells, counts)


def encode_one_chunk_set(
    root: str, dataset_name: str, source: str, retriever: str, frozen_hash: str | None
) -> dict[str, int]:
    """Embed one chunk set (the arm `source`'s) with one dense retriever into the study's vector cache, in the
    batches a scoring cell uses (each scope's chunks, per variant, then its questions); returns its
    counters."""
    study = Study.at(root)
    dataset = load_dataset(study, dataset_name, selection=read_selection(study))
    context = RetrieverContext.for_study(study, progress=False)
    context.add_documents(dataset.documents)
    dense = context.get(retriever)
    chunks = read_chunk_set(study, dataset, arm_spec(study, source), frozen_hash=frozen_hash)
    for scope in scopes(dataset, chunks):
        if not scope.chunks:
            continue  # the scoring cell searches nothing here either
        for variant, chunks in chunk_variants(scope.chunks):
            dense.index(scope.key + variant, chunks)
        dense.embed_queries([q.query for q in scope.questions])
    dense.flush()  # before the scoring tasks look for these vectors
    return dense.stats()


def chunk_sets_to_encode(study: Study, cells: Sequence[Cell]) -> list[tuple[str, str]]:
    """(source arm, dense retriever) for every chunk set a cell ranks with embeddings, in grid order, once
    each."""
    pairs = [(c.arm.ranks.name, d) for c in cells
             for d in embedding_retrievers(study.retrievers, c.retriever.name)]
    return list(dict.fromkeys(pairs))


def score_cells_on_ray(
    study: Study, executor: Executor, dataset_name: str, cells: Sequence[Cell], *, frozen_hash: str | None,
    log: Callable[[str], None] = print,
) -> dict[str, dict[str, int]]:
    """Every arm a task (score_one_arm); progress is logged as arms complete, in the `harness status`
    vocabulary."""
    if not cells:
        return {}
    root = str(study.root)
    with ray_session(executor) as ray:
        encodings = chunk_sets_to_encode(study, cells)

        def encoded(key: tuple[str, str], counters: dict[str, int], n_done: int) -> None:
            source, dense = key
            log(f"{dataset_name}/{source}: encoded with {dense} ({n_done}/{len(encodings)} chunk sets, ray; "
                f"cache hits {counters.get('cache_hits', 0)}, misses {counters.get('cache_misses', 0)})")

        # every vector is in the shared cache before a cell ranks with it
        run_on_ray(
            ray,
            encode_one_chunk_set,
            {
                (source, dense): (root, dataset_name, source, dense, frozen_hash)
                for source, dense in encodings
            },
            encoded,
        )
        tasks = _arm_tasks(study, dataset_name, cells, frozen_hash)
        counts = run_on_ray(
            ray,
            score_one_arm,
            tasks,
            lambda arm, done, n_done: log(
                f"{dataset_name}/{arm}: {len(done)} cell(s) {SCORED} ({n_done}/{len(tasks)} arms, ray)"
            ),
        )
    return _in_grid_order(cells, counts)
