"""Where the grid's cells run: `local` (this process, one cell after another) or `ray` (each cell a task).

With Ray, a scoring cell (dataset x arm x retriever) is one task, the dense encoding of a chunk set is
another, and so is a registered contrast's bootstrap. Encoding runs first: one task per chunk set and
dense retriever (however many cells rank with it: the retriever itself, a fusion or a reranker over it)
embeds the set's chunks and its questions' queries into the study's shared vector cache
(harness.retrieval.cache), scope by scope in the batches the local loop uses; the scoring tasks then find
every vector there. A task runs the same code the local loop runs, on the same files, and writes its
outputs under the cell's own name, so the per-question results, run files and statistics are
byte-identical to a local run whatever the number of workers or the completion order
(tests/test_pipeline_executors.py). That holds because a sentence-transformers vector depends on its text
alone (harness.retrieval.dense: one text per forward pass, one torch thread, whatever Ray sets
OMP_NUM_THREADS to); two chunk sets sharing a text both embed it, to the same bytes.

Ray workers read the study directory by path: on a cluster it must be on storage every node mounts at the
same path, or shipped with the job (README, "Running on a Ray cluster"). Ray is an optional extra
(`pip install -e '.[ray]'`); the local executor needs nothing new.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from harness.config.executor import EXECUTORS, Executor, LOCAL
from harness.errors import HarnessError

RAY_HINT = "pip install -e '.[ray]' (the pinned Ray release)"


def choose_executor(study: Any, kind: str | None, ray_address: str | None) -> Executor:
    """The command line's --executor / --ray-address over the config's `executor:`, over local."""
    configured = study.config.executor or Executor()
    chosen = kind or configured.kind
    if chosen not in EXECUTORS:
        raise HarnessError(f"--executor {chosen!r}: choose one of {', '.join(EXECUTORS)}")
    return Executor(chosen, ray_address or configured.ray_address, configured.workers)


@contextlib.contextmanager
def ray_session(executor: Executor) -> Iterator[Any]:
    """Connect to `ray_address`, or start a local instance with `workers` CPUs; shut down what we started."""
    try:
        import ray
    except ImportError:
        raise HarnessError(f"the ray executor needs Ray: {RAY_HINT}") from None
    if ray.is_initialized():  # a caller (a test, a notebook) already chose the cluster
        yield ray
        return
    if executor.ray_address:
        ray.init(address=executor.ray_address, log_to_driver=False)
    else:
        # local workers import this very harness (a worktree or checkout may shadow the installed one)
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        ray.init(num_cpus=executor.workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield ray
    finally:
        ray.shutdown()


# --- scoring ---


def score_one_cell(root: str, dataset_name: str, arm: str, retriever: str, frozen_hash: str | None) -> dict[str, int]:
    """One cell from the study on disk, exactly as the local loop scores it; returns its counts."""
    from harness.data.load import load_dataset, read_selection
    from harness.metrics.registry import ScoringCache, budgets_from_config
    from harness.arms.build import read_chunk_set
    from harness.grid.cells import cell_of
    from harness.grid.paths import per_question_dir
    from harness.grid.states import mark_cell_done
    from harness.pipeline.score import score_cell, scopes, write_cell_parts
    from harness.provenance.timeline import record_first_outcome
    from harness.retrieval.registry import RetrieverContext
    from harness.study import Study

    study = Study.at(root)
    cell = cell_of(study, dataset_name, arm, retriever)
    dataset = load_dataset(study, dataset_name, selection=read_selection(study))
    budgets = budgets_from_config(study.config.budgets, dataset.metric_set)
    # an expansion arm ranks its `of:` arm's chunks, as in the local loop
    scoped = scopes(dataset, read_chunk_set(study, dataset, cell.arm.ranks, frozen_hash=frozen_hash))
    context = RetrieverContext.for_study(study, progress=False)
    rows, variant_rows, counts = score_cell(study, dataset, cell, scoped, context, ScoringCache(), budgets,
                                            run_depth=study.config.run_depth)
    record_first_outcome(study, frozen_hash=frozen_hash)
    write_cell_parts(per_question_dir(study), cell, rows, variant_rows)
    mark_cell_done(study, cell, frozen_hash=frozen_hash, counts=counts)
    return counts


def encode_one_chunk_set(root: str, dataset_name: str, source: str, retriever: str, frozen_hash: str | None) -> dict[str, int]:
    """Embed one chunk set (the arm `source`'s) with one dense retriever into the study's vector cache, in the
    batches a scoring cell uses (each scope's chunks, per variant, then its questions); returns its counters."""
    from harness.arms.build import read_chunk_set
    from harness.data.load import load_dataset, read_selection
    from harness.pipeline.addon_cells import chunk_variants
    from harness.pipeline.score import scopes
    from harness.retrieval.registry import RetrieverContext
    from harness.study import Study

    study = Study.at(root)
    dataset = load_dataset(study, dataset_name, selection=read_selection(study))
    dense = RetrieverContext.for_study(study, progress=False).get(retriever)
    for scope in scopes(dataset, read_chunk_set(study, dataset, source, frozen_hash=frozen_hash)):
        if not scope.chunks:
            continue  # the scoring cell searches nothing here either
        for variant, chunks in chunk_variants(scope.chunks):
            dense.index(scope.key + variant, chunks)
        dense.embed_queries([q.query for q in scope.questions])
    return dense.stats()


def chunk_sets_to_encode(study: Any, cells: Sequence[Any]) -> list[tuple[str, str]]:
    """(source arm, dense retriever) for every chunk set a cell ranks with embeddings, in grid order, once each."""
    from harness.retrieval.registry import embedding_retrievers

    pairs = [(c.arm.ranks, d) for c in cells for d in embedding_retrievers(study.retrievers, c.retriever.name)]
    return list(dict.fromkeys(pairs))


def score_cells_on_ray(
    study: Any, executor: Executor, dataset_name: str, cells: Sequence[Any], *, frozen_hash: str | None,
    log: Callable[[str], None] = print,
) -> dict[str, dict[str, int]]:
    """Every cell a task; progress is logged as cells complete, in the `harness status` vocabulary."""
    from harness.grid.states import SCORED

    if not cells:
        return {}
    with ray_session(executor) as ray:
        encodings = chunk_sets_to_encode(study, cells)
        encode = ray.remote(encode_one_chunk_set)
        pending_sets = {encode.remote(str(study.root), dataset_name, source, dense, frozen_hash): (source, dense)
                        for source, dense in encodings}
        while pending_sets:  # every vector is in the shared cache before a cell ranks with it
            done, _ = ray.wait(list(pending_sets), num_returns=1)
            source, dense = pending_sets.pop(done[0])
            counters = ray.get(done[0])
            log(f"{dataset_name}/{source}: encoded with {dense} ({len(encodings) - len(pending_sets)}/{len(encodings)} "
                f"chunk sets, ray; cache hits {counters.get('cache_hits', 0)}, misses {counters.get('cache_misses', 0)})")
        task = ray.remote(score_one_cell)
        pending = {task.remote(str(study.root), *c.names, frozen_hash): c for c in cells}
        counts: dict[str, dict[str, int]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            cell = pending.pop(done[0])
            counts[str(cell)] = ray.get(done[0])  # a failed task raises here, naming the cell's error
            log(f"{cell}: {SCORED} ({len(counts)}/{len(cells)} cells, ray)")
    return {str(c): counts[str(c)] for c in cells}  # grid order, whatever the completion order


# --- statistics ---


def _compare_task(table: Any, arguments: dict[str, Any]) -> Any:
    from harness.stats.contrast import compare

    return compare(table, **arguments)


def run_plan_on_ray(
    executor: Executor, plan: Any, table: Any, *, only: list[str] | None = None, judge_rates: Any = None,
    log: Callable[[str], None] = print,
) -> list[Any]:
    """Every registered contrast's bootstrap a task; Holm and the verdicts then run here, as locally."""
    from harness.stats.contrast import as_results, missing_for
    from harness.stats.families import contrast_arguments, run_plan

    results = as_results(table)
    families = plan.families if not only else [plan.family(f) for f in only]
    with ray_session(executor) as ray:
        shared = ray.put(results)
        task = ray.remote(_compare_task)
        pending = {}
        for family in families:
            for test in family.tests:
                if missing_for(results, dataset=test.dataset, a=test.a, b=test.b, retriever=test.retriever,
                               metric=test.metric, retriever_b=test.retriever_b):
                    continue  # run_family reports it as missing
                ref = task.remote(shared, contrast_arguments(plan, family, test, results))
                pending[ref] = (family.id, test.id)
        computed = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            key = pending.pop(done[0])
            computed[key] = ray.get(done[0])
            log(f"{key[0]}/{key[1]}: bootstrap done ({len(computed)} contrasts, ray)")
    return run_plan(plan, results, only=only, judge_rates=judge_rates,
                    contrast=lambda family, test, _table: computed[(family.id, test.id)])


def is_local(executor: Executor) -> bool:
    return executor.kind == LOCAL
