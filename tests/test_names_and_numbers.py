"""Names and numbers are checked once, where they are loaded (docs/pipeline.md, "Names and numbers"): a
name that could leave results/ or break a run file, a doc_id or qid with white space or a control
character, and a margin, resample count or size that is not finite or past its bound are refused by the
config schema, the plan schema, the dataset adapters and `harness compare`, naming the file and the key
or line, instead of passing the freeze and failing (or writing outside the study) stages later."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli.main import main
from harness.config import load_study_config
from harness.data.load import load_dataset
from harness.errors import HarnessError, InputError
from harness.plan.load import load_plan
from harness.study import Study

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"

CONFIG = {
    "study": "names",
    "datasets": {"papers": {"adapter": "jsonl", "metric_set": "qasper", "documents": "d.jsonl",
                            "questions": "q.jsonl"}},
    "models": {"local": {"backend": "ollama", "name": "qwen2.5:7b"}},
    "arms": {"S": {"kind": "S"}, "F512c": {"kind": "F512c"}},
    "retrievers": {"bm25": {"type": "bm25", "arms": ["S"]}},
}


def _config(change):
    raw = copy.deepcopy(CONFIG)
    change(raw)
    return load_study_config(raw, path="configs/study.yaml", default_name="dir")


def _rename(section: str, old: str, new: str):
    def change(raw):
        raw[section] = {(new if k == old else k): v for k, v in raw[section].items()}
    return change


# --- case 10 and 11: names in the config and the plan ---


@pytest.mark.parametrize("section, old, bad", [
    ("arms", "F512c", "../../../../escape"),  # case 10: build-arms wrote escape.jsonl outside the study
    ("arms", "F512c", "my arm"),  # case 11: passed select, freeze and build; score died writing the run file
    ("arms", "F512c", ".hidden"),
    ("arms", "F512c", "E__x"),  # `__` joins an arm and a retriever in part and run file names
    ("datasets", "papers", "pa/pers"),
    ("retrievers", "bm25", "bm 25"),
    ("models", "local", "a\tb"),
])
def test_a_config_name_outside_the_safe_set_is_refused_naming_the_key(section, old, bad):
    with pytest.raises(HarnessError) as refused:
        _config(_rename(section, old, bad))
    message = str(refused.value)
    assert message.startswith(f"configs/study.yaml: `{section}.{bad}` must be a name (a letter or digit")
    assert repr(bad) in message


def test_a_freshstack_domain_is_a_name_too():
    def change(raw):
        raw["datasets"]["fs"] = {"adapter": "freshstack", "metric_set": "freshstack",
                                 "domains": {"lara vel": {"queries": "q", "corpus": "c", "checkout": "x"}}}
    with pytest.raises(HarnessError, match=re.escape("`datasets.fs.domains.lara vel` must be a name")):
        _config(change)


def test_the_rule_takes_every_name_the_shipped_studies_use():
    from harness.config.names import NAME_MAX, is_safe_name

    for root in (REPO, DEMO, REPO / "examples" / "handbook"):
        study = Study.at(root)
        plan = load_plan(study.plan_path, study.amendments_dir)
        config = study.config
        names = [
            *config.datasets,
            *config.arms,
            *config.retrievers,
            *config.models,
            *plan.arms,
            *plan.retrievers,
            *(f.id for f in plan.families),
            *(t.id for f in plan.families for t in f.tests),
            *(d for ds in config.datasets.values() for d in getattr(ds, "domains", None) or {}),
        ]
        assert names and [n for n in names if not is_safe_name(n)] == []
    assert not is_safe_name("x" * (NAME_MAX + 1)) and is_safe_name("fixed@L250") and is_safe_name("E-K+M")


@pytest.fixture
def plan_copy(tmp_path):
    shutil.copytree(DEMO / "plan", tmp_path / "plan")
    shutil.copytree(DEMO / "amendments", tmp_path / "amendments")
    return tmp_path


def _edit_plan(root: Path, change) -> None:
    path = root / "plan" / "plan.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _load(root: Path):
    return load_plan(root / "plan" / "plan.yaml", root / "amendments")


@pytest.mark.parametrize("change, key", [
    (lambda d: d["families"][0].update(id="../primary"), r"families\[0\]\.id"),
    (lambda d: d["families"][0]["tests"][0].update(id="H1 papers"), r"families\[0\]\.tests\[0\]\.id"),
    (lambda d: d["arms"].append("my arm"), r"arms\[\d+\]"),
    (lambda d: d["retrievers"].append("a/b"), r"retrievers\[\d+\]"),
    (lambda d: d["datasets"].update({"pa pers": d["datasets"]["papers"]}), r"datasets\.pa pers"),
])
def test_a_plan_name_outside_the_safe_set_is_refused_naming_the_key(plan_copy, change, key):
    _edit_plan(plan_copy, change)
    with pytest.raises(InputError, match=r"plan\.yaml: " + key + r": expected a name \(a letter or digit"):
        _load(plan_copy)


# --- case 11: doc_ids and qids ---


def _jsonl_study(root: Path, documents: list[dict], questions: list[dict]) -> Study:
    data = root / "data"
    data.mkdir(parents=True)
    for name, rows in (("documents.jsonl", documents), ("questions.jsonl", questions)):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = {"study": "ids", "datasets": {"papers": {"adapter": "jsonl", "metric_set": "qasper",
                                                       "documents": "data/documents.jsonl",
                                                       "questions": "data/questions.jsonl"}},
              "arms": {"S": {"kind": "S"}}, "retrievers": {"bm25": {"type": "bm25"}}}
    (root / "configs").mkdir()
    (root / "configs" / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return Study.at(root)


def _doc(doc_id):
    return {"doc_id": doc_id, "domain": "papers", "text": "# Tides\n\nSpring tides follow the new moon.\n"}


def _question(qid, doc_id="d1"):
    return {"qid": qid, "query": "When?", "scope": {"doc": doc_id}, "cluster": "doc",
            "evidence": [{"doc_id": doc_id, "text": "Spring tides"}]}


@pytest.mark.parametrize(
    "documents, questions, file, line, what",
    [
        ([_doc("d1"), _doc("d 1")], [_question("q1")], "documents.jsonl", 2, "doc_id 'd 1' contains ' '"),
        (
            [_doc("d1"), _doc("d\x001")],
            [_question("q1")],
            "documents.jsonl",
            2,
            "doc_id 'd\\x001' contains '\\x00'",
        ),
        ([_doc("d1")], [_question("q1"), _question("q 3")], "questions.jsonl", 2, "qid 'q 3' contains ' '"),
        ([_doc("d1")], [_question("q\u00853")], "questions.jsonl", 1, "qid 'q\\x853' contains '\\x85'"),
    ],
)
def test_a_doc_id_or_qid_with_white_space_or_a_control_character_is_refused_at_load(
        tmp_path, documents, questions, file, line, what):
    study = _jsonl_study(tmp_path, documents, questions)
    with pytest.raises(InputError) as refused:
        load_dataset(study, "papers", selection=None)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'data' / file} (record line {line}): {what}")


def test_a_qasper_question_id_with_white_space_is_refused_naming_the_paper(tmp_path):
    from harness.data.qasper import read_qasper_file

    paper = {"title": "T", "abstract": "A.", "full_text": [{"section_name": "S", "paragraphs": ["Text."]}],
             "qas": [{"question_id": "q 1", "question": "Why?", "answers": []}]}
    path = tmp_path / "qasper.json"
    path.write_text(json.dumps({"1909.00694": paper}), encoding="utf-8")
    from harness.data.qasper import convert_paper

    papers = read_qasper_file(path)
    with pytest.raises(InputError, match=re.escape(f"{path} (record 1909.00694): qid 'q 1' contains ' '")):
        convert_paper("1909.00694", papers["1909.00694"], path=path)
    path.write_text(json.dumps({"1909 00694": paper}), encoding="utf-8")
    with pytest.raises(
        InputError, match=re.escape("(record paper '1909 00694'): doc_id 'qasper/1909 00694'")
    ):
        read_qasper_file(path)


# --- case 12: numbers ---


@pytest.mark.parametrize(
    "change, match",
    [
        (
            lambda d: d["datasets"]["papers"].update(margin=float("nan")),
            r"datasets\.papers\.margin: must be a finite",
        ),
        (
            lambda d: d["datasets"]["papers"].update(margin=float("inf")),
            r"datasets\.papers\.margin: must be a finite",
        ),
        (
            lambda d: d["datasets"]["papers"].update(margin=250),
            r"datasets\.papers\.margin: must be positive and at most "
            r"100 points",
        ),
        (
            lambda d: d["families"][0]["tests"][1].update(margin=float("nan")),
            r"tests\[1\]\.margin: must be a finite",
        ),
        (
            lambda d: d["families"][0]["tests"][1].update(margin=float("inf")),
            r"tests\[1\]\.margin: must be a finite",
        ),
        (lambda d: d.update(alpha=float("nan")), r"alpha: must be a finite"),
        (
            lambda d: d["bootstrap"].update(resamples=10**20),
            r"bootstrap\.resamples: expected an integer >= 2 and "
            r"<= 1000000; got 100000000000000000000",
        ),
        (
            lambda d: d["permutation"].update(max_flips=10**7),
            r"permutation\.max_flips: expected an integer >= 1 and "
            r"<= 1000000",
        ),
    ],
)
def test_a_plan_number_that_is_not_finite_or_past_its_bound_is_refused(plan_copy, change, match):
    _edit_plan(plan_copy, change)
    with pytest.raises(InputError, match=match):
        _load(plan_copy)


@pytest.mark.parametrize(
    "change, match",
    [
        (
            lambda raw: raw.update(chunking={"tau_max": 10**32}),
            r"`chunking\.tau_max` must be a finite number of at most "
            r"9,007,199,254,740,992 in size",
        ),
        (
            lambda raw: raw.update(budgets={"qasper": [float("inf")]}),
            r"`budgets\.qasper\[0\]` must be an integer",
        ),
        (
            lambda raw: raw.update(llm={"spend_cap_usd": float("inf")}),
            r"`llm\.spend_cap_usd` must be a finite",
        ),
        (
            lambda raw: raw.update(llm={"spend_cap_usd": float("nan")}),
            r"`llm\.spend_cap_usd` must be a number >= 0, "
            r"got nan",
        ),
    ],
)
def test_a_config_number_that_is_not_finite_or_too_large_is_refused(change, match):
    with pytest.raises(HarnessError, match=match):
        _config(change)


@pytest.mark.parametrize("flag, value, match", [
    ("--resamples", "300000000", "compare: --resamples must lie from 2 to 1,000,000; got 300,000,000"),
    ("--max-flips", "0", "compare: --max-flips must lie from 1 to 1,000,000; got 0"),
    ("--margin", "nan", "compare: --margin must be positive and at most 100 points; got nan"),
    ("--margin", "inf", "compare: --margin must be positive and at most 100 points; got inf"),
])
def test_compare_refuses_numbers_past_the_plans_bounds_before_reading(tmp_path, capsys, flag, value, match):
    args = [
        "compare",
        "--results",
        str(tmp_path / "absent.parquet"),
        "--dataset",
        "d",
        "--a",
        "A",
        "--b",
        "B",
        "--retriever",
        "bm25",
        "--metric",
        "rec@512t",
        flag,
        value,
    ]
    assert main(args) == 1
    assert match in capsys.readouterr().err
