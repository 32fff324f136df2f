"""The extension recipes of docs/extending.md, run: a starter study (`harness init` on a tiny corpus) that the
test changes to use its new entry, rehearsed on its synthetic twin in this process (so the registries the test
patched are the ones every stage reads), from select to the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq
import yaml

from harness.cli.main import main
from harness.grid.paths import per_question_dir
from harness.pipeline.stages import configured_stages
from harness.rehearsal.twin import make_twin
from harness.study import Study
from test_init import corpus

FAMILY = "structure"  # the family `harness init` registers
DATASET = "corpus"  # the dataset it names


def starter_study(tmp_path: Path, *, git: bool = False) -> Path:
    """By default registered by its record: the same on every machine, whatever git knows of who commits.
    With `git`, init makes the study its own repository and commits it (the test sets who commits)."""
    documents, questions = corpus(tmp_path / "in")
    study = tmp_path / "study"
    assert main(["init", str(study), "--documents", str(documents), "--questions", str(questions),
                 *([] if git else ["--no-git"])]) == 0
    return study


def edit_yaml(path: Path, change: Callable[[dict], Any]) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def edit_config(study: Path, change: Callable[[dict], Any]) -> None:
    edit_yaml(study / "configs" / "study.yaml", change)


def register_test(study: Path, test: dict, *, arm: str | None = None, retriever: str | None = None) -> None:
    """One more test in the starter family (and its arm or retriever in the plan's lists)."""
    def change(plan: dict) -> None:
        next(f for f in plan["families"] if f["id"] == FAMILY)["tests"].append(test)
        for key, name in (("arms", arm), ("retrievers", retriever)):
            if name is not None:
                plan[key].append(name)

    edit_yaml(study / "plan" / "plan.yaml", change)


def rehearse(study: Path, out: Path) -> Study:
    """The twin of `study` in `out`, every configured stage run on it (as `harness rehearse` runs them, but in
    this process)."""
    twin = make_twin(Study.at(study), out, scale="small", seed=0)
    for stage in configured_stages(twin):
        assert main([stage, "--study", str(twin.root), "--no-progress"]) == 0, stage
    return Study.at(twin.root)


def scored_cells(twin: Study) -> set[tuple[str, str, str]]:
    """(dataset, arm, retriever) of every per-question row."""
    cells = set()
    for path in sorted(per_question_dir(twin).glob("*.parquet")):
        table = pq.read_table(path, columns=["dataset", "arm", "retriever"])
        cells |= set(zip(*(table.column(c).to_pylist() for c in ("dataset", "arm", "retriever"))))
    return cells


def scored_metrics(twin: Study) -> set[str]:
    """The metrics of every per-question row."""
    return {m for path in sorted(per_question_dir(twin).glob("*.parquet"))
            for m in pq.read_table(path, columns=["metric"]).column("metric").to_pylist()}


def report(twin: Study) -> str:
    return (twin.root / "results" / "report" / "report.md").read_text(encoding="utf-8")
