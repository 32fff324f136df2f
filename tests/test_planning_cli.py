"""`harness estimate` (cost before paying, no LLM call) and `harness power` (clusters a TOST needs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.arms.build import header_led_chunks
from harness.arms.enrich import FIRST_CHUNK, enrich_prompt_values
from harness.arms.keydict import KeyDictionary
from harness.cli.main import main
from harness.data.load import load_dataset, read_selection
from harness.llm.prompts import PromptTemplate
from harness.inference.simulate import SyntheticDataset, long_table
from harness.study import Study
from harness.tokens import cl100k

from pipeline_support import edit_config
from harness.grid.paths import results_dir

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def _demo_copy(root: Path) -> Study:
    for part in ("configs", "data", "prompts", "selection"):
        shutil.copytree(DEMO / part, root / part)
    return Study.at(root)


def _estimate(study: Study, capsys, *extra) -> tuple[int, dict, str]:
    code = main(["estimate", "--study", str(study.root), *extra])
    out = capsys.readouterr()
    return code, json.loads((results_dir(study) / "estimate.json").read_text()), out.out + out.err


def test_estimate_counts_the_real_prompts_without_a_model(tmp_path, capsys, monkeypatch):
    import harness.llm.session as session

    monkeypatch.setattr(session.LlmSession, "call", lambda *a, **k: pytest.fail("estimate called a model"))
    study = _demo_copy(tmp_path)
    code, record, text = _estimate(study, capsys)
    assert code == 0 and "local $0" in text and "within the study-wide spend cap" in text
    arms = {r["arm"]: r for r in record["arms"]}
    assert list(arms) == ["E", "E-K", "CR", "E-para", "CR-rep"]  # the paid arms, papers only, config order
    dataset = load_dataset(study, "papers", selection=read_selection(study))
    headers = header_led_chunks(study, dataset.documents)
    n_chunks = sum(len(headers[d.doc_id]) for d in dataset.documents)
    full = [arms[a] for a in ("E", "E-K", "CR")]
    assert all(r["calls"] == n_chunks and r["output_tokens"] == n_chunks * 384 for r in full)
    # the robustness arms run on one seeded paper; CR-rep's two generation runs are both counted
    sampled = len(headers["papers/lattice-fatigue"])
    assert (arms["E-para"]["calls"], arms["E-para"]["repeats"]) == (sampled, 1)
    assert (arms["CR-rep"]["calls"], arms["CR-rep"]["repeats"]) == (2 * sampled, 2)
    assert arms["CR-rep"]["output_tokens"] == 2 * sampled * 384
    # E-K sends the same prompts with "(not provided)" instead of the growing dictionary
    assert arms["E-K"]["prompt_tokens"] < arms["E"]["prompt_tokens"]
    assert arms["CR"]["prompt_tokens"] > 2 * arms["E"]["prompt_tokens"]  # the whole document per call
    # the first chunk's prompt is counted exactly as the build renders it
    template = PromptTemplate.load(study.prompts_dir, "enrich.txt")
    first = headers[dataset.documents[0].doc_id][0]
    n = len(headers[dataset.documents[0].doc_id])
    rendered = template.render(enrich_prompt_values(first, 0, n, FIRST_CHUNK, KeyDictionary().render()))
    assert len(cl100k().encode(rendered, disallowed_special=())) < arms["E"]["prompt_tokens"] / n_chunks * 2
    assert arms["E"]["summary_allowance_tokens"] == (n_chunks - len(dataset.documents)) * 60


def _billed(study: Study, cap: float, prices: dict) -> None:
    """A hosted (not loopback, so billed) OpenAI-compatible model with these prices."""
    edit_config(
        study.root,
        lambda cfg: (
            cfg.__setitem__(
                "models",
                {
                    "embedded": {
                        "backend": "openai-compatible",
                        "name": "some/model",
                        "base_url": "https://api.example.invalid/v1",
                        "max_tokens": 200,
                        **prices,
                    }
                },
            ),
            cfg["llm"].__setitem__("spend_cap_usd", cap),
            cfg["retrievers"].pop("rerank", None),
        ),
    )


def test_estimate_prices_billed_arms_and_checks_the_cap(tmp_path, capsys):
    study = _demo_copy(tmp_path)
    _billed(study, 1000.0, {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0})
    code, record, _ = _estimate(study, capsys, "--output-tokens", "100")
    assert code == 0 and record["within_cap"] is True
    for r in record["arms"]:
        assert r["output_tokens"] == 100 * r["calls"]
        assert r["usd"] == pytest.approx((r["input_tokens"] * 3.0 + r["output_tokens"] * 15.0) / 1e6)
    assert record["total_usd"] == pytest.approx(sum(r["usd"] for r in record["arms"]))
    _billed(study, record["total_usd"] / 2, {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0})
    code, record, text = _estimate(study, capsys, "--output-tokens", "100")
    assert code == 1 and record["within_cap"] is False and "exceeds the study-wide spend cap" in text


def test_estimate_refuses_a_billed_model_without_prices(tmp_path, capsys):
    study = _demo_copy(tmp_path)
    _billed(study, 5.0, {})
    code, record, text = _estimate(study, capsys)
    assert code == 1 and record["unpriced_arms"] == ["papers/E", "papers/E-K", "papers/CR", "papers/E-para",
                                                      "papers/CR-rep", "papers-pooled/E"]
    assert "without price_in_per_mtok" in text


def test_power_prints_the_cluster_count_from_a_pilot(tmp_path, capsys):
    table = long_table(
        np.random.default_rng(5),
        [SyntheticDataset("papers", 25, 3.0)],
        {"E": 0.0, "S+T": 0.0},
        ["hybrid"],
        {"papers": ["rec@512t"]},
        noise=0.2,
    )
    pilot = tmp_path / "pilot.csv"
    table.to_csv(pilot, index=False)
    args = ["power", "--pilot", str(pilot), "--dataset", "papers", "--a", "E", "--b", "S+T", "--retriever",
            "hybrid", "--metric", "rec@512t", "--simulations", "300", "--seed", "1"]
    assert main(args + ["--margin", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pilot_clusters"] == 25 and out["n_clusters"] is not None
    assert out["n_clusters"] == next(p["n_clusters"] for p in out["curve"] if p["power"] >= 0.8)
    assert main(args + ["--margin", "10"]) == 0
    assert json.loads(capsys.readouterr().out)["n_clusters"] < out["n_clusters"]
    assert main(args + ["--margin", "-1"]) != 0
    assert "margin" in capsys.readouterr().err
