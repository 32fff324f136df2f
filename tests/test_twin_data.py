"""The rehearsal's simulated datasets (harness.rehearsal.twin_data): written in each adapter's own format,
they
load through the adapters with every evidence string located, `harness select` and `harness config` accept the
twin study, header-led chunking sees the structure of the real data, the paper scale has the paper's counts,
and the same inputs give the same bytes."""

from __future__ import annotations

import json
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.chunking.blocks import parse_blocks
from harness.chunking.header_led import header_led_chunks
from harness.cli.main import main
from harness.data.adapters import ADAPTERS
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.files import read_json
from harness.rehearsal.twin_data import FOLDER, MANIFEST, SCALES, WRITERS, write_twin_datasets
from harness.retrieval.bm25 import BM25Retriever
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]
FLAGSHIP, DEMO, HANDBOOK = ROOT, ROOT / "examples" / "demo", ROOT / "examples" / "handbook"
COPIED = ("configs", "plan", "amendments", "prompts")  # what a twin keeps of its study (besides the data)
LOSSES = ("evidence_unlocated", "evidence_span_text_mismatch", "gold_text_mismatch", "gold_not_in_corpus",
          "gold_file_missing", "gold_out_of_range", "gold_id_malformed")


def make_twin_study(source: Path, dest: Path, scale: str, seed: int = 0) -> Study:
    """The study's configs, plan, amendments and prompts with `datasets:` pointing at its simulated data."""
    study = Study.at(source)
    dest.mkdir(parents=True)
    for folder in COPIED:
        if (source / folder).is_dir():
            shutil.copytree(source / folder, dest / folder)
    raw = dict(study.raw_config)
    raw["datasets"] = write_twin_datasets(study.config, study.root, dest, scale=scale, seed=seed)
    (dest / "configs" / "study.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return Study.at(dest)


@pytest.fixture(scope="module")
def small_twins(tmp_path_factory):
    """The flagship, the demo and the handbook twins at scale small, each selected by `harness select`."""
    twins = {}
    for source in (FLAGSHIP, DEMO, HANDBOOK):
        twin = make_twin_study(source, tmp_path_factory.mktemp("twin") / source.name, "small")
        assert main(["select", "--study", str(twin.root)]) == 0
        twins[source] = Study.at(twin.root)  # a fresh Study: select's loads are cached per command
    return twins


def _loaded(study: Study) -> dict:
    selection = read_selection(study)
    return {name: load_dataset(study, name, selection=selection) for name in sorted(study.config.datasets)}


@pytest.mark.parametrize("source", [FLAGSHIP, DEMO, HANDBOOK], ids=["flagship", "demo", "handbook"])
def test_every_twin_dataset_loads_with_every_evidence_string_located(small_twins, source, capsys):
    study = small_twins[source]
    assert main(["config", "--study", str(study.root)]) == 0
    assert "datasets:" in capsys.readouterr().out
    loaded = _loaded(study)
    assert set(loaded) == set(Study.at(source).config.datasets)
    for name, dataset in loaded.items():
        assert dataset.questions and dataset.documents, name
        assert all(e.located for q in dataset.questions for e in q.evidence), name
        assert not any(dataset.counts.get(k) for k in LOSSES), (name, dataset.counts)
        chunks = [c for d in dataset.documents for c in header_led_chunks(d, tau_min=study.chunking.tau_min,
                                                                            tau_max=study.chunking.tau_max)]
        assert {c.doc_id for c in chunks} == {d.doc_id for d in dataset.documents}


@pytest.mark.parametrize("source", [DEMO, HANDBOOK], ids=["demo", "handbook"])
def test_the_twin_questions_fall_in_the_strata_the_plan_may_name(small_twins, source):
    """Strata are named in plans (`subset: {strata: [...]}`, subset contrasts): the twin keeps the study's."""
    real = Study.at(source)
    for name, dataset in _loaded(small_twins[source]).items():
        expected = {q.stratum for q in load_dataset(real, name, selection=None).questions}
        assert {q.stratum for q in dataset.questions} == expected, name


def test_the_flagship_twin_keeps_its_settings_and_shares_the_qasper_files(small_twins):
    study, source = small_twins[FLAGSHIP], Study.at(FLAGSHIP)
    for name, cfg in source.config.datasets.items():
        twin = study.config.datasets[name]
        assert (twin.adapter, twin.metric_set, twin.selection.seed) == (
            cfg.adapter,
            cfg.metric_set,
            cfg.selection.seed,
        )
        assert getattr(twin, "retrieval_scope", None) == getattr(cfg, "retrieval_scope", None)
    assert study.config.datasets["qasper"].files == study.config.datasets["qasper-pooled"].files
    assert study.config.datasets["freshstack"].domains["angular"].distractor_ratio == 0.5
    assert {
        q.stratum for q in load_dataset(study, "freshstack", selection=read_selection(study)).questions
    } == {"laravel", "angular", "yolo"}
    # 300 papers cannot be drawn from the small twin's 12: lowered, and said so
    assert study.config.datasets["qasper"].selection.n_clusters == 12
    notes = read_json(study.root / FOLDER / MANIFEST)["notes"]
    assert any("qasper: selection.n_clusters lowered from 300 to 12" in n for n in notes)
    # the pilot's ids are clusters of the twin, drawn out as the real selection draws them out
    selection = read_selection(study)["datasets"]
    assert len(selection["qasper"]["excluded"]) == 30
    assert len(selection["freshstack"]["domains"]["laravel"]["excluded"]) == 73


def test_questions_find_their_evidence_better_than_chance_but_not_always(small_twins):
    """BM25 over header-led chunks: the top chunk holds evidence far more often than a random one would."""
    for name, dataset in _loaded(small_twins[FLAGSHIP]).items():
        chunks = {d.doc_id: header_led_chunks(d) for d in dataset.documents}
        hits, chance, indexes = [], [], {}
        for q in dataset.questions:
            pool = [c for doc_id in q.scope for c in chunks[doc_id]]
            if q.scope not in indexes:
                indexes[q.scope] = BM25Retriever("bm25").index(
                    "", [replace(c, indexed_text=c.text) for c in pool]
                )
            gold = {i for i, c in enumerate(pool) for e in q.evidence
                    if c.doc_id == e.doc_id and c.spans[0][0] < e.end and e.start < c.spans[0][1]}
            hits.append(int(np.argmax(indexes[q.scope].scores(q.query))) in gold)
            chance.append(len(gold) / len(pool))
        assert 3 * statistics.mean(chance) < statistics.mean(hits) < 0.95, name


def test_chunkers_meet_short_sections_and_long_blocks(small_twins):
    """Some sections are shorter than tau_min (header-led chunking joins them to a neighbour) and some blocks
    longer than tau_max (it cannot split them: a chunk over tau_max), in papers and docs pages; headers nest
    three deep, and the docs pages hold every block kind of real documentation."""
    study = small_twins[FLAGSHIP]
    tau_min, tau_max = study.chunking.tau_min, study.chunking.tau_max
    for name, dataset in _loaded(study).items():
        kinds, sections, short_sections, long_blocks, long_chunks, depth = set(), 0, 0, 0, 0, 0
        for doc in dataset.documents:
            blocks = parse_blocks(doc.text)
            kinds |= {b.kind for b in blocks}
            depth = max([depth] + [b.level for b in blocks])
            long_blocks += sum(len(b.text) > tau_max for b in blocks)
            headers = [k for k, b in enumerate(blocks) if b.kind == "header"] + [len(blocks)]
            for here, after in zip(headers, headers[1:]):
                body = sum(len(b.text) for b in blocks[here + 1:after])
                sections += body > 0
                short_sections += 0 < body < tau_min
            long_chunks += sum(
                len(c.text) > tau_max for c in header_led_chunks(doc, tau_min=tau_min, tau_max=tau_max)
            )
        assert short_sections >= 0.03 * sections and long_blocks >= 0.01 * sections, name
        assert long_chunks >= long_blocks and depth >= 3, name
        if name == "freshstack":
            assert {"code", "table", "list", "blockquote", "paragraph"} <= kinds


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    study = Study.at(FLAGSHIP)
    for out, seed in (("first", 7), ("second", 7), ("other-seed", 8)):
        write_twin_datasets(study.config, study.root, tmp_path / out, scale="small", seed=seed)
    first, second = _files(tmp_path / "first"), _files(tmp_path / "second")
    assert len(first) > 40 and first == second
    assert _files(tmp_path / "other-seed") != first


def test_every_adapter_has_a_twin_writer_here_or_writes_simulated_files_itself():
    assert set(WRITERS) <= set(ADAPTERS)
    assert [name for name, adapter in ADAPTERS.items()
            if (name in WRITERS) == (adapter.write_simulated is not None)] == []


def test_an_unknown_scale_is_refused(tmp_path):
    study = Study.at(DEMO)
    with pytest.raises(HarnessError, match="scale 'huge' is not one of paper, small"):
        write_twin_datasets(study.config, study.root, tmp_path, scale="huge", seed=0)
    assert SCALES == ("paper", "small")


@pytest.mark.slow
def test_the_paper_scale_twin_has_the_papers_counts(tmp_path):
    """Qasper: 300 papers, 951 questions, 2,245 evidence paragraphs, about 24 header-led chunks per paper;
    FreshStack: 235 questions (89 / 99 / 47) over 377 files."""
    study = make_twin_study(FLAGSHIP, tmp_path / "twin", "paper")
    assert main(["select", "--study", str(study.root)]) == 0
    loaded = _loaded(Study.at(study.root))
    for name in ("qasper", "qasper-pooled"):
        qasper = loaded[name]
        assert (len(qasper.documents), len(qasper.questions)) == (300, 951)
        assert sum(len(q.evidence) for q in qasper.questions) == 2245
    per_paper = [len(header_led_chunks(d)) for d in loaded["qasper"].documents]
    assert 22 <= statistics.mean(per_paper) <= 26
    freshstack = loaded["freshstack"]
    assert len(freshstack.documents) == 377
    by_domain = {d: sum(q.stratum == d for q in freshstack.questions) for d in ("laravel", "angular", "yolo")}
    assert by_domain == {"laravel": 89, "angular": 99, "yolo": 47}
    assert read_json(study.root / FOLDER / MANIFEST)["notes"] == []


def test_a_small_twin_holds_the_clusters_the_plan_samples(tmp_path):
    """The flagship samples 100 papers (a subset test and PF's documents): a small twin raised to 100 keeps
    its papers short, and every planned evidence paragraph still fits."""
    study = Study.at(FLAGSHIP)
    out = tmp_path / "raised"
    mapping = write_twin_datasets(
        study.config, study.root, out, scale="small", seed=0, min_clusters={"qasper": 100}
    )
    assert (
        mapping["qasper"]["selection"]["n_clusters"]
        == 100
        == mapping["qasper-pooled"]["selection"]["n_clusters"]
    )
    papers = {}
    for rel in mapping["qasper"]["files"]:
        papers |= json.loads((out / rel).read_text())
    kept = [
        p for p in papers.values() if any(a["answer"]["evidence"] for q in p["qas"] for a in q["answers"])
    ]
    assert len(kept) >= 100 + 30  # the sampled population plus the pilot's excluded papers
    sections = sorted(len(p["full_text"]) for p in kept)
    assert sections[len(sections) // 2] <= 8  # short papers: a few chunks each
    notes = read_json(out / FOLDER / MANIFEST)["notes"]
    assert any("100 papers instead of 12" in n for n in notes)
