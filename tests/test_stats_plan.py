import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.errors import InputError
from harness.plan.load import load_plan
from harness.plan.model import derive_seed

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"


def test_flagship_plan_has_the_registered_families_and_counts():
    plan = load_plan(ROOT / "plan" / "plan.yaml", ROOT / "amendments")
    sizes = {f.id: len(f.tests) for f in plan.families if f.multiplicity == "holm"}
    assert sizes == {"primary": 4, "H3": 4, "key_secondary": 5, "H4": 8, "H5": 4, "H6": 1, "H7": 2}
    assert [a.id for a in plan.amendments] == ["0001", "0002", "0003", "0004"]
    assert [a.before_outcomes for a in plan.amendments] == [True, False, False, False]  # A2-A4 after H1-H3
    primary = plan.family("primary")
    assert [(t.a, t.b, t.dataset, t.margin) for t in primary.tests] == [
        ("E", "S+T", "qasper", 5),
        ("E", "CR", "qasper", 5),
        ("E", "S+T", "freshstack", 4),
        ("E", "CR", "freshstack", 4),
    ]
    assert plan.family("H3").signflip_required and plan.family("H3").rule == "two-sided"
    h4 = plan.family("H4")
    assert sorted(t.rule for t in h4.tests) == ["tost"] * 4 + ["two-sided"] * 4
    assert plan.family("H6").tests[0].subset.n_clusters == 100
    assert {"mxbai", "qwen3", "hybrid-qwen3", "rerank"} <= set(plan.retrievers)
    assert plan.resamples == 10_000 and plan.datasets["freshstack"].stratified


def test_demo_plan_mirrors_the_flagship_structure():
    plan = load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")
    assert [f.id for f in plan.families] == [
        "primary",
        "H3",
        "key_secondary",
        "exploratory",
        "robustness",
        "answers",
        "H4",
        "H4-merge",
        "H5",
        "H7",
    ]
    assert plan.family("answers").tests[1].acceptance.judge == "nugget-judge"
    assert {t.retriever for t in plan.family("key_secondary").tests} == {"minilm"}
    assert plan.family("H4").source == "amendment 0001"


def test_derive_seed_is_stable_and_depends_on_the_test_id():
    digest = int.from_bytes(hashlib.sha256(b"H1-qasper").digest()[:8], "big")
    expected = int(np.random.SeedSequence([1101, digest]).generate_state(1, dtype=np.uint32)[0])
    assert derive_seed(1101, "H1-qasper") == expected
    assert derive_seed(1101, "H1-qasper") != derive_seed(1101, "H2-qasper") != derive_seed(1102, "H2-qasper")


@pytest.fixture
def study(tmp_path):
    shutil.copytree(DEMO / "plan", tmp_path / "plan")
    shutil.copytree(DEMO / "amendments", tmp_path / "amendments")
    return tmp_path


def _edit(path, change):
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _load(study):
    return load_plan(study / "plan" / "plan.yaml", study / "amendments")


PLAN_ERRORS = [
    (lambda d: d.pop("alpha"), r"plan\.yaml: alpha: required key is missing"),
    (lambda d: d.update(alpa=0.05), r"plan\.yaml: alpa: unknown key"),
    (lambda d: d["families"][0].update(tier="primary"), r"families\[0\]\.tier: expected one of confirmatory"),
    (
        lambda d: d["families"][0]["tests"][1].pop("margin"),
        r"families\[0\]\.tests\[1\]\.margin: required for a TOST test",
    ),
    (
        lambda d: d["families"][1]["tests"][0].update(margin=3),
        r"families\[1\]\.tests\[0\]\.margin: only TOST tests",
    ),
    (
        lambda d: d["families"][0]["tests"][0].update(a="Z"),
        r"families\[0\]\.tests\[0\]\.a: arm 'Z' is not registered",
    ),
    (
        lambda d: d["families"][0]["tests"][0].update(metric="rec@9t"),
        r"metric 'rec@9t' is not registered for dataset 'papers'",
    ),
    (lambda d: d["families"][0]["tests"][0].update(b="E"), r"tests\[0\]\.b: compares arm 'E' with itself"),
    (
        lambda d: d["families"][1]["tests"][1].update(id="H3-F512c-papers"),
        r"test 'H3-F512c-papers' already exists",
    ),
    (
        lambda d: d["families"][1]["decision"].update(signflip_required=False),
        r"needs decision\.signflip_required: true",
    ),
    (lambda d: d.update(registered_at="yesterday"), r"registered_at: expected an ISO 8601 date-time"),
    (lambda d: d["bootstrap"].update(method="bca"), r"bootstrap\.method: expected one of bca-cluster"),
    (lambda d: d["datasets"]["docs"].update(margin=-4), r"datasets\.docs\.margin: must be positive"),
]


@pytest.mark.parametrize("change, match", PLAN_ERRORS)
def test_malformed_plan_errors_name_file_and_key(study, change, match):
    _edit(study / "plan" / "plan.yaml", change)
    with pytest.raises(InputError, match=match):
        _load(study)


def _amend(d):
    return d["adds"]["families"][0]


AMENDMENT_ERRORS = [
    (
        lambda d: _amend(d)["tests"][0].update(id="H1-papers"),
        r"0001-key-ablation\.yaml: adds\.families\[0\]\.tests\[0\]\.id: test 'H1-papers' already exists",
    ),
    (lambda d: _amend(d).update(id="primary"), r"adds\.families\[0\]\.id: family 'primary' already exists"),
    (lambda d: d["adds"].update(arms=["E"]), r"adds\.arms\[0\]: arm 'E' is already registered"),
    (lambda d: d.update(id="0002"), r"id: '0002' does not match the file name's number '0001'"),
    (lambda d: d.update(before_outcomes="yes"), r"before_outcomes: expected true or false"),
    (
        lambda d: d["adds"].update(
            tests=[
                {
                    "family": "primary",
                    "id": "new",
                    "a": "E",
                    "b": "S",
                    "retriever": "hybrid",
                    "dataset": "papers",
                    "metric": "rec@512t",
                    "margin": 5,
                }
            ]
        ),
        r"adds\.tests\[0\]\.family: 'primary' is registered in plan\.yaml",
    ),
    (lambda d: d.pop("reason"), r"reason: required key is missing"),
]


@pytest.mark.parametrize("change, match", AMENDMENT_ERRORS)
def test_amendments_only_add(study, change, match):
    _edit(study / "amendments" / "0001-key-ablation.yaml", change)
    with pytest.raises(InputError, match=match):
        _load(study)


def test_amendment_needs_its_prose_and_a_proper_name(study):
    (study / "amendments" / "0001-key-ablation.md").unlink()
    with pytest.raises(InputError, match=r"0001-key-ablation\.md is missing beside it"):
        _load(study)
    (study / "amendments" / "0001-key-ablation.yaml").rename(study / "amendments" / "1-x.yaml")
    with pytest.raises(InputError, match=r"1-x\.yaml: amendment files are named NNNN-slug\.yaml"):
        _load(study)


def test_amendment_may_extend_its_own_earlier_family(study):
    second = study / "amendments" / "0003-more.yaml"
    second.write_text(
        yaml.safe_dump(
            {
                "id": "0003",
                "created_at": "2025-02-01T00:00:00Z",
                "reason": "one more",
                "before_outcomes": False,
                "adds": {
                    "tests": [
                        {
                            "family": "H4",
                            "id": "H4-EK-papers-1024",
                            "a": "E",
                            "b": "E-K",
                            "retriever": "hybrid",
                            "dataset": "papers",
                            "metric": "rec@1024t",
                            "margin": 5,
                        }
                    ]
                },
            }
        )
    )
    (study / "amendments" / "0003-more.md").write_text("prose")
    plan = _load(study)
    assert [t.id for t in plan.family("H4").tests][-1] == "H4-EK-papers-1024"
    assert plan.amendments[-1].tests == ("H4-EK-papers-1024",) and not plan.amendments[-1].before_outcomes
