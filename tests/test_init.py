"""`harness init DIR` writes a runnable, registered study around the user's data; `make all` (harness run-all)
takes it to a report. The end-to-end tests run every stage on a tiny corpus (4 documents, 20 questions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from data_support import CHECKOUT, SHARED_DATA, freshstack_study
from harness.cli.main import main
from harness.data.load import load_dataset
from harness.plan.load import load_study_plan
from harness.provenance.timeline import SOURCE_GIT, SOURCE_RECORD, timeline
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ("harbour", "orchard", "glacier", "library")
WORDS = ("amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "heron", "indigo", "juniper")
TESTS = ("H3-F512c", "H3-F256t")  # the structure family init registers


def corpus(folder: Path) -> tuple[Path, Path]:
    """documents.jsonl (bodies under docs/) and questions.jsonl: 20 questions, each its own cluster."""
    (folder / "docs").mkdir(parents=True)
    documents, questions = [], []
    for t, topic in enumerate(TOPICS):
        lines = [f"# The {topic} handbook", ""]
        for s in range(3):
            lines += [f"## Section {s + 1} of the {topic}", ""]
            for p in range(2):
                w = WORDS[(t + s + p) % len(WORDS)]
                lines += [f"The {topic} keeps its {w} records in room {t}{s}{p}. Each {w} record lists the "
                          f"{topic} inspections of season {s} and the keeper who signed them.", ""]
                if len(questions) < 20:
                    questions.append(
                        {
                            "qid": f"q{len(questions):02d}",
                            "query": f"Where does the {topic} keep its {w} records?",
                            "scope": {"domain": "docs"},
                            "cluster": "question",
                            "evidence": [
                                {"doc_id": topic, "text": f"keeps its {w} records in room {t}{s}{p}"}
                            ],
                        }
                    )
        (folder / "docs" / f"{topic}.md").write_text("\n".join(lines), encoding="utf-8")
        documents.append({"doc_id": topic, "domain": "docs", "path": f"docs/{topic}.md"})
    write_jsonl(folder / "documents.jsonl", documents)
    write_jsonl(folder / "questions.jsonl", questions)
    return folder / "documents.jsonl", folder / "questions.jsonl"


def markdown_questions(folder: Path, path: Path) -> Path:
    """The same questions as {question, evidence} records over the Markdown folder: one string found after
    collapsing whitespace, one found nowhere beside a located one, and one question with nothing located."""
    rows = [{"question": q["query"], "evidence": [q["evidence"][0]["text"]]}
            for q in map(json.loads, (folder / "questions.jsonl").read_text().splitlines())]
    rows[0]["evidence"].append("a string found in no document")
    rows[1]["evidence"] = [rows[1]["evidence"][0].replace(" records", "\n   records")]
    rows[2]["evidence"] = ["nowhere at all"]
    write_jsonl(path, rows)
    return path


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def outside_any_repository(tmp_path, monkeypatch):
    """tmp_path as a newcomer's folder: git finds no repository at or above it (it may not climb past it)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    found = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--git-dir"], capture_output=True,
                           text=True)
    assert found.returncode != 0, found.stdout


def git_repository(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def run_make(study: Path, *targets: str) -> subprocess.CompletedProcess:
    """`make TARGETS STUDY=study` in the harness checkout, run by this test's interpreter; STAMP names an
    existing file, so make does not (re)install the venv."""
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *targets, f"STUDY={study}",
                           f"RUN={sys.executable} -m harness", "STAMP=pyproject.toml", "RESCORE=1"],
                          capture_output=True, text=True)


def report_names_the_tests(study: Path) -> None:
    report = (study / "results" / "report" / "report.md").read_text(encoding="utf-8")
    for test in TESTS:
        assert test in report
    assert (study / "results" / "report" / "index.html").is_file()


# --- end to end ---


@pytest.mark.slow
def test_jsonl_through_init_and_make_all_to_a_report_outside_any_repository(tmp_path, outside_any_repository,
                                                                             git_identity, capsys):
    documents, questions = corpus(tmp_path / "in")
    study = tmp_path / "study"
    assert main(["init", str(study), "--documents", str(documents), "--questions", str(questions)]) == 0
    assert "in the study's own repository (git init)" in capsys.readouterr().out
    proc = run_make(study, "all")
    # a newcomer's run ends in success: make passes run-all's code through, and the audit can verify all
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "NOT VERIFIABLE" not in proc.stdout + proc.stderr
    order = [line.split()[2] for line in proc.stdout.splitlines() if line.startswith("== harness ")]
    assert order == ["select", "freeze", "estimate", "build-arms", "score", "stats", "audit", "report"]
    assert "PASS  (registration)/plan/plan.yaml" in proc.stdout  # the init commit anchors the plan
    report_names_the_tests(study)


@pytest.mark.slow
def test_markdown_folder_through_init_and_run_all_to_a_report_inside_a_repository(tmp_path, git_identity,
                                                                                  capsys):
    corpus(tmp_path / "in")
    questions = markdown_questions(tmp_path / "in", tmp_path / "md_questions.jsonl")
    study = git_repository(tmp_path / "repo") / "study"
    assert (
        main(["init", str(study), "--markdown", str(tmp_path / "in" / "docs"), "--questions", str(questions)])
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "evidence strings: 18 located verbatim, 1 located after collapsing whitespace, 2 not found in any "
        "document; 1 question(s) with none located"
    ) in out
    assert "4 documents, 19 questions in 19 clusters" in out
    assert "questions_dropped_no_located_evidence 1" in out
    assert "registered the plan: git commit" in out and "own repository" not in out
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run-all", "--study", str(study), "--rescore", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    # inside a repository, init committed the study there: the audit anchors the plan on that commit
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "NOT VERIFIABLE" not in proc.stdout + proc.stderr
    assert "PASS  (registration)/plan/plan.yaml" in proc.stdout
    report_names_the_tests(study)


# --- init ---


def test_init_refuses_a_non_empty_folder(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]


def test_init_refuses_invalid_inputs_without_writing_anything(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    rows = questions.read_text().splitlines()
    rows[4] = rows[4].replace('"doc_id": "harbour"', '"doc_id": "lighthouse"')
    questions.write_text("\n".join(rows) + "\n")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) != 0
    err = capsys.readouterr().err
    assert "questions.jsonl" in err and "line 5" in err and "lighthouse" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no study, no staging folder left


def test_init_errors_name_the_users_file_not_its_staging_copy(tmp_path, capsys):
    """The adapter reads the copy in a staging folder that init removes on failure: its path, in the error,
    named a file that no longer exists."""
    documents, questions = corpus(tmp_path / "in")
    rows = documents.read_text().splitlines()
    rows[2] = rows[2].replace('"doc_id": "glacier"', '"doc_id": "gla cier"')
    documents.write_text("\n".join(rows) + "\n")
    assert (
        main(["init", str(tmp_path / "study"), "--documents", str(documents), "--questions", str(questions)])
        == 1
    )
    err = capsys.readouterr().err
    assert f"{documents} (record line 3): doc_id 'gla cier' contains ' '" in err
    assert ".init-" not in err


def test_init_says_when_it_follows_a_symbolic_link_out_of_the_input_folder(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    body = documents.parent / "docs" / "orchard.md"
    body.rename(elsewhere / "orchard.md")
    body.symlink_to(elsewhere / "orchard.md")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    out = capsys.readouterr().out
    assert (f"note: followed a symbolic link out of {documents.parent}: {body} -> {elsewhere / 'orchard.md'} "
            "(copied into the study)") in out
    assert (target / "data" / "docs" / "orchard.md").read_text() == (elsewhere / "orchard.md").read_text()
    assert not (target / "data" / "docs" / "orchard.md").is_symlink()
    assert out.count("note: followed") == 1  # the bodies inside the folder are not named
    (tmp_path / "md").mkdir()
    for topic in ("harbour", "glacier"):
        (tmp_path / "md" / f"{topic}.md").write_text((documents.parent / "docs" / f"{topic}.md").read_text())
    (tmp_path / "md" / "orchard.md").symlink_to(elsewhere / "orchard.md")
    qs = tmp_path / "md-questions.jsonl"
    write_jsonl(qs, [{"question": "Where are the amber records?", "evidence": ["keeps its"]}])
    assert (
        main(["init", str(tmp_path / "study2"), "--markdown", str(tmp_path / "md"), "--questions", str(qs)])
        == 0
    )
    assert (f"note: followed a symbolic link out of {tmp_path / 'md'}: {tmp_path / 'md' / 'orchard.md'} -> "
            f"{elsewhere / 'orchard.md'} (copied into the study)") in capsys.readouterr().out


def test_init_writes_a_valid_llm_free_study_registered_by_a_record_where_git_cannot_commit(tmp_path, capsys,
                                                                                         monkeypatch):
    monkeypatch.setattr("harness.pipeline.new_study.shutil.which", lambda name: None)  # no git installed
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    out = capsys.readouterr().out
    assert "4 documents, 20 questions in 20 clusters" in out
    study = Study.at(target)
    assert list(study.arms) == ["S", "S+T", "F512c", "F256t"] and not study.models
    assert list(study.retrievers) == ["bm25", "minilm", "hybrid"]
    plan = load_study_plan(study)
    assert [(f.id, [t.id for t in f.tests]) for f in plan.families] == [("structure", list(TESTS))]
    assert (
        "#     - {id: H1, a: E, b: S+T" in (target / "plan" / "plan.yaml").read_text()
    )  # the commented family
    assert (target / "data" / "docs" / "harbour.md").read_bytes() == (
        tmp_path / "in" / "docs" / "harbour.md"
    ).read_bytes()
    [entry] = timeline(study)
    assert (entry.time_source, entry.changed_since_registration) == (SOURCE_RECORD, False)
    plan_file = target / "plan" / "plan.yaml"
    plan_file.write_text(plan_file.read_text().replace("alpha: 0.05", "alpha: 0.1"))
    assert timeline(Study.at(target))[0].changed_since_registration is True


def test_init_outside_any_repository_makes_the_study_its_own_and_commits_it(tmp_path, git_identity, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    assert "in the study's own repository (git init)" in capsys.readouterr().out
    assert (target / ".git").is_dir() and not (target / "plan" / "REGISTRATION.json").exists()
    [entry] = timeline(Study.at(target))
    assert entry.time_source == SOURCE_GIT
    status = subprocess.run(
        ["git", "-C", str(target), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""


def test_the_generated_plan_has_no_todo_and_talks_only_of_tests_it_has(tmp_path):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    prose = (target / "plan" / "PLAN.md").read_text()
    assert "TODO" not in prose and "TODO" not in (target / "plan" / "plan.yaml").read_text()
    assert "never equivalence" in prose and "commented example of an equivalence (TOST) family" in prose


def test_freeze_refuses_a_plan_that_still_holds_a_todo_marker(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    prose = target / "plan" / "PLAN.md"
    prose.write_text(prose.read_text().replace("## Question\n", "## Question\n\nTODO: the decision.\n"))
    assert main(["select", "--study", str(target)]) == 0
    capsys.readouterr()
    assert main(["freeze", "--study", str(target)]) == 1
    err = capsys.readouterr().err
    assert "the plan still holds TODO markers" in err and "PLAN.md:" in err and "TODO: the decision." in err
    assert not (target / "frozen_config.json").exists()


def test_no_git_registers_by_the_record_even_inside_a_repository(tmp_path, git_identity, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = git_repository(tmp_path / "repo") / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions),
                 "--no-git"]) == 0
    assert "registered the plan: plan/REGISTRATION.json" in capsys.readouterr().out
    assert (target / "plan" / "REGISTRATION.json").is_file() and not (target / ".git").exists()
    log = subprocess.run(["git", "-C", str(target), "log", "--oneline"], capture_output=True, text=True)
    assert log.stdout == ""  # nothing committed in the enclosing repository


def test_init_in_a_repository_commits_the_study(tmp_path, git_identity, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = git_repository(tmp_path / "repo") / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    assert not (target / "plan" / "REGISTRATION.json").exists()
    [entry] = timeline(Study.at(target))
    assert entry.time_source == SOURCE_GIT
    status = subprocess.run(
        ["git", "-C", str(target), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""


@pytest.mark.parametrize(
    "extra, backend",
    [
        (["--llm", "qwen2.5:7b"], "ollama"),
        (["--llm", "my-model", "--llm-base-url", "http://localhost:8000/v1"], "openai-compatible"),
    ],
)
def test_llm_adds_the_paid_arms_their_prompts_and_the_primary_family(tmp_path, extra, backend):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert (
        main(["init", str(target), "--documents", str(documents), "--questions", str(questions), *extra]) == 0
    )
    study = Study.at(target)
    assert study.models["llm"].backend == backend and study.models["llm"].name == extra[1]
    assert {arm: getattr(study.arms[arm], "model", None) for arm in ("E", "CR")} == {"E": "llm", "CR": "llm"}
    assert sorted(p.name for p in (target / "prompts").iterdir()) == ["contextual.txt", "enrich.txt"]
    plan = load_study_plan(study)
    primary = plan.families[0]
    assert primary.id == "primary" and primary.tier == "confirmatory"
    assert [(t.id, t.a, t.b, t.margin) for t in primary.tests] == [
        ("H1", "E", "S+T", 5),
        ("H2", "E", "CR", 5),
    ]
    assert [f.id for f in plan.families] == ["primary", "structure"]


@pytest.mark.skipif(
    not (SHARED_DATA / "qasper-train10").is_dir(), reason="../shared/data/qasper-train10 is absent"
)
def test_init_from_a_qasper_file(tmp_path, capsys):
    source = SHARED_DATA / "qasper-train10" / "qasper-train10.original-schema.json"
    assert main(["init", str(tmp_path / "study"), "--qasper", str(source)]) == 0
    assert "dataset `qasper` (qasper metrics) with 10 documents" in capsys.readouterr().out
    study = Study.at(tmp_path / "study")
    assert study.config.datasets["qasper"].files == ("data/qasper/qasper-train10.original-schema.json",)
    assert load_study_plan(study).datasets["qasper"].cluster == "paper"


@pytest.mark.skipif(not CHECKOUT.is_dir(), reason="../shared/data/laravel-docs-724c31cc is absent")
def test_init_from_freshstack_domains(tmp_path, capsys):
    (tmp_path / "source").mkdir()
    freshstack_study(tmp_path / "source")  # queries and corpus cut from the Laravel docs checkout
    domain = tmp_path / "fs" / "laravel"
    domain.mkdir(parents=True)
    for name in ("queries.jsonl", "corpus.jsonl"):
        (domain / name).write_bytes((tmp_path / "source" / "data" / name).read_bytes())
    (domain / "checkout").symlink_to(CHECKOUT.resolve())
    target = tmp_path / "study"
    assert (
        main(["init", str(target), "--freshstack", str(tmp_path / "fs"), "--corpus-path-prefix", "docs/"])
        == 0
    )
    out = capsys.readouterr().out
    assert "2 questions in 2 clusters" in out and "questions_dropped_no_located_gold 1" in out
    study = Study.at(target)
    laravel = study.config.datasets["freshstack"].domains["laravel"]
    assert (laravel.queries, laravel.corpus_path_prefix) == ("data/freshstack/laravel/queries.jsonl", "docs/")
    spec = load_study_plan(study).datasets["freshstack"]
    assert (spec.primary_metric, spec.stratified, spec.cluster) == ("prec@1024t", True, "question")


def test_run_all_stops_at_the_first_failing_stage_and_names_it(tmp_path, capsys):
    documents, questions = corpus(tmp_path / "in")
    target = tmp_path / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    (target / "data" / "questions.jsonl").unlink()
    proc = subprocess.run([sys.executable, "-m", "harness", "run-all", "--study", str(target)],
                          cwd=ROOT, capture_output=True, text=True, env=os.environ)
    assert proc.returncode != 0
    assert "stopped at stage select" in proc.stderr and "completed before it: none" in proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith("== ")] == [
        "== harness select (1/8)"
    ]


def test_markdown_questions_naming_their_document_are_clustered_by_it_and_a_mix_is_refused(tmp_path, capsys):
    corpus(tmp_path / "in")
    questions = tmp_path / "named.json"  # the JSON-list form
    rows = [{"question": "Where are the amber records?", "evidence": ["keeps its amber records"],
             "document": "harbour.md", "qid": "amber"},
            {"question": "Where are the cobalt records?", "evidence": ["keeps its cobalt records"],
             "document": "harbour.md", "qid": "cobalt"}]
    questions.write_text(json.dumps(rows))
    target = tmp_path / "study"
    assert (
        main(
            ["init", str(target), "--markdown", str(tmp_path / "in" / "docs"), "--questions", str(questions)]
        )
        == 0
    )
    assert "2 questions in 1 clusters" in capsys.readouterr().out
    converted = [json.loads(line) for line in (target / "data" / "questions.jsonl").read_text().splitlines()]
    assert [(q["qid"], q["scope"], q["cluster"]) for q in converted] == [
        ("amber", {"doc": "harbour.md"}, "doc"), ("cobalt", {"doc": "harbour.md"}, "doc")]
    assert load_study_plan(Study.at(target)).datasets["corpus"].cluster == "document"
    del rows[1]["document"]
    questions.write_text(json.dumps(rows))
    assert main(["init", str(tmp_path / "other"), "--markdown", str(tmp_path / "in" / "docs"),
                 "--questions", str(questions)]) != 0
    err = capsys.readouterr().err
    assert "named.json" in err and "record 1" in err and "`document`" in err
    assert not (tmp_path / "other").exists()


def test_markdown_offsets_index_the_text_the_loader_reads(tmp_path):
    """A byte-order mark and CRLF line endings: the spans written must fit the BOM-less LF text the JSONL
    adapter loads, so the evidence is the very string asked for."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_bytes("\ufeff# Title\r\n\r\nThe answer is forty-two.\r\n".encode())
    write_jsonl(tmp_path / "q.jsonl", [{"question": "What is the answer?", "evidence": ["forty-two"]}])
    assert main(["init", str(tmp_path / "study"), "--markdown", str(tmp_path / "docs"),
                 "--questions", str(tmp_path / "q.jsonl")]) == 0
    [question] = load_dataset(Study.at(tmp_path / "study"), "corpus", selection=None).questions
    assert [e.text for e in question.evidence] == ["forty-two"]
