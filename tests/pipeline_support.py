"""A copy of the demo study restricted to the LLM-free arms (and by default BM25), selected and frozen."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from harness.cli.main import main
from harness.study import Study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
LLM_FREE = ["S", "S+T", "F512c", "F256t", "P", "FL"]


def make_llm_free_study(root: Path, retrievers: tuple[str, ...] = ("bm25",), *, freeze: bool = True,
                        arms: tuple[str, ...] | list[str] = tuple(LLM_FREE)) -> Study:
    """`arms` (a subset of LLM_FREE) keeps a test's study as small as what it checks needs."""
    assert set(arms) <= set(LLM_FREE), arms
    for part in ("configs", "data", "plan", "amendments", "prompts"):
        shutil.copytree(DEMO / part, root / part)
    edit_config(
        root,
        lambda cfg: (
            cfg.__setitem__("arms", {a: {"kind": a} for a in arms}),
            cfg.__setitem__(
                "retrievers", {r: _llm_free_retriever(cfg["retrievers"][r], arms) for r in retrievers}
            ),
            cfg.pop("models", None),
            cfg.pop("reader", None),  # the answer stage needs a model
            cfg.pop("judge", None),
        ),
    )
    _keep_llm_free_tests(
        root, retrievers, arms
    )  # freeze refuses a plan naming arms the config does not define
    if freeze:
        assert main(["select", "--study", str(root)]) == 0
        assert main(["freeze", "--study", str(root)]) == 0
    return Study.at(root)


def _llm_free_retriever(cfg: dict, arms) -> dict:
    """A retriever entry whose `arms:` list (if any) keeps only the arms this copy configures; a list that
    then names every one of them restricts nothing and is dropped, so arms a test adds get its cells too."""
    if "arms" not in cfg:
        return cfg
    kept = [a for a in cfg["arms"] if a in arms]
    return {k: v for k, v in cfg.items() if k != "arms"} if set(kept) == set(arms) else {**cfg, "arms": kept}


def edit_config(root: Path, change) -> None:
    path = root / "configs" / "study.yaml"
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(cfg)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


def _keep_llm_free_tests(root: Path, retrievers: tuple[str, ...], arms) -> None:
    plan_path = root / "plan" / "plan.yaml"
    plan = yaml.safe_load(plan_path.read_text(encoding="utf-8"))
    for family in plan["families"]:
        family["tests"] = [t for t in family["tests"] if t["a"] in arms and t["b"] in arms
                           and not t["metric"].startswith(("answer_f1", "nugget_recall"))]  # no reader here
        for test in family["tests"]:  # a retriever this copy leaves out: its last one stands in
            test["retriever"] = test["retriever"] if test["retriever"] in retrievers else retrievers[-1]
        # a cross-retriever test needs both of its retrievers
        family["tests"] = [t for t in family["tests"] if t.get("retriever_b", retrievers[0]) in retrievers
                           and t.get("retriever_b") != t["retriever"]]
    plan["families"] = [f for f in plan["families"] if f["tests"]]
    plan["arms"] = [a for a in plan["arms"] if a in arms]
    plan["exploratory"] = [e for e in plan.get("exploratory", [])
                           if all(e.get(side, "S") in arms for side in ("a", "b"))]

    def stand_in(r):  # a retriever this copy leaves out: its last one stands in
        return r if r in retrievers else retrievers[-1]

    for entry in plan["exploratory"]:
        if "retriever" in entry:
            entry["retriever"] = stand_in(entry["retriever"])
        if "retrievers" in entry:
            entry["retrievers"] = list(dict.fromkeys(map(stand_in, entry["retrievers"])))
    plan["retrievers"] = list(retrievers)
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    shutil.rmtree(root / "amendments")  # the demo's only amendment tests E against E-K


def copy_study(source: Path, tmp_path: Path) -> Study:
    """A writable copy of a built study (`tmp_path`/s) for a test that edits it."""
    shutil.copytree(source, tmp_path / "s")
    return Study.at(tmp_path / "s")


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`harness ARGV` in-process: its exit code and what it printed to stdout and stderr."""
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def with_fake_reader_and_judge(root: Path) -> None:
    """The study's config given one fake model (`fake-model`, install its digest) as reader and judge of three
    answer cells: papers S and S+T, docs S, all under BM25."""
    edit_config(root, lambda cfg: cfg.update({
        "models": {"fake": {"backend": "ollama", "name": "fake-model"}},
        "reader": {"model": "fake", "questions": 3, "seed": 1,
                   "cells": [{"dataset": "papers", "retriever": "bm25", "arms": ["S", "S+T"]},
                             {"dataset": "docs", "retriever": "bm25", "arms": ["S"]}]},
        "judge": {"model": "fake"},
    }))


def seed_chunk_vectors(study: Study, arms: tuple[str, ...] | list[str]) -> set[str]:
    """Copy into the study's vector cache the demo's shipped MiniLM vectors of these arms' chunk texts (every
    dataset; run after build-arms), and return those texts. A test whose subject is not encoding spares
    itself re-encoding them (tens of milliseconds each on one thread); the queries and the other arms' chunks
    are still encoded, so every encoding path still runs."""
    from harness.arms.build import read_chunk_set
    from harness.data.load import load_dataset, read_selection
    from harness.files import read_json
    from harness.grid.cells import arm_spec, configured_cells
    from harness.grid.paths import embeddings_dir
    from harness.provenance.freeze import frozen_hash
    from harness.retrieval.cache import CacheNamespace, VectorCache

    frozen, selection = frozen_hash(study), read_selection(study)
    datasets = [load_dataset(study, name, selection=selection)
                for name in sorted({cell.dataset.name for cell in configured_cells(study)})]
    texts = sorted({chunk.indexed_text for dataset in datasets for arm in arms
                    for chunk in read_chunk_set(study, dataset, arm_spec(study, arm), frozen_hash=frozen)})

    def refuse(missing: list[str]):
        raise AssertionError(f"{len(missing)} chunk texts are not among the demo's shipped vectors")

    shipped_root = DEMO / "results" / "embeddings"
    for meta in sorted(shipped_root.glob("*/namespace.json")):
        namespace = CacheNamespace(**read_json(meta))
        if namespace.kind != "embedding":
            continue
        shipped = VectorCache(shipped_root, namespace)
        seeded = VectorCache(embeddings_dir(study), namespace)
        seeded.encode(texts, lambda batch: shipped.encode(batch, refuse))
        seeded.flush()
    return set(texts)
