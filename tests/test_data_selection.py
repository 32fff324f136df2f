"""`harness select`: seeded, byte-stable samples that respect exclusion lists."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from data_support import CHECKOUT, freshstack_study

from harness.cli.main import main
from harness.data import freshstack
from harness.data.load import load_dataset, read_selection
from harness.data.sampling import draw
from harness.data.selection import build_selection
from harness.errors import HarnessError
from harness.study import Study


def jsonl_study(tmp_path: Path, n_docs: int, selection: dict) -> Study:
    data = tmp_path / "data"
    data.mkdir()
    docs = [
        {"doc_id": f"p/{i:02d}", "domain": "papers", "text": f"Paper {i} says fact {i}."}
        for i in range(n_docs)
    ]
    questions = [
        {
            "qid": f"q{i:02d}",
            "query": f"What does paper {i} say?",
            "scope": {"doc": f"p/{i:02d}"},
            "cluster": "doc",
            "evidence": [{"doc_id": f"p/{i:02d}", "text": f"fact {i}"}],
        }
        for i in range(n_docs)
    ]
    (data / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    config = {
        "study": "sel",
        "datasets": {
            "papers": {
                "adapter": "jsonl",
                "metric_set": "qasper",
                "documents": "data/documents.jsonl",
                "questions": "data/questions.jsonl",
                "selection": selection,
            }
        },
        "arms": {"S": {"kind": "S"}},
        "retrievers": {"bm25": {"type": "bm25"}},
    }
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(config))
    return Study.at(tmp_path)


def test_sample_is_random_sample_over_sorted_population_after_exclusions(tmp_path):
    (tmp_path / "pilot.txt").write_text("# pilot papers\np/03\np/07  # used in the pilot\n\np/99\n")
    study = jsonl_study(tmp_path, 12, {"seed": 2027, "n_clusters": 5, "exclude": "pilot.txt"})
    entry = build_selection(study)["datasets"]["papers"]
    population = [f"p/{i:02d}" for i in range(12) if i not in (3, 7)]
    assert entry["selected"] == random.Random(2027).sample(population, 5)
    assert entry["excluded"] == ["p/03", "p/07"] and entry["exclude"]["ids"] == ["p/03", "p/07", "p/99"]
    assert (entry["eligible_count"], entry["population_count"], entry["n_requested"]) == (12, 10, 5)
    assert entry["exclude"]["source"] == "pilot.txt" and len(entry["exclude"]["sha256"]) == 64
    loaded = load_dataset(study, "papers", selection=read_selection(study))
    assert sorted(q.cluster for q in loaded.questions) == sorted(entry["selected"])


def test_rerun_gives_identical_bytes_and_seed_changes_the_draw(tmp_path):
    study = jsonl_study(tmp_path, 30, {"seed": 5, "n_clusters": 10, "exclude": ["p/01"]})
    build_selection(study)
    first = study.selection_path.read_bytes()
    build_selection(study)
    assert study.selection_path.read_bytes() == first
    study.raw_config["datasets"]["papers"]["selection"]["seed"] = 6
    (study.root / "configs" / "study.yaml").write_text(yaml.safe_dump(study.raw_config))
    redrawn = build_selection(Study.at(study.root))["datasets"]["papers"]["selected"]
    assert redrawn != json.loads(first)["datasets"]["papers"]["selected"]


def test_all_takes_the_sorted_population():
    entry = draw("d", ["b", "a", "c", "a"], ["c"], "all", seed=1)
    assert entry["selected"] == ["a", "b"] and entry["eligible"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "selection, message",
    [
        ({"seed": 1, "n_clusters": 11}, r"dataset `papers`: asked for 11 but only 10 eligible ids remain"),
        ({"seed": "x", "n_clusters": 2}, r"`datasets\.papers\.selection\.seed` must be an integer, got 'x'"),
        (
            {"seed": 1, "n_clusters": 0},
            r"`datasets\.papers\.selection\.n_clusters` must be one of 'all' or an integer >= 1, got 0",
        ),
        ({"seed": 1, "exclude": "missing.txt"}, r"dataset `papers`: exclusion file .*missing\.txt not found"),
        (
            {"seed": 1, "exclude": {"a": 1}},
            r"`datasets\.papers\.selection\.exclude` must be a non-empty string or a list",
        ),
    ],
)
def test_bad_selection_settings(tmp_path, selection, message):
    study = jsonl_study(tmp_path, 10, selection)
    with pytest.raises(HarnessError, match=message):
        build_selection(study)


def test_cli_select_writes_file_and_reports(tmp_path, capsys):
    study = jsonl_study(tmp_path, 6, {"seed": 9, "n_clusters": 3})
    assert main(["select", "--study", str(study.root)]) == 0
    out = capsys.readouterr().out
    assert "papers: selected 3 of 6 (6 eligible, 0 excluded, seed 9)" in out
    assert study.selection_path.is_file()
    study.raw_config["datasets"]["papers"]["selection"]["n_clusters"] = 7
    (study.root / "configs" / "study.yaml").write_text(yaml.safe_dump(study.raw_config))
    assert main(["select", "--study", str(study.root)]) == 1
    assert "asked for 7 but only 6" in capsys.readouterr().err


@pytest.mark.skipif(
    not (CHECKOUT / "blade.md").is_file(), reason="../shared/data/laravel-docs-724c31cc is absent"
)
def test_freshstack_selects_questions_per_domain_and_records_distractors(tmp_path):
    study = freshstack_study(
        tmp_path, ratio=1, selection={"seed": 4, "n_questions": {"laravel": 1}, "exclude": ["q1"]}
    )
    sel = build_selection(study)
    entry = sel["datasets"]["fs"]["domains"]["laravel"]
    assert entry["eligible"] == ["q1", "q3"] and entry["excluded"] == ["q1"] and entry["selected"] == ["q3"]
    assert entry["gold_files"] == ["routing.md"]
    candidates = [f for f in freshstack.markdown_files(CHECKOUT) if f != "routing.md"]
    assert entry["distractors"] == random.Random(4).sample(candidates, 1)
    assert entry["commit"] == "724c31ccd3edce6b6dfe5e0dd2a594a47217f078"
    loaded = load_dataset(study, "fs", selection=sel)
    assert [q.qid for q in loaded.questions] == ["q3"]
    assert loaded.questions[0].scope == tuple(
        sorted(["laravel/routing.md", f"laravel/{entry['distractors'][0]}"])
    )
