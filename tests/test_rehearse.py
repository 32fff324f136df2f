"""`harness rehearse`: every stage of a study run on its simulated twin, blocked tests found, nothing of the
study touched."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli.main import main
from harness.cli.rehearse import parse_effects
from harness.errors import HarnessError
from harness.files import read_json
from harness.plan.load import load_study_plan
from harness.rehearsal.rehearse import RehearsalSettings, rehearse
from harness.rehearsal.stages import STAGES
from harness.rehearsal.twin import make_twin, simulated_model, simulated_retriever
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
INPUTS = ("configs", "plan", "amendments", "prompts", "selection", "data")


def _rehearse(study: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(
        ["rehearse", "--study", str(study), "--out", str(out), "--scale", "small", "--no-progress", *extra]
    )
    return code, read_json(out / "rehearsal" / "rehearsal.json")


def _copy_study(source: Path, dest: Path) -> Path:
    dest.mkdir()
    for folder in INPUTS:
        if (source / folder).is_dir():
            shutil.copytree(source / folder, dest / folder)
    return dest


@pytest.fixture
def demo_twin(built_once):
    """The demo rehearsed once per test run, whatever the worker (read-only: a test that writes copies it)."""

    def build(root: Path) -> None:
        code, _ = _rehearse(DEMO, root / "demo")
        (root / "exit_code").write_text(str(code), encoding="utf-8")

    root = built_once("demo-rehearsal", build)
    out = root / "demo"
    return out, int((root / "exit_code").read_text(encoding="utf-8")), read_json(
        out / "rehearsal" / "rehearsal.json"
    )


@pytest.mark.slow
def test_demo_rehearsal_runs_every_stage_and_every_test_gets_a_verdict(demo_twin):
    out, code, record = demo_twin
    assert code == 0
    assert [s["stage"] for s in record["stages"]] == list(STAGES)
    last = record["stages"][-1]["counts"]
    assert last["chunk sets"] > 0 and last["cells"] > 0 and last["rows"] > 0 and last["LLM calls"] > 0
    assert record["tests"] and all(t["verdict"] for t in record["tests"])
    plan = yaml.safe_load((DEMO / "plan" / "plan.yaml").read_text())
    assert {t["test"] for t in record["tests"]} >= {t["id"] for f in plan["families"] for t in f["tests"]}
    assert all(s["peak_mib"] > 0 and s["wall_s"] >= 0 for s in record["stages"])
    # the time waited on stand-in models is measured where calls are made, and is part of the stage's time
    build = next(s for s in record["stages"] if s["stage"] == "build-arms")
    assert 0 < build["waiting_s"]["model"] <= build["waiting_s"]["either"] <= build["wall_s"]
    assert 0 <= build["own_share"] < 1
    select = next(s for s in record["stages"] if s["stage"] == "select")
    assert select["waiting_s"]["either"] == 0 and select["own_share"] == 1


@pytest.mark.slow
def test_flagship_rehearsal_at_small_scale_runs_every_stage_and_every_test_has_a_verdict(tmp_path):
    """The repository root's registered study on stand-ins: every stage runs, every family is reported, and
    every registered test gets a verdict (none blocked), so the rehearsal exits 0."""
    code, record = _rehearse(ROOT, tmp_path / "flagship")
    assert "failed" not in record, record.get("failed")
    assert [s["stage"] for s in record["stages"]] == list(STAGES)
    plan = load_study_plan(Study.at(ROOT))
    assert {t["test"] for t in record["tests"]} == {t.id for f in plan.families for t in f.tests}
    blocked = {t["test"]: t["reason"] for t in record["tests"] if not t["verdict"]}
    assert blocked == {}
    assert code == 0


@pytest.mark.slow
def test_rehearsal_touches_nothing_of_the_study(demo_twin):
    out, _, _ = demo_twin
    twin_config = yaml.safe_load((out / "configs" / "study.yaml").read_text())
    assert {m["backend"] for m in twin_config["models"].values()} == {"simulated"}
    assert all(r.get("backend") in (None, "simulated") for r in twin_config["retrievers"].values())
    # the study's own selection and freeze are untouched: the twin drew and froze its own
    assert (out / "selection" / "selection.json").is_file() and (out / "frozen_config.json").is_file()
    assert read_json(DEMO / "frozen_config.json") != read_json(out / "frozen_config.json")


def _same_results(first: Path, second: Path) -> None:
    """Chunk sets, runs and each cell's per-question rows byte-identical (the assembled per-dataset tables
    also hold answer rows when one rehearsal went past `score`)."""
    for folder in ("chunks", "runs", "per_question"):
        a, b = first / "results" / folder, second / "results" / folder
        names = sorted(str(p.relative_to(a)) for p in a.glob("*/*")
                       if p.is_file() and p.suffix in (".jsonl", ".run", ".parquet", ".csv"))
        assert names
        _, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        assert not mismatch and not errors


@pytest.mark.slow
def test_stand_in_answers_are_the_same_bytes_on_a_second_rehearsal(demo_twin, tmp_path):
    code, _ = _rehearse(DEMO, tmp_path / "again", "--until", "score")
    assert code == 0
    _same_results(demo_twin[0], tmp_path / "again")


@pytest.mark.slow
def test_the_ray_executor_writes_the_same_bytes(demo_twin, tmp_path):
    pytest.importorskip("ray")
    code, record = _rehearse(DEMO, tmp_path / "ray", "--until", "score", "--executor", "ray")
    assert code == 0 and record["executor"] == "ray"
    _same_results(demo_twin[0], tmp_path / "ray")


@pytest.mark.slow
def test_a_test_no_configured_cell_can_produce_is_reported_blocked(tmp_path):
    study = _copy_study(DEMO, tmp_path / "study")
    plan = study / "plan" / "plan.yaml"
    text = plan.read_text()
    line = next(row for row in text.splitlines() if "id: A1-papers" in row)
    plan.write_text(text.replace(line, line.replace("retriever: hybrid", "retriever: minilm")))
    code, record = _rehearse(study, tmp_path / "twin")
    assert code == 1
    assert record["failed"]["stage"] == "freeze"
    assert "A1-papers" in record["failed"]["reason"]
    assert "BLOCKED" in (tmp_path / "twin" / "rehearsal" / "rehearsal.md").read_text()


def test_the_rehearsal_is_a_library_call_returning_a_typed_record_the_cli_prints(tmp_path, capsys):
    """harness.rehearsal.rehearse does the work; the command only prints the record and picks the exit code
    (a quiet run still says what blocked)."""
    study = _copy_study(DEMO, tmp_path / "study")
    plan = study / "plan" / "plan.yaml"
    line = next(row for row in plan.read_text().splitlines() if "id: A1-papers" in row)
    plan.write_text(plan.read_text().replace(line, line.replace("retriever: hybrid", "retriever: minilm")))
    result = rehearse(Study.at(study), tmp_path / "twin", RehearsalSettings(until="freeze"))
    blocked = "BLOCKED: stage freeze failed on the twin"
    assert result.blocked is not None and result.blocked.startswith(blocked)
    assert "A1-papers" in result.blocked and result.text[-1] == result.blocked
    assert result.written == result.twin / "rehearsal" / "rehearsal.md"
    assert result.written.read_text(encoding="utf-8") == "\n".join(result.text) + "\n"
    capsys.readouterr()
    code = main(["rehearse", "--study", str(study), "--out", str(tmp_path / "twin"), "--until", "freeze",
                 "--quiet"])
    assert code == 1 and capsys.readouterr().err.strip().startswith(blocked)
    with pytest.raises(HarnessError, match="--replicates needs the stats stage; --until score stops"):
        RehearsalSettings(until="score", replicates=2)


def test_models_become_simulated_keeping_what_moves_estimates():
    entry = {"backend": "ollama", "name": "qwen2.5:7b", "temperature": 0, "seed": 3, "num_ctx": 16384,
             "num_predict": 1000, "host": "http://gpu:11434"}
    assert simulated_model(entry, malformed_rate=0.05) == {
        "backend": "simulated", "name": "qwen2.5:7b", "seed": 3, "temperature": 0, "max_tokens": 1000,
        "context_tokens": 16384, "malformed_rate": 0.05}
    priced = {"backend": "openai-compatible", "name": "x", "base_url": "u", "max_tokens": 50,
              "price_in_per_mtok": 0.1, "price_out_per_mtok": 0.5}
    assert simulated_model(priced, malformed_rate=0)["price_out_per_mtok"] == 0.5
    assert (
        simulated_model({"backend": "llama.cpp", "package": "gemma3-gguf"}, malformed_rate=0)["name"]
        == "gemma3-gguf"
    )


def test_encoders_and_rerankers_become_stand_ins_unless_kept():
    dense = {"type": "dense", "backend": "ollama", "model": "nomic-embed-text", "host": "h", "arms": ["S"]}
    assert simulated_retriever(dense, real_encoders=False) == {
        "type": "dense", "arms": ["S"], "model": "nomic-embed-text", "backend": "simulated"}
    assert simulated_retriever(dense, real_encoders=True) == dense
    llm_yes = {"type": "rerank", "first_stage": "bm25", "backend": "llm-yes", "model": "embedded"}
    assert simulated_retriever(llm_yes, real_encoders=True)["backend"] == "simulated"
    assert simulated_retriever({"type": "bm25", "k1": 1.2}, real_encoders=False) == {
        "type": "bm25",
        "k1": 1.2,
    }


def test_the_twin_is_never_written_inside_the_study(tmp_path):
    study = _copy_study(DEMO, tmp_path / "study")
    with pytest.raises(HarnessError, match="inside the study"):
        make_twin(Study.at(study), study / "rehearsal", scale="small", seed=0)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(HarnessError, match="not empty"):
        make_twin(Study.at(study), tmp_path / "busy", scale="small", seed=0)


def test_a_twin_made_with_other_settings_is_not_reused(tmp_path):
    study = Study.at(_copy_study(DEMO, tmp_path / "study"))
    make_twin(study, tmp_path / "twin", scale="small", seed=0)
    assert make_twin(study, tmp_path / "twin", scale="small", seed=0).root == (tmp_path / "twin").resolve()
    with pytest.raises(HarnessError, match="other settings"):
        make_twin(study, tmp_path / "twin", scale="small", seed=1)


def test_effects_are_parsed_strictly():
    assert parse_effects(["H1=2.5", "H2=-1"]) == {"H1": 2.5, "H2": -1.0}
    for bad in (["H1"], ["=2"], ["H1=two"]):
        with pytest.raises(HarnessError, match="TEST=POINTS"):
            parse_effects(bad)
    with pytest.raises(HarnessError, match="twice"):
        parse_effects(["H1=1", "H1=2"])


def test_an_undecided_test_on_the_twin_is_named_with_its_reason():
    """A test that ran but that no rule could decide (no variation from the stand-ins) is not blocked, but the
    rehearsal names it: it did not exercise that test's decision."""
    from harness.rehearsal.summary import headline, outcome_table, outcomes

    families = [_family("f", {"decided": ("n.d.", None),
                              "flat": ("no variation", "every paired difference is +0.00 points")})]
    results = outcomes(families, {"f": ["decided", "flat"]})
    assert [(o.verdict, o.reason) for o in results] == [
        ("n.d.", ""), ("no variation", "every paired difference is +0.00 points")]
    assert "| f | flat | no variation: every paired difference is +0.00 points |" in outcome_table(results)
    line = headline(results)
    assert line.startswith("every registered test ran on the twin (2 tests in 1 families); 1 ran but no rule "
                           "could decide them on the twin (flat)")


def _family(name: str, verdicts: dict[str, tuple[str, str | None]]):
    """A family that ran, whose rows carry only what the rehearsal's summary reads: verdict and reason."""
    from harness.stats.decided import DecidedRow
    from harness.stats.families import FamilyResult, Status

    rows = tuple(DecidedRow(test=test, rule="two-sided", dataset="d", a="A", b="B", retriever="r", metric="m",
                            margin=None, tier="confirmatory", source="plan", verdict=verdict,
                            verdict_reason=reason)
                 for test, (verdict, reason) in verdicts.items())
    return FamilyResult(family=name, description="", tier="confirmatory", multiplicity="holm",
                        rule="two-sided", signflip_required=False, alpha=0.05, seed=1, resamples=10,
                        max_flips=10, source="plan", n_tests=len(rows), study="s", harness_version="0",
                        status=Status.RAN, missing=(), rows=rows)
