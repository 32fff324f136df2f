import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli.main import build_parser, main
from harness.stats.families import FamilyResult, run_plan
from harness.inference.holm import holm
from harness.plan.load import load_plan
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.tables import to_csv, to_latex, to_markdown
from harness.study import Study
from harness.provenance.freeze import frozen_hash
from provenance_support import published_hashes, record_as_written
from harness.grid.paths import results_dir, stats_dir

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
ARMS = {"S": 0.0, "S+T": 0.01, "E": 0.01, "E-K": 0.0, "CR": 0.02, "F512c": -0.12, "F256t": -0.10,
        "P": 0.0, "FL": -0.02,
        **{f"E-{w}-{f}": 0.0 for w in ("no", "only") for f in ("title", "summary", "keywords", "questions")}}
# amendment 0002's arms (papers only, as in the demo), drawn in a second pass from the same seed: papers comes
# first, so its questions and their bases are the same, and the draws of the arms above stay as they were
ADDON_ARMS = {"M": 0.01, "RM": 0.0, "SM": 0.0, "M-TP": 0.01, "E+KX": 0.02, "E+AX": 0.01}
# the robustness runs of E (papers only), drawn in a third pass the same way
ROBUST_ARMS = {"E-para": 0.0, "CR-rep": 0.01}


def _table(arms=ARMS):
    # papers-pooled last, so the draws of papers and docs stay as they were before it was added
    datasets = [
        SyntheticDataset("papers", 30, 3.0),
        SyntheticDataset("docs", 45, 1.0, ("ledger", "tern", "skiff")),
        SyntheticDataset("papers-pooled", 30, 3.0),
    ]
    metrics = {"papers": ["rec@512t", "answer_f1@512t"], "docs": ["prec@1024t", "nugget_recall@1024t"],
               "papers-pooled": ["rec@512t"]}
    base = long_table(np.random.default_rng(2027), datasets, arms, ["hybrid", "minilm", "bm25"], metrics)
    addon = long_table(np.random.default_rng(2027), datasets[:1], ADDON_ARMS, ["hybrid"], metrics)
    robust = long_table(np.random.default_rng(2027), datasets[:1], ROBUST_ARMS, ["hybrid"], metrics)
    return pd.concat([base, addon, robust], ignore_index=True)


@pytest.fixture(scope="module")
def demo_plan():
    return load_plan(DEMO / "plan" / "plan.yaml", DEMO / "amendments")


@pytest.fixture(scope="module")
def results(demo_plan):
    return [r.to_json() for r in run_plan(demo_plan, _table())]


def test_every_demo_family_runs_with_holm_and_verdicts(demo_plan, results):
    assert [r["family"] for r in results] == [
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
    assert all(r["status"] == "ran" for r in results)
    answers = results[5]
    # no judge or reader rates on file: both answer-level rows are exploratory, with their controls shown
    assert [(row["test"], row["tier"]) for row in answers["rows"]] == [("A1-papers", "exploratory"),
                                                                      ("N1-docs", "exploratory")]
    assert answers["rows"][1]["acceptance"]["passed"] is False
    assert [row["reader_acceptance"]["passed"] for row in answers["rows"]] == [False, False]
    primary = results[0]
    assert [row["test"] for row in primary["rows"]] == ["H1-papers", "H2-papers"]
    p = [row["p_tost"] for row in primary["rows"]]
    assert [row["p_tost_holm"] for row in primary["rows"]] == pytest.approx(list(holm(p)))
    h3 = results[1]
    assert all(row["verdict"] == "diff." for row in h3["rows"])  # F512c/F256t are 10-12 points worse
    assert all(row["estimate"] > 5 for row in h3["rows"])
    assert [row["p_signflip_holm"] for row in h3["rows"]] == pytest.approx(
        list(holm([r["p_signflip"] for r in h3["rows"]]))
    )
    for row in primary["rows"]:
        inside = -row["margin"] < row["ci90_bca"][0] and row["ci90_bca"][1] < row["margin"]
        assert (row["verdict"] == "equiv.") <= inside  # Holm can only make equivalence harder
    explo = results[3]
    assert all(row["p_signflip_holm"] is None and row["tier"] == "exploratory" for row in explo["rows"])
    seeds = {row["seed"] for r in results for row in r["rows"]}
    assert len(seeds) == sum(len(r["rows"]) for r in results)  # one derived seed per test


def test_rerun_is_bit_identical(demo_plan, results):
    again = [r.to_json() for r in run_plan(demo_plan, _table(), only=["primary", "H4"])]
    assert json.dumps(again) == json.dumps([results[0], results[6]])


def test_family_with_a_missing_arm_is_not_run(demo_plan):
    arms = {k: v for k, v in ARMS.items() if k != "E-K"}
    result = run_plan(demo_plan, _table(arms), only=["H4"])[0]
    out = result.to_json()
    assert out["status"] == "not run" and out["rows"] == []
    assert out["missing"] == ["arm E-K on papers under hybrid (rec@512t)"]
    assert "**Not run.**" in to_markdown(result) and "arm E-K on papers" in to_markdown(result)


def test_tables_are_generated_from_the_json(results):
    fam = FamilyResult.from_json(json.loads(json.dumps(results[0])), "primary.json")
    assert fam.to_json() == results[0]  # read back from a released file, it writes the same JSON
    md = to_markdown(fam)
    assert md.count("\n| H") == 2 and "Holm over 2" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(fam))))
    assert [float(r["estimate"]) for r in rows] == [row.contrast.estimate for row in fam.rows]
    assert [float(r["ci90_bca_hi"]) for r in rows] == [row.contrast.ci90_bca[1] for row in fam.rows]
    tex = to_latex(fam)
    assert "S+T" in tex and "rec@512t" in tex and "\\toprule" in tex and " 90\\% " in tex
    assert "_" not in tex.replace("\\_", "")  # every underscore escaped (key\_secondary style ids)


DEVIATION = ["--deviation", "synthetic results: no cell of this test study was scored"]


def _make_study(tmp_path, table):
    for part in ("configs", "plan", "amendments", "data", "prompts"):
        shutil.copytree(DEMO / part, tmp_path / part)
    assert main(["select", "--study", str(tmp_path)]) == 0
    assert main(["freeze", "--study", str(tmp_path)]) == 0
    study = Study.at(tmp_path)
    folder = tmp_path / "results" / "per_question"
    folder.mkdir(parents=True)
    table[table.dataset == "papers"].to_parquet(folder / "papers.parquet")
    table[table.dataset == "docs"].to_csv(folder / "docs.csv", index=False)
    for name in ("papers", "docs"):
        (folder / f"{name}.manifest.json").write_text(json.dumps({"frozen_config_hash": frozen_hash(study)}))
    record_as_written(study)  # as score records what it writes
    return study


@pytest.mark.slow
def test_stats_then_audit_pass_and_a_tampered_row_fails(tmp_path, capsys, results):
    study = _make_study(tmp_path, _table())
    assert main(["stats", "--study", str(study.root), "--threads", "1"] + DEVIATION) == 0
    assert "synthetic results" in (study.root / "DEVIATIONS.md").read_text()
    for fam in ("primary", "H3", "key_secondary", "exploratory", "answers", "H4"):
        for suffix in (".json", ".md", ".csv", ".tex", ".png"):
            assert (stats_dir(study) / f"{fam}{suffix}").is_file()
    assert (stats_dir(study) / "H4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    released = json.loads((stats_dir(study) / "primary.json").read_text())
    assert released.pop("frozen_config_hash") == frozen_hash(study)
    assert released.pop("deviation") == DEVIATION[1]
    assert released == json.loads(json.dumps(results[0]))  # csv and parquet inputs give the same numbers
    assert "| [H4](H4.md) | secondary | amendment 0001 |" in (stats_dir(study) / "summary.md").read_text()
    png = (stats_dir(study) / "H3.png").read_bytes()
    assert main(["stats", "--study", str(study.root)] + DEVIATION) == 0
    assert (stats_dir(study) / "H3.png").read_bytes() == png
    capsys.readouterr()

    # outside git: the registration and the release are not verifiable
    assert main(["audit", "--study", str(study.root)]) == 3
    assert capsys.readouterr().out.rstrip().endswith("audit: 51 PASS, 0 FAIL, 2 NOT VERIFIABLE (not a pass)")
    # the audit recomputes every family in threads: the same numbers as one thread released
    assert (
        main(["audit", "--study", str(study.root), *published_hashes(study), "--threads", "3"])
        == 0
    )
    out = capsys.readouterr().out
    assert "PASS  primary/H1-papers" in out and "audit: 53 PASS, 0 FAIL" in out  # with the release hash
    grid = [line for line in out.splitlines() if "(grid)" in line]
    assert "PASS  (grid)/cells: 85 cell(s) not scored" in out and "released as a logged deviation" in out, (
        grid
    )

    released["rows"][1]["estimate"] += 0.01
    (stats_dir(study) / "primary.json").write_text(json.dumps(released))
    (stats_dir(study) / "stray.json").write_text("{}")
    assert main(["audit", "--study", str(study.root), "--registered-hash", frozen_hash(study)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  primary/H2-papers: differs in estimate" in out
    assert "FAIL  (results)/results/stats/primary.json: edited after it was written" in out
    assert "FAIL  stray/(family): stray.json is not a family of the plan" in out


def test_compare_prints_one_json_contrast(tmp_path, capsys):
    path = tmp_path / "pq.parquet"
    _table().to_parquet(path)
    args = ["compare", "--results", str(path), "--dataset", "docs", "--a", "E", "--b", "S+T", "--retriever",
            "hybrid", "--metric", "prec@1024t", "--margin", "4", "--resamples", "2000", "--seed", "3"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["a"], out["b"], out["margin"], out["resamples"], out["seed"], out["n_clusters"]) == (
        "E",
        "S+T",
        4.0,
        2000,
        3,
        45,
    )
    assert out["ci95_bca"][0] < out["estimate"] < out["ci95_bca"][1] and 0 <= out["p_tost"] <= 1
    assert main(args[:-2] + ["--seed", "-1"]) == 1
    assert "`seed` must be a non-negative integer" in capsys.readouterr().err
    assert main(args[:6] + ["Q"] + args[7:]) == 1
    assert "no per-question results for arm Q on docs" in capsys.readouterr().err


def test_help_texts_describe_the_commands():
    sub = build_parser()._subparsers._group_actions[0].choices
    assert "BCa" in sub["stats"].format_help() and "results/stats/<family>.json" in sub["stats"].format_help()
    assert "--margin" in sub["compare"].format_help() and "A - B" in sub["compare"].format_help()
    assert "PASS/FAIL" in sub["audit"].format_help()


def test_stats_withholds_outcomes_until_every_cell_is_scored(tmp_path, capsys):
    study = _make_study(tmp_path, _table())
    assert main(["stats", "--study", str(study.root)]) == 1
    err = capsys.readouterr().err
    assert "withheld until every configured cell is scored" in err and "papers/S/bm25" in err
    assert not stats_dir(study).exists()
    table_file = str(results_dir(study) / "per_question" / "papers.parquet")
    args = ["compare", "--results", table_file, "--dataset", "papers", "--a", "E", "--b", "S+T",
            "--retriever", "hybrid", "--metric", "rec@512t", "--resamples", "200"]
    assert main(args) == 1
    assert "withheld" in capsys.readouterr().err


def test_stats_refuses_results_from_two_freezes(tmp_path, capsys):
    study = _make_study(tmp_path, _table())
    (results_dir(study) / "per_question" / "docs.manifest.json").write_text(
        json.dumps({"frozen_config_hash": "ab" * 32})
    )
    record_as_written(study)
    assert main(["stats", "--study", str(study.root)] + DEVIATION) == 1
    assert "2 different frozen configurations" in capsys.readouterr().err


def test_audit_fails_when_the_plan_changed_after_freezing(tmp_path, capsys):
    study = _make_study(tmp_path, _table())
    assert main(["stats", "--study", str(study.root)] + DEVIATION) == 0
    capsys.readouterr()
    plan = study.root / "plan" / "PLAN.md"
    plan.write_text(plan.read_text() + "\nA sentence added after freezing.\n")
    assert main(["audit", "--study", str(study.root)]) == 2  # drift, refused as build-arms refuses it
    err = capsys.readouterr().err
    assert "audit: refusing to run" in err and 'input_files["plan/PLAN.md"]' in err


def test_load_per_question_refuses_a_result_repeated_across_files(tmp_path):
    from types import SimpleNamespace

    from harness.errors import InputError
    from harness.stats.io import load_per_question

    folder = tmp_path / "results" / "per_question"
    folder.mkdir(parents=True)
    text = "dataset,arm,retriever,qid,cluster,stratum,metric,value\nd,S,r,1,1,,m,0.5\n"
    (folder / "a.csv").write_text(text)
    (folder / "b.csv").write_text(text)
    with pytest.raises(InputError, match=r"per_question: concatenated row 1: repeated result for "
                                         r"dataset 'd', .* \(first at concatenated row 0\)"):
        load_per_question(SimpleNamespace(root=tmp_path, results_root=None))


def test_compare_and_power_read_a_study_by_its_folder_and_keep_the_result_under_quiet(tmp_path, capsys):
    study = _make_study(tmp_path, _table())
    capsys.readouterr()  # select's and freeze's lines
    table_file = str(results_dir(study) / "per_question" / "papers.parquet")
    contrast = [
        "--dataset",
        "papers",
        "--a",
        "E",
        "--b",
        "S+T",
        "--retriever",
        "hybrid",
        "--metric",
        "rec@512t",
        "--resamples",
        "300",
        *DEVIATION,
    ]
    assert main(["compare", "--results", table_file, *contrast]) == 0
    by_file = json.loads(capsys.readouterr().out)
    assert main(["compare", "--study", str(study.root), *contrast, "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out) == by_file  # the same table, and --quiet keeps the result
    assert main(["compare", "--study", str(study.root), *contrast[:1], "nowhere", *contrast[2:]]) == 1
    assert "no per-question table for dataset 'nowhere'" in capsys.readouterr().err
    sizing = [
        "--study",
        str(study.root),
        "--dataset",
        "papers",
        "--a",
        "E",
        "--b",
        "S+T",
        "--retriever",
        "hybrid",
        "--metric",
        "rec@512t",
        "--margin",
        "5",
        "--simulations",
        "50",
        "--sizes",
        "10",
        "20",
        *DEVIATION,
    ]
    assert main(["power", *sizing]) == 0
    loud = capsys.readouterr()
    assert json.loads(loud.out)["pilot"] == table_file and "needs" in loud.err
    assert main(["power", *sizing, "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert json.loads(quiet.out) == json.loads(loud.out) and quiet.err == ""
