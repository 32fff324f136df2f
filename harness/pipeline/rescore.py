"""`harness audit --rescore K|all`: re-run K seeded cells (or every cell) from the frozen inputs and compare
bytes.

The plain audit recomputes the statistics from the per-question table and the table from its parts
(harness.pipeline.rederive); this shows that the parts came from the frozen inputs. K cells (dataset x arm x
retriever) are drawn with a recorded seed, `random.Random(seed).sample` over the configured cells in grid
order (`all`: every cell, in grid order). In one scratch study, by the stages' own code:

- every chunk set the drawn cells rank, and the sets it is built from, is rebuilt once by build-arms in replay
  mode (LLM arms answered from the released generation cache only: a miss fails the cell naming the key, no
  model is called) and compared line by line with the released chunk file;
- each dataset is loaded once, and the drawn cells of one arm are ranked and scored together, as `score`
  does (score_cells), with one set of retrievers for the whole rescore (a model loads once), and their run
  file and per-question rows compared with the released run file and the cell's released part;
- a drawn cell that the reader answers is answered again and judged from the generation cache (replay, as
  `answer --replay`), and its answers, verdicts and answer rows compared with the released ones.

Dense vectors are read from the released vector cache (results/embeddings), linked into the scratch study,
instead of being encoded again. So that an edited cache cannot pass, a seeded sample of the vectors the
rescore read (VECTOR_SAMPLE chunk texts and queries per dense retriever) is encoded afresh and compared bit
for
bit. A vector edited outside the sample moves the scores of the cells that read it, which are compared with
the released run files (every such cell under `--rescore all`); the vectors are a cache, not in the
release record, but runs rescored from an edited cache change the run files the record binds.

One PASS/FAIL line per cell names the first differing file and line. The scratch folder is a hidden
temporary folder in the study root (the stages name their outputs relative to it), removed at the end.

Cells re-ranked by an LLM (a rerank backend that replays_pair_scores, llm-yes) read their pair scores from
the released cache only (replay, harness.retrieval.rerank.ReplayPairScorer): a pair it lacks fails the cell,
naming the pair, and no model is called. Such a cell is ranked on its own, so a miss fails it alone.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterable, Sequence

from harness.arms.build import read_chunk_set
from harness.config.retrievers import retriever_spec
from harness.data.load import LoadedDataset, load_dataset, read_selection
from harness.errors import HarnessError
from harness.grid.cells import Cell, RetrieverSpec, answer_cells, configured_cells
from harness.grid.paths import (
    answer_part_path,
    answers_path,
    cell_part_path,
    chunks_path,
    embeddings_dir,
    judges_dir,
    per_question_dir,
    qrels_path,
    run_path,
    variants_part_path,
)
from harness.grid.results import (
    ResultRow,
    _csv_blocks,
    _parquet_bytes,
    check_and_sort,
    read_per_question,
    to_frame,
)
from harness.grid.states import cell_counts, mark_cell_done
from harness.llm.base import ReplayMiss
from harness.metrics.registry import ScoringCache, budgets_from_config
from harness.pipeline.answer import answer_one_cell, answer_settings, answered_dataset, open_instruments
from harness.pipeline.rederive import (
    blocks_lines,
    build_in_scratch,
    first_difference,
    scratch_study,
    text_lines,
)
from harness.pipeline.score import _by_arm, scopes, score_cells, write_cell_parts
from harness.provenance.checks import Check
from harness.retrieval.registry import RetrieverContext, embedding_retrievers
from harness.seeded_draw import seeded_sample, seeded_samples
from harness.study import Study

DEFAULT_SEED = 2024
ALL = "all"
VECTOR_SAMPLE = 64  # chunk texts, and as many queries, re-encoded per dense retriever


SUBJECT = "(rescore)"


def _checked(item: str, passed: bool, detail: str) -> Check:
    return Check.judged(SUBJECT, item, passed, detail)


def _replayed(retriever: RetrieverSpec) -> bool:
    return retriever_spec(retriever.config).replays_pair_scores


def _window_difference(released: dict | None, rescored: dict) -> str | None:
    """The chunks over each embedder's window that the cell's done marker records (the report's chunk-set
    table reads them), against the rescore's count."""
    was, now = (released or {}).get("embedder_window"), rescored.get("embedder_window")
    return None if was == now else f"its done marker records embedder_window {was}, the rescore counts {now}"


def draw_cells(study: Study, k: int | str, seed: int) -> list[Cell]:
    """K cells by the seed (grid order, then Random(seed).sample), or every cell in grid order (`all`)."""
    cells = configured_cells(study)
    if k == ALL:
        return cells
    if k < 1:
        raise HarnessError(f"--rescore {k}: give the number of cells to re-run (at least 1)")
    return seeded_sample(cells, min(k, len(cells)), seed, presorted=True)


def _link_released_vectors(study: Study, scratch: Study) -> None:
    """The released model-output caches (vectors, pair scores) seen from the scratch study: each shard
    linked, never copied or written (what the rescore adds goes to new shards in the scratch folder)."""
    for namespace in sorted(embeddings_dir(study).glob("*/namespace.json")):
        folder = embeddings_dir(scratch) / namespace.parent.name
        folder.mkdir(parents=True)
        for shard in sorted(namespace.parent.iterdir()):
            if shard.is_file():
                os.symlink(shard.resolve(), folder / shard.name)


def rescore(study: Study, k: int | str, seed: int, frozen: str, *, log: Callable[[str], None] = print,
            progress: bool = False) -> list[Check]:
    from tqdm import tqdm

    cells = draw_cells(study, k, seed)
    drawn = f"every cell ({len(cells)})" if k == ALL else f"{len(cells)} cell(s) drawn with seed {seed}"
    replayed = sum(_replayed(c.retriever) for c in cells)
    log(f"rescore: {drawn}; {replayed} re-ranked by an LLM, its pair scores replayed from the released cache")
    checks: dict[Cell, Check] = {}
    bar = tqdm(total=len(cells), desc="rescore", unit="cell", disable=not progress)
    # inside the study root (the stages name their outputs relative to it), removed afterwards
    with tempfile.TemporaryDirectory(prefix=".rescore-", dir=study.root) as tmp, ExitStack() as stack:
        scratch = scratch_study(study, Path(tmp))
        _link_released_vectors(study, scratch)
        context = RetrieverContext.for_study(scratch, progress=False, share_indexes=True, replay=True)
        rescoring = _Rescoring(study, scratch, frozen, context, stack)
        selection = read_selection(study)
        chosen = set(cells)
        for name in dict.fromkeys(c.dataset.name for c in cells):
            ours = [c for c in configured_cells(study) if c in chosen and c.dataset.name == name]  # arm-major
            dataset = load_dataset(scratch, name, selection=selection)
            for cell, check in rescoring.dataset_cells(dataset, ours, selection):
                checks[cell] = check
                bar.set_postfix_str(str(cell))
                bar.update(1)
        bar.close()
        vectors = rescoring.check_vector_sample(seed)
    return [checks[c] for c in cells] + vectors


class _Rescoring:
    """One rescore's scratch study, retrievers and (opened on first use) replayed reader and judge."""

    def __init__(
        self, study: Study, scratch: Study, frozen: str, context: RetrieverContext, stack: ExitStack
    ):
        self.study, self.scratch, self.frozen, self.context, self.stack = (
            study,
            scratch,
            frozen,
            context,
            stack,
        )
        self.answered = set(answer_cells(study))
        self.instruments = None
        self.read: dict[
            str, tuple[set[str], set[str]]
        ] = {}  # dense retriever -> chunk texts and queries ranked

    def dataset_cells(self, dataset: LoadedDataset, cells: Sequence[Cell],
                      selection) -> Iterable[tuple[Cell, Check]]:
        sources = list(dict.fromkeys(c.arm.ranks for c in cells))
        failed = build_in_scratch(self.scratch, dataset, [s.name for s in sources], self.frozen)
        chunk_problems = {source: failed.get(source.name) or self._chunk_difference(dataset.name, source.name)
                          for source in sources}
        cache, budgets = ScoringCache(), budgets_from_config(self.study.config.budgets, dataset.metric_set)
        for arm_cells in _by_arm(cells):
            source = arm_cells[0].arm.ranks
            if chunk_problems[source]:
                why = f"rebuilding {dataset.name}/{source}: {chunk_problems[source]}"
                yield from ((c, _checked(str(c), False, why)) for c in arm_cells)
                continue
            chunks = read_chunk_set(self.scratch, dataset, source, frozen_hash=self.frozen)
            self._note_read(arm_cells, chunks, dataset)
            # a replayed reranker's cell is ranked alone (same rows: score_cells), so a miss fails it alone
            together = [c for c in arm_cells if not _replayed(c.retriever)]
            groups = [together] * bool(together) + [[c] for c in arm_cells if _replayed(c.retriever)]
            for group in groups:
                try:
                    scored = score_cells(self.scratch, dataset, group, scopes(dataset, chunks), self.context,
                                         cache, budgets, run_depth=self.study.config.run_depth)
                except ReplayMiss as e:
                    yield from ((c, _checked(str(c), False, f"ranking {c} again: {e}")) for c in group)
                    continue
                yield from self._scored_checks(dataset.name, group, scored, source, selection)

    def _scored_checks(self, dataset_name: str, cells: Sequence[Cell], scored, source: str,
                       selection) -> Iterable[tuple[Cell, Check]]:
        """Each scored cell's rows, run file (and answers) against the released ones."""
        for cell, (rows, variant_rows, counts) in zip(cells, scored):
            differs = self._scored_difference(cell, rows, variant_rows)
            if differs is None:
                differs = _window_difference(cell_counts(self.study, cell), counts)
            if differs is None and cell in self.answered:
                # the answer stage answers a cell scored under the freeze (its part and marker written)
                write_cell_parts(per_question_dir(self.scratch), cell, rows, variant_rows)
                mark_cell_done(self.scratch, cell, frozen_hash=self.frozen, counts=counts)
                differs = self._answer_difference(dataset_name, cell, selection)
            if differs:
                yield cell, _checked(str(cell), False, differs)
                continue
            rows_too = f"chunk set {source}, run file and {len(rows)} per-question rows identical"
            also = ", answers, verdicts and answer rows replayed identical" if cell in self.answered else ""
            yield cell, _checked(str(cell), True, rows_too + also)

    def _label(self, path: Path) -> str:
        return str(path.relative_to(self.study.root)) if path.is_relative_to(self.study.root) else str(path)

    def _chunk_difference(self, dataset: str, source: str) -> str | None:
        released = chunks_path(self.study, dataset, source)
        if not released.is_file():
            return f"{self._label(released)}: missing"
        return first_difference(text_lines(released), text_lines(chunks_path(self.scratch, dataset, source)),
                                self._label(released))

    def _scored_difference(
        self, cell: Cell, rows: list[ResultRow], variant_rows: list[ResultRow]
    ) -> str | None:
        run_file = run_path(self.study, *cell.names)
        if not run_file.is_file():
            return f"{self._label(run_file)}: missing"
        differs = first_difference(text_lines(run_file), text_lines(run_path(self.scratch, *cell.names)),
                                   self._label(run_file))
        if self.study.config.ir_measures and not differs:  # the relevance other evaluators read, re-derived
            dataset, arm, _ = cell.names
            qrels = qrels_path(self.study, dataset, arm)
            differs = (f"{self._label(qrels)}: missing" if not qrels.is_file() else
                       first_difference(text_lines(qrels), text_lines(qrels_path(self.scratch, dataset, arm)),
                                        self._label(qrels)))
        if variant_rows and not differs:
            differs = self._rows_difference(
                variants_part_path(per_question_dir(self.study), *cell.names),
                variant_rows,
                "the rows per variant",
            )
        return differs or self._rows_difference(cell_part_path(self.study, cell), rows, "the cell's rows")

    def _rows_difference(self, part: Path, rows: list[ResultRow], what: str) -> str | None:
        """The released part against these rows: its bytes (the same writer, the same bytes), else, to say
        where they differ, both as the per-question CSV writes them."""
        if not part.is_file():
            return f"{self._label(part)}: missing"
        ours = check_and_sort(to_frame(rows), "rescored rows")
        if part.read_bytes() == _parquet_bytes(ours):
            return None
        return first_difference(
            blocks_lines(_csv_blocks(read_per_question(part))),
            blocks_lines(_csv_blocks(ours)),
            f"{self._label(part)} ({what}, as CSV)",
        )

    def _answer_difference(self, dataset_name: str, cell: Cell, selection) -> str | None:
        """The cell answered and judged again from the generation cache (replay) in the scratch study."""
        if self.instruments is None:
            self.instruments = open_instruments(self.scratch, self.stack, replay=True)
        dataset = answered_dataset(self.scratch, dataset_name, selection)
        budget, metrics, judged = answer_settings(self.scratch, dataset, self.instruments)
        try:
            rows, _counts = answer_one_cell(
                self.scratch, self.instruments, dataset, cell, budget, metrics, judged, self.frozen
            )
        except ReplayMiss as e:
            return f"answering {cell} again: {e}"
        released_answers, verdicts = answers_path(self.study, cell), judges_dir(self.study) / dataset_name / \
            f"{cell.arm}__{cell.retriever}.jsonl"
        pairs = [(released_answers, answers_path(self.scratch, cell))]
        if judged:
            pairs.append((verdicts, judges_dir(self.scratch) / dataset_name / verdicts.name))
        for released, ours in pairs:
            if not released.is_file():
                return f"{self._label(released)}: missing"
            differs = first_difference(text_lines(released), text_lines(ours), self._label(released))
            if differs:
                return differs
        return self._rows_difference(answer_part_path(self.study, cell), rows, "the cell's answer rows")

    def _note_read(self, cells: Sequence[Cell], chunks, dataset: LoadedDataset) -> None:
        for cell in cells:
            for dense in embedding_retrievers(self.study.retrievers, cell.retriever.name):
                texts, queries = self.read.setdefault(dense, (set(), set()))
                texts.update(c.indexed_text for c in chunks)
                queries.update(q.query for q in dataset.questions)

    def check_vector_sample(self, seed: int) -> list[Check]:
        """A seeded sample of the cached vectors the rescore ranked with, encoded afresh and compared."""
        out = []
        for name, (texts, queries) in sorted(self.read.items()):
            retriever = self.context.get(name)  # a type that embeds (embedding_retrievers): a DenseRetriever
            sample = seeded_samples(
                [(pool, min(VECTOR_SAMPLE, len(pool))) for pool in (texts, queries)], seed
            )
            where = ", ".join(
                self._label(embeddings_dir(self.study) / d.name) for d in retriever.cache_directories()
            )
            label = f"(vectors {name})"
            try:
                differ = retriever.differing_cached(*sample)
            except HarnessError as e:  # no model to encode with: the vectors read are unchecked, not a pass
                out.append(_checked(label, False,
                                    f"the sampled vectors of {where} cannot be encoded again: {e}"))
                continue
            if differ:
                out.append(_checked(label, False, f"{len(differ)} sampled cached vector(s) in {where} differ "
                                                  f"from the model's encoding, e.g. of {differ[0][:80]!r}"))
            else:
                out.append(_checked(label, True, f"{len(sample[0])} chunk and {len(sample[1])} query vectors "
                                                 f"of {where}, sampled with the seed, equal to the model's "
                                                 "encoding bit for bit"))
        return out
