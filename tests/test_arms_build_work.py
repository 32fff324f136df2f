"""What build-arms computes once per dataset rather than once per chunk set (docs/pipeline.md, build-arms)."""

from __future__ import annotations

import harness.arms.build as build
from harness.data.load import load_dataset, read_selection
from harness.data.model import Chunk
from pipeline_support import make_llm_free_study


def test_the_manifests_parse_each_document_once_for_all_chunk_sets_of_a_dataset(tmp_path, monkeypatch):
    study = make_llm_free_study(tmp_path / "study", arms=("S", "F512c", "P"), freeze=False)
    parsed: list[str] = []

    def counted(text: str):
        parsed.append(text)
        return parse_blocks(text)

    parse_blocks = build.parse_blocks
    monkeypatch.setattr(build, "parse_blocks", counted)
    builds = build.build_arms(study, frozen_hash=None, progress=False, log=lambda _: None)
    datasets = sorted({b.dataset for b in builds})
    assert len(builds) == 3 * len(datasets) and not any(b.skipped for b in builds)
    selection = read_selection(study)
    texts = [d.text for name in datasets for d in load_dataset(study, name, selection=selection).documents]
    assert sorted(parsed) == sorted(texts)  # once per dataset: three chunk sets parsed them three times


def test_a_chunk_spans_sections_when_a_header_starts_inside_it_after_its_first_character():
    headers = {"d": [0, 10, 20, 35]}
    for (start, end), spans in {(0, 10): False, (0, 11): True, (10, 20): False, (11, 19): False,
                                (5, 36): True, (36, 90): False, (21, 35): False}.items():
        chunk = Chunk("d", "d#0", "x", ((start, start + 1), (end - 1, end)), "", 1, 1, ("paragraph",))
        assert build._spans_sections(headers, chunk) is spans, (start, end)
    assert build._spans_sections({}, chunk) is False
