"""The local and Ray executors (harness.task_runners) give byte-identical results and statistics."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from harness.cli.main import main
from harness.config.executor import Executor
from harness.errors import HarnessError
from harness.pipeline.executors import choose_executor
from harness.study import Study
from pipeline_support import edit_config, make_llm_free_study, seed_chunk_vectors
from harness.grid.paths import chunk_manifest_path, results_dir, stats_dir
from harness.provenance.freeze import frozen_hash


def outputs(study: Study) -> dict[str, bytes]:
    """Per-question tables, run files and statistics (JSON and CSV), by path under results/."""
    wanted = [
        *(results_dir(study) / "per_question").glob("*.parquet"),
        *(results_dir(study) / "per_question").glob("*.csv"),
        *(results_dir(study) / "runs").rglob("*.run"),
        *stats_dir(study).glob("*.json"),
        *stats_dir(study).glob("*.csv"),
    ]
    return {str(p.relative_to(results_dir(study))): p.read_bytes() for p in sorted(wanted) if p.is_file()}


RETRIEVERS = ("bm25", "minilm", "hybrid")  # lexical, dense (its encoding a task of its own on Ray) and fused
# two arms: every executor path (arm tasks, encoding tasks, fusion) runs on each, at a third of the six arms'
# cost
ARMS = ("S", "F256t")
# its chunk vectors come from the demo's shipped cache; S's chunks and the queries are encoded
SEEDED = ("F256t",)


def run_pipeline(root, *executor_args: str, score_args: tuple[str, ...] = ()) -> Study:
    study = make_llm_free_study(root, RETRIEVERS, arms=ARMS)
    assert main(["build-arms", "--study", str(root), "--no-progress"]) == 0
    seed_chunk_vectors(study, SEEDED)
    assert main(["score", "--study", str(root), "--no-progress", *executor_args, *score_args]) == 0
    assert main(["stats", "--study", str(root), *executor_args]) == 0
    return study


def _local_run(root) -> None:
    """The plain local run (one process) every other executor is compared with; what score printed is kept."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_pipeline(root / "s")
    (root / "printed.txt").write_text(printed.getvalue(), encoding="utf-8")


@pytest.fixture
def local_run(built_once) -> tuple[Study, str]:
    """Built once per test run and shared: read it, never write it."""
    root = built_once("executors-local", _local_run)
    return Study.at(root / "s"), (root / "printed.txt").read_text(encoding="utf-8")


@pytest.mark.slow
def test_ray_and_local_give_byte_identical_results_and_stats(tmp_path, capsys, local_run):
    ray = pytest.importorskip("ray")
    local = outputs(local_run[0])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[1])}
        },
    )
    try:
        on_ray = outputs(run_pipeline(tmp_path / "ray", "--executor", "ray"))
    finally:
        ray.shutdown()
    printed = capsys.readouterr().out
    assert "scored (" in printed and "arms, ray)" in printed  # progress as arms complete
    assert "encoded with minilm" in printed and "chunk sets, ray" in printed  # one task per chunk set
    assert "bootstrap done" in printed
    assert any(k.endswith(".parquet") for k in local) and any(k.startswith("stats") for k in local)
    assert any(k.startswith("runs") for k in local)
    assert local.keys() == on_ray.keys()
    for name in local:
        assert local[name] == on_ray[name], name


@pytest.mark.slow
def test_local_worker_processes_give_byte_identical_results_manifests_and_stats(tmp_path, capsys, local_run):
    alone = local_run[0]
    local = outputs(alone)
    study = run_pipeline(tmp_path / "workers", score_args=("--workers", "2"))
    in_workers = outputs(study)
    assert "arm(s) scored in 2 worker processes" in capsys.readouterr().out
    assert any(k.startswith("runs") for k in local) and local.keys() == in_workers.keys()
    for name in local:
        assert local[name] == in_workers[name], name
    # the done markers' counts, gathered into each table's manifest, are the same too
    manifests = [(results_dir(s) / "per_question").glob("*.manifest.json") for s in (alone, study)]
    a, b = ({p.name: _without_times(p) for p in m} for m in manifests)
    assert a and a == b


def _without_times(path) -> dict:
    import json
    record = json.loads(path.read_text())
    return {k: v for k, v in record.items() if not k.endswith("_at")}


def _square_unless_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is refused")
    return x * x


def test_worker_processes_return_each_result_under_its_key_and_raise_a_tasks_error():
    from harness.task_runners import run_in_processes

    seen = []
    out = run_in_processes(_square_unless_three, {"a": (1,), "b": (2,), "c": (4,)},
                           lambda key, result, n: seen.append((key, result)), workers=2)
    assert out == {"a": 1, "b": 4, "c": 16} and sorted(seen) == [("a", 1), ("b", 4), ("c", 16)]
    with pytest.raises(ValueError, match="three is refused"):
        run_in_processes(_square_unless_three, {i: (i,) for i in range(8)}, lambda *done: None, workers=2)
    assert run_in_processes(_square_unless_three, {}, lambda *done: None, workers=2) == {}


def test_arm_tasks_start_heaviest_first_and_counts_come_back_in_grid_order(tmp_path):
    from harness.grid.cells import configured_cells
    from harness.pipeline.score import _arm_tasks, _in_grid_order

    study = make_llm_free_study(tmp_path, RETRIEVERS)
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    cells = [c for c in configured_cells(study) if c.dataset.name == "docs"]
    tasks = _arm_tasks(study, "docs", cells, frozen_hash(study))
    sizes = {arm: json.loads(chunk_manifest_path(study, "docs", arm).read_text())["chunk_set"]["chunks"]
             for arm in tasks}
    weights = [sizes[arm] * len(tasks[arm][3]) for arm in tasks]
    assert len(set(weights)) > 1 and weights == sorted(weights, reverse=True)
    by_arm = {
        arm: {f"docs/{arm}/{r}": {"n": i} for i, r in enumerate(task[3])} for arm, task in tasks.items()
    }
    assert list(_in_grid_order(cells, by_arm)) == [str(c) for c in cells]


def test_score_chooses_one_strategy_from_the_executor():
    from harness.pipeline.score import ScoreHere, ScoreInProcesses, ScoreOnRay, score_executor

    assert score_executor(None) == ScoreHere() == score_executor(Executor("local", workers=1))
    assert score_executor(Executor("local", workers=3)) == ScoreInProcesses(3)
    assert score_executor(Executor("ray", workers=3)) == ScoreOnRay(Executor("ray", workers=3))
    assert [s.in_this_process for s in (ScoreHere, ScoreInProcesses, ScoreOnRay)] == [True, False, False]


def test_score_study_leaves_each_dataset_s_unscored_cells_to_the_chosen_strategy(tmp_path, monkeypatch):
    """score_study picks the strategy once and hands it every dataset's unscored cells, arm-major; whatever
    the strategy, it then assembles the tables from the parts written."""
    from harness.grid.cells import configured_cells
    from harness.pipeline import score
    from harness.pipeline.score import ScoreHere, score_study

    study = make_llm_free_study(tmp_path, ("bm25",), arms=("S", "P"))
    assert main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    chosen, handed = [], []

    class Recorded(ScoreHere):
        def score(self, study, dataset, cells, **kw):
            handed.append((dataset.name, [str(c) for c in cells]))
            super().score(study, dataset, cells, **kw)

    monkeypatch.setattr(score, "score_executor", lambda executor: chosen.append(executor) or Recorded())
    rows = score_study(study, frozen_hash=frozen_hash(study), progress=False, log=lambda _: None,
                       executor=Executor("local"))
    assert chosen == [Executor("local")]
    cells = configured_cells(study)
    assert handed == [(d, [str(c) for c in cells if c.dataset.name == d]) for d in study.config.datasets]
    assert set(rows) == set(study.config.datasets) and all(n > 0 for n in rows.values())


def test_the_config_sets_the_executor_and_the_command_line_wins(tmp_path):
    study = make_llm_free_study(tmp_path, freeze=False)
    assert choose_executor(study, None, None) == Executor("local")
    edit_config(
        tmp_path, lambda cfg: cfg.__setitem__("executor", {"kind": "ray", "ray_address": "ray://h:1"})
    )
    study = Study.at(tmp_path)
    assert choose_executor(study, None, None) == Executor("ray", "ray://h:1")
    assert choose_executor(study, "local", None).kind == "local"
    assert choose_executor(study, None, "ray://other:2").ray_address == "ray://other:2"


def test_an_unknown_executor_in_the_config_is_an_error(tmp_path):
    make_llm_free_study(tmp_path, freeze=False)
    edit_config(tmp_path, lambda cfg: cfg.__setitem__("executor", {"kind": "dask"}))
    with pytest.raises(HarnessError, match=r"`executor\.kind`"):
        Study.at(tmp_path).config  # noqa: B018
    assert yaml.safe_load((tmp_path / "configs" / "study.yaml").read_text())["executor"] == {"kind": "dask"}


def test_each_cell_ranking_with_embeddings_names_its_chunk_sets_once(tmp_path):
    from harness.pipeline.score import chunk_sets_to_encode
    from harness.grid.cells import configured_cells

    study = make_llm_free_study(tmp_path, ("bm25", "minilm", "hybrid"), freeze=False)
    cells = [c for c in configured_cells(study) if c.dataset.name == "docs"]
    pairs = chunk_sets_to_encode(study, cells)
    arms = list(dict.fromkeys(c.arm.name for c in cells))
    assert pairs == [(arm, "minilm") for arm in arms]  # minilm and hybrid cells share one encoding; bm25 none


@pytest.mark.slow
def test_dense_encoding_tasks_fill_the_cache_scoring_reads_with_identical_results(
    tmp_path, capsys, local_run
):
    """The encoding task, run before scoring (as on Ray), leaves scoring nothing to embed, and the results
    are byte-identical to a plain local run."""
    pytest.importorskip("sentence_transformers")
    from harness.pipeline.score import chunk_sets_to_encode, encode_one_chunk_set
    from harness.grid.cells import configured_cells
    from harness.provenance.freeze import frozen_hash

    plain, first = local_run
    misses = {line.split(":")[0]: int(line.split("'cache_misses': ")[1].split("}")[0])
              for line in first.splitlines() if "retriever counters" in line}
    # the plain run embedded while scoring; papers-pooled (the same texts as papers) found them in the cache
    assert misses["papers"] > 0 and misses["docs"] > 0 and misses["papers-pooled"] == 0, misses

    encoded = make_llm_free_study(tmp_path / "encoded", RETRIEVERS, arms=ARMS)
    assert main(["build-arms", "--study", str(encoded.root), "--no-progress"]) == 0
    seed_chunk_vectors(encoded, SEEDED)
    cells = configured_cells(encoded)
    for dataset in dict.fromkeys(c.dataset.name for c in cells):
        for source, dense in chunk_sets_to_encode(encoded, [c for c in cells if c.dataset.name == dataset]):
            counters = encode_one_chunk_set(str(encoded.root), dataset, source, dense, frozen_hash(encoded))
            assert counters["cache_misses"] + counters["cache_hits"] > 0
    capsys.readouterr()
    assert main(["score", "--study", str(encoded.root), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "retriever counters" in printed and "'cache_misses': 0" in printed
    assert "'cache_misses': " not in printed.replace(
        "'cache_misses': 0", ""
    )  # every vector came from the cache
    ours = {
        k: v for k, v in outputs(plain).items() if not k.startswith("stats")
    }  # only the shared run has stats
    theirs = outputs(encoded)
    assert ours.keys() == theirs.keys() and any(k.startswith("runs") for k in ours)
    for name in ours:
        assert ours[name] == theirs[name], name
